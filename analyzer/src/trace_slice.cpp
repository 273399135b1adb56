#include "cuoverlap/trace_slice.h"

#include <algorithm>
#include <iterator>

namespace cuoverlap {
namespace {

template <typename Row>
std::vector<Row> ofProcesses(const std::vector<Row>& rows, const std::set<std::uint32_t>& pids) {
  std::vector<Row> kept;
  std::copy_if(rows.begin(), rows.end(), std::back_inserter(kept),
               [&pids](const Row& row) { return pids.count(row.pid) != 0; });
  return kept;
}

template <typename Row>
std::vector<Row> startingIn(const std::vector<Row>& rows, Ns from, Ns to) {
  std::vector<Row> kept;
  std::copy_if(rows.begin(), rows.end(), std::back_inserter(kept),
               [from, to](const Row& row) { return row.start >= from && row.start < to; });
  return kept;
}

}  // namespace

std::map<std::int32_t, std::set<std::uint32_t>> processesByRank(const Trace& trace) {
  std::map<std::int32_t, std::set<std::uint32_t>> ranks;
  for (const ProcessInfo& process : trace.processes) {
    if (process.rank) ranks[*process.rank].insert(process.pid);
  }
  return ranks;
}

Trace sliceProcesses(const Trace& trace, const std::set<std::uint32_t>& pids) {
  Trace slice;
  slice.path = trace.path;
  slice.source = trace.source;
  slice.strings = trace.strings;
  slice.devices = trace.devices;
  slice.session = trace.session;
  slice.warnings = trace.warnings;
  // Ops keep their order; kernel_dims is keyed by op index, so it is renumbered with them.
  std::vector<std::uint32_t> new_index(trace.ops.size(), UINT32_MAX);
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    if (pids.count(trace.ops[i].pid) == 0) continue;
    new_index[i] = static_cast<std::uint32_t>(slice.ops.size());
    slice.ops.push_back(trace.ops[i]);
  }
  for (const OpDims& dims : trace.kernel_dims) {
    if (dims.op < new_index.size() && new_index[dims.op] != UINT32_MAX) {
      slice.kernel_dims.push_back({new_index[dims.op], dims.dims});
    }
  }
  slice.runtime_calls = ofProcesses(trace.runtime_calls, pids);
  slice.syncs = ofProcesses(trace.syncs, pids);
  slice.event_records = ofProcesses(trace.event_records, pids);
  slice.op_buffers = ofProcesses(trace.op_buffers, pids);
  slice.memory_events = ofProcesses(trace.memory_events, pids);
  slice.nvtx = ofProcesses(trace.nvtx, pids);
  slice.streams = ofProcesses(trace.streams, pids);
  slice.contexts = ofProcesses(trace.contexts, pids);
  slice.processes = ofProcesses(trace.processes, pids);
  return slice;
}

Trace sliceTime(const Trace& trace, Ns from, Ns to) {
  Trace slice = trace;
  slice.ops.clear();
  slice.kernel_dims.clear();
  std::vector<std::uint32_t> new_index(trace.ops.size(), UINT32_MAX);
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    if (trace.ops[i].start < from || trace.ops[i].start >= to) continue;
    new_index[i] = static_cast<std::uint32_t>(slice.ops.size());
    slice.ops.push_back(trace.ops[i]);
  }
  for (const OpDims& dims : trace.kernel_dims) {
    if (dims.op < new_index.size() && new_index[dims.op] != UINT32_MAX) {
      slice.kernel_dims.push_back({new_index[dims.op], dims.dims});
    }
  }
  slice.runtime_calls = startingIn(trace.runtime_calls, from, to);
  slice.syncs = startingIn(trace.syncs, from, to);
  slice.nvtx = startingIn(trace.nvtx, from, to);
  slice.index_cache = TraceIndexCache();
  return slice;
}

}  // namespace cuoverlap
