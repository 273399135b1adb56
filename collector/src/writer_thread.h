// The one thread that touches SQLite. CUPTI's threads hand it completed buffers (submit never
// waits for the writer); it translates them, writes the rows, and every commit interval (100 ms
// by default) asks CUPTI for finished buffers and commits: a killed process loses at most about
// two intervals of activity.
#pragma once

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "buffer_pool.h"
#include "trace_writer.h"

namespace cuoverlap::collector {

class WriterThread {
 public:
  WriterThread(std::unique_ptr<TraceWriter> writer, BufferPool& pool,
               std::chrono::milliseconds commit_interval);
  WriterThread(const WriterThread&) = delete;
  WriterThread& operator=(const WriterThread&) = delete;

  // Called on the writer thread every commit interval, outside any lock: asks CUPTI for the buffers
  // that hold only finished records, so that they are committed while the program runs.
  void setPeriodicFlush(std::function<void()> flush) { periodic_flush_ = std::move(flush); }
  void start();
  void submit(std::uint8_t* buffer, std::size_t valid_size);
  // GPU metrics from the PM sampling thread, written in the order submitted. Dropped once the
  // file is closed.
  void submitGpuMetrics(GpuMetricBatch batch);
  // The driver callbacks' op buffer rows (cupti/op_buffers.h), likewise.
  void submitOpBuffers(std::vector<OpBufferRow> rows);
  // Written into the session table at the next commit; callable from any thread.
  void setSessionValue(const std::string& key, const std::string& value);
  // Writes what was submitted, closes the file and returns true, or returns false once `timeout`
  // has passed (the thread then finishes on its own if the process lives on). A file that holds
  // no API call, GPU activity or NVTX event is removed: a process that touched the driver but
  // did nothing traced leaves no file.
  bool stop(std::chrono::milliseconds timeout);
  // After stop() returned true: whether the file was written to the end, closed and kept (no
  // write failed, not removed as empty). Only such a file is summarized at exit.
  bool closedCompleteFile();
  // Keeps the file at stop() even without activity: a capture window that never opened says so.
  void keepEmptyFile() { keep_empty_ = true; }

 private:
  struct Completed {
    std::uint8_t* buffer;
    std::size_t valid_size;
  };

  void run();
  void writeBuffers(const std::vector<Completed>& buffers);
  void writeGpuMetrics(const std::vector<GpuMetricBatch>& batches);
  void writeOpBuffers(const std::vector<std::vector<OpBufferRow>>& batches);
  template <typename Batch, typename Write>
  void writeEach(const std::vector<Batch>& batches, Write write);
  void finish();

  std::unique_ptr<TraceWriter> writer_;
  BufferPool& pool_;
  std::mutex mutex_;
  std::condition_variable wake_, done_cv_;
  std::vector<Completed> queue_;
  std::vector<GpuMetricBatch> metrics_;
  std::vector<std::vector<OpBufferRow>> op_buffers_;
  std::map<std::string, std::string> session_values_;
  std::function<void()> periodic_flush_;
  const std::chrono::milliseconds commit_interval_;
  bool stopping_ = false, done_ = false, failed_ = false, closed_complete_ = false;
  std::atomic<bool> keep_empty_{false};
  std::uint64_t busy_ns_ = 0;
};

}  // namespace cuoverlap::collector
