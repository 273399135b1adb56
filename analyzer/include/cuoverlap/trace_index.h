// Lookups over a Trace that would otherwise scan the whole trace once per device or per op (a
// trace with 64k devices or contexts made those scans quadratic). Each index is built on first
// use in one pass, cached in Trace::index_cache, and rebuilt when the vector it describes was
// reallocated or resized (hand-built traces in tests change them between calls).
#pragma once

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuoverlap/model.h"

namespace cuoverlap {

// Indices into Trace::ops of the ops on one device, in the order of Trace::ops (4 bytes per op).
// UserError beyond 2^32 ops.
const std::vector<std::uint32_t>& opsOnDevice(const Trace& trace, std::uint16_t device_id);

// The ids of the devices that have ops, ascending.
std::vector<std::uint16_t> devicesWithOps(const Trace& trace);

// The start of the trace's first GPU op (start > 0, any device), 0 without ops: found by the pass
// that builds opsOnDevice's index (analysis.h's firstOpStart).
Ns earliestOpStart(const Trace& trace);

// opsOnDevice's index (and earliestOpStart's) collected one op at a time, in Trace::ops order:
// that index's own pass, or a reader's as it stores each op. The reader's op is still in cache;
// the index's pass reads every op again (a cache miss each at 10^7 ops) on the analysis' one
// thread, before it splits.
class OpsByDevice {
 public:
  OpsByDevice() = default;
  // The first device's list is reserved for `ops_expected` ops: one device is the common case,
  // and the capacity other devices leave unused is never touched (no memory).
  explicit OpsByDevice(std::size_t ops_expected) : ops_expected_(ops_expected) {}

  void add(const GpuOp& op) {
    // Runs of one device's ops are the rule: its list is looked up only when the device changes
    // (the map's nodes stay where they are as others are added).
    if (on_device_ == nullptr || op.device_id != device_id_) switchTo(op.device_id);
    on_device_->push_back(static_cast<std::uint32_t>(added_++));
    if (op.start > 0 && (first_op_start_ == 0 || op.start < first_op_start_)) first_op_start_ = op.start;
  }

  // Makes this the index of `trace`, whose ops must be the ones added, in the same order. Beyond
  // 2^32 ops nothing is installed: opsOnDevice refuses such a trace on its own.
  void install(const Trace& trace) &&;

 private:
  void switchTo(std::uint16_t device_id);

  std::size_t ops_expected_ = 0;
  std::size_t added_ = 0;
  std::unordered_map<std::uint16_t, std::vector<std::uint32_t>> lists_;
  std::vector<std::uint32_t>* on_device_ = nullptr;
  std::uint16_t device_id_ = 0;
  Ns first_op_start_ = 0;
};

// Whether stream `stream_id` is the null (legacy default) stream of context `context_id` of
// process `pid` by Trace::contexts; a context recorded with pid 0 matches any process.
bool isContextNullStream(const Trace& trace, std::uint32_t pid, std::uint32_t context_id,
                         std::uint32_t stream_id);

// The legacy default (null) streams: the stream table's streams flagged NULL and the contexts'
// null streams, sorted, as (pid, context, stream), and as (context, stream) for contexts recorded
// without a pid (they hold for every process). Built once per trace, not per device view (65536
// devices each with a context made a per-view scan quadratic).
struct LegacyDefaultStreams {
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> by_pid;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> any_pid;
  bool contains(const GpuOp& op) const {
    return std::binary_search(by_pid.begin(), by_pid.end(), std::tuple(op.pid, op.context_id, op.stream_id)) ||
           std::binary_search(any_pid.begin(), any_pid.end(), std::pair(op.context_id, op.stream_id));
  }
};
const LegacyDefaultStreams& legacyDefaultStreams(const Trace& trace);

// Per StringId: 1 when the string is a communication kernel name (communication.h's rule), so
// that every metrics call, window and ledger charge does not test every string again.
const std::vector<std::uint8_t>& communicationKernelNames(const Trace& trace);

}  // namespace cuoverlap
