// The CUPTI adapter's live half: subscribes, enables the activity kinds, serves and collects
// activity buffers, flushes, and answers version and device questions. No cupti.h here.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "buffer_pool.h"
#include "capture_window.h"
#include "collector_options.h"
#include "rows.h"
#include "writer_thread.h"

namespace cuoverlap::collector::activity {

// Checks the CUPTI version and subscribes. Returns "" or why tracing cannot run (e.g. another
// CUPTI subscriber, such as nsys or a framework profiler, is attached).
std::string subscribe();
// Sets device buffer size and pool limit and per-thread buffers: must run before the first
// context is created and before enable().
void configureBuffers(const CollectorOptions& options);
// Undoes subscribe() when the trace file cannot be created.
void unsubscribe();
// Routes buffers between `pool` and `writer`, enables every kind and the chosen API calls
// (api_selection.h). Returns "" or the failure. Also returns the number of runtime and driver
// calls enabled one by one (lean mode) through `lean_calls`.
std::string enable(BufferPool& pool, WriterThread& writer, const CollectorOptions& options,
                   std::size_t& lean_calls);
// Starts or stops recording GPU activity and API calls (device, context, stream and NVTX marker
// records are always on). Called by enable() without a capture window, else by the window.
void setRecording(bool on);
// Feeds `window` from CUPTI's callbacks (capture_triggers.cpp); call after enable().
void attachCaptureWindow(CaptureWindow& window);
// Switches recording as the window said (kNone: nothing).
void applyWindowChange(WindowChange change);
// Hands NVTX's export table to CUPTI (MARKER / MARKER_DATA records).
bool initializeNvtx(const void* get_export_table);
// Whether `marker_id` was returned by nvtxRangeStart* (asked once per range, then forgotten).
bool isStartEndRange(std::uint32_t marker_id);
// Forced: also buffers with records still in progress (end of session only).
void flush(bool forced);
// Hands the op buffer rows still held to the writer (cupti/op_buffers.h; end of session).
void flushOpBuffers();
// After fork(): the child must not hand buffers to the parent's writer (it has no writer thread).
void detachInForkedChild();

// Waits (at most `timeout`, on a helper thread) for the calling thread's current context to
// finish its GPU work, so that a forced flush finds the kernels ended. Returns whether it did.
bool synchronizeCurrentContext(std::chrono::milliseconds timeout);

std::uint64_t timestampNs();
std::uint64_t droppedRecords();
std::uint64_t completedBuffers();
std::uint64_t callbackNs();  // time spent in our buffer callbacks on CUPTI's and the app's threads
std::string cuptiVersion();
std::string driverVersion();
// Fills what CUPTI's device record lacks: asyncEngineCount and concurrent-kernel support.
void queryDevice(DeviceRow& row);

}  // namespace cuoverlap::collector::activity
