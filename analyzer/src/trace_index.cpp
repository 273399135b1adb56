#include "cuoverlap/trace_index.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <set>
#include <tuple>
#include <unordered_map>

#include "cuoverlap/communication.h"
#include "cuoverlap/error.h"

namespace cuoverlap {

struct TraceIndex {
  // Which vector each index describes: rebuilt when it moved or changed size.
  const GpuOp* ops_data = nullptr;
  std::size_t ops_size = 0;
  bool have_ops = false;
  std::unordered_map<std::uint16_t, std::vector<std::uint32_t>> ops_by_device;
  std::vector<std::uint16_t> device_ids;  // the keys of ops_by_device, ascending
  Ns first_op_start = 0;                   // earliestOpStart's, found by the same pass

  const Context* contexts_data = nullptr;
  std::size_t contexts_size = 0;
  bool have_null_streams = false;
  std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> null_streams;  // pid, ctx, stream

  const Stream* streams_data = nullptr;  // with contexts_data/size for the legacy streams
  std::size_t streams_size = 0;
  const Context* legacy_contexts_data = nullptr;
  std::size_t legacy_contexts_size = 0;
  bool have_legacy = false;
  LegacyDefaultStreams legacy;

  const std::string* strings_data = nullptr;
  std::size_t strings_size = 0;
  bool have_communication = false;
  std::vector<std::uint8_t> communication_names;  // per StringId
};

namespace {

TraceIndex& indexOf(const Trace& trace) {
  if (!trace.index_cache.index) trace.index_cache.index = std::make_shared<TraceIndex>();
  return *trace.index_cache.index;
}

// The ops-by-device index, built on first use (and again when Trace::ops moved or was resized),
// unless a reader installed the one it collected.
TraceIndex& indexOps(const Trace& trace) {
  TraceIndex& index = indexOf(trace);
  if (!index.have_ops || index.ops_data != trace.ops.data() || index.ops_size != trace.ops.size()) {
    if (trace.ops.size() > std::numeric_limits<std::uint32_t>::max()) {
      throw UserError(fmt::format("{}: more than 2^32 GPU ops", trace.path));
    }
    OpsByDevice collected(trace.ops.size());
    for (const GpuOp& op : trace.ops) collected.add(op);
    std::move(collected).install(trace);
  }
  return index;
}

}  // namespace

void OpsByDevice::switchTo(std::uint16_t device_id) {
  device_id_ = device_id;
  on_device_ = &lists_[device_id];
  if (lists_.size() == 1 && on_device_->empty()) on_device_->reserve(ops_expected_);
}

void OpsByDevice::install(const Trace& trace) && {
  if (added_ != trace.ops.size() || added_ > std::numeric_limits<std::uint32_t>::max()) return;
  TraceIndex& index = indexOf(trace);
  index.ops_by_device = std::move(lists_);
  index.first_op_start = first_op_start_;
  index.ops_data = trace.ops.data();
  index.ops_size = trace.ops.size();
  index.device_ids.clear();
  for (const auto& entry : index.ops_by_device) index.device_ids.push_back(entry.first);
  std::sort(index.device_ids.begin(), index.device_ids.end());
  index.have_ops = true;
}

std::vector<std::uint16_t> devicesWithOps(const Trace& trace) { return indexOps(trace).device_ids; }

Ns earliestOpStart(const Trace& trace) { return indexOps(trace).first_op_start; }

const std::vector<std::uint32_t>& opsOnDevice(const Trace& trace, std::uint16_t device_id) {
  const TraceIndex& index = indexOps(trace);
  static const std::vector<std::uint32_t> kNone;
  auto it = index.ops_by_device.find(device_id);
  return it == index.ops_by_device.end() ? kNone : it->second;
}

bool isContextNullStream(const Trace& trace, std::uint32_t pid, std::uint32_t context_id,
                         std::uint32_t stream_id) {
  TraceIndex& index = indexOf(trace);
  if (!index.have_null_streams || index.contexts_data != trace.contexts.data() ||
      index.contexts_size != trace.contexts.size()) {
    index.null_streams.clear();
    for (const Context& c : trace.contexts) {
      if (c.null_stream_id) index.null_streams.insert({c.pid, c.context_id, *c.null_stream_id});
    }
    index.contexts_data = trace.contexts.data();
    index.contexts_size = trace.contexts.size();
    index.have_null_streams = true;
  }
  return index.null_streams.count({pid, context_id, stream_id}) != 0 ||
         index.null_streams.count({0, context_id, stream_id}) != 0;
}

const LegacyDefaultStreams& legacyDefaultStreams(const Trace& trace) {
  TraceIndex& index = indexOf(trace);
  if (!index.have_legacy || index.streams_data != trace.streams.data() ||
      index.streams_size != trace.streams.size() || index.legacy_contexts_data != trace.contexts.data() ||
      index.legacy_contexts_size != trace.contexts.size()) {
    LegacyDefaultStreams& legacy = index.legacy;
    legacy = {};
    for (const Stream& s : trace.streams) {
      if (s.flag == StreamFlag::kNull) legacy.by_pid.emplace_back(s.pid, s.context_id, s.stream_id);
    }
    for (const Context& c : trace.contexts) {
      if (!c.null_stream_id) continue;
      legacy.by_pid.emplace_back(c.pid, c.context_id, *c.null_stream_id);
      if (c.pid == 0) legacy.any_pid.emplace_back(c.context_id, *c.null_stream_id);
    }
    std::sort(legacy.by_pid.begin(), legacy.by_pid.end());
    std::sort(legacy.any_pid.begin(), legacy.any_pid.end());
    index.streams_data = trace.streams.data();
    index.streams_size = trace.streams.size();
    index.legacy_contexts_data = trace.contexts.data();
    index.legacy_contexts_size = trace.contexts.size();
    index.have_legacy = true;
  }
  return index.legacy;
}

const std::vector<std::uint8_t>& communicationKernelNames(const Trace& trace) {
  TraceIndex& index = indexOf(trace);
  if (!index.have_communication || index.strings_data != trace.strings.data() ||
      index.strings_size != trace.strings.size()) {
    index.communication_names.assign(trace.strings.size(), 0);
    for (std::size_t id = 0; id < trace.strings.size(); ++id) {
      index.communication_names[id] = isCommunicationKernelName(trace.strings[id]) ? 1 : 0;
    }
    index.strings_data = trace.strings.data();
    index.strings_size = trace.strings.size();
    index.have_communication = true;
  }
  return index.communication_names;
}

}  // namespace cuoverlap
