// The runtime/driver calls, sync records and streams of a trace, indexed once per trace by
// process, so that every device view takes what it needs by binary search instead of scanning
// every call of its processes (one process on N devices made the views N x calls: 23 s at 16k
// devices).
//
// Per process: its calls sorted by start (ties by index) with a BlockMaxTree over their ends, so
// the calls overlapping [a, b) are found in O(log n + k); its launch lookup (correlation id ->
// call; the first runtime call of an id wins, else its first driver call); its sync records
// sorted by start with the same tree. Call kinds are classified once per interned name.
// Built on first use (callIndex), cached in Trace::index_cache, and rebuilt when runtime_calls,
// syncs or streams were reallocated or resized (tests change hand-built traces between calls).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuoverlap/model.h"
#include "diagnosis/api_names.h"
#include "diagnosis/block_max.h"

namespace cuoverlap::diagnosis {

class CallIndex {
 public:
  explicit CallIndex(const Trace& trace);

  // Whether this index still describes `trace`'s vectors.
  bool describes(const Trace& trace) const;

  ApiKind kind(std::size_t call) const {
    const StringId name = trace_.runtime_calls[call].name;
    return name < kinds_by_name_.size() ? kinds_by_name_[name] : ApiKind::kOther;
  }
  // The call of process `pid` with `correlation_id` (0: none).
  std::optional<std::size_t> launchCall(std::uint32_t pid, std::uint32_t correlation_id) const {
    if (processes_.empty() || correlation_id == 0) return std::nullopt;  // traces without calls
    return findLaunchCall(pid, correlation_id);
  }
  // Whether `pid` has a call with a correlation id (a launch lookup can succeed).
  bool hasLaunchCalls(std::uint32_t pid) const;
  // Appends the calls of `pid` with start < b and end > a (zero-length calls at a excepted: end
  // > a), in start order.
  void appendCallsOverlapping(std::uint32_t pid, Ns a, Ns b, std::vector<std::size_t>& out) const;
  // Appends the sync records of `pid` with start < b and end >= a, in start order.
  void appendSyncsOverlapping(std::uint32_t pid, Ns a, Ns b,
                              std::vector<const SyncEvent*>& out) const;
  const Stream* stream(std::uint32_t pid, std::uint32_t context_id, std::uint32_t stream_id) const;

 private:
  struct Process {
    std::vector<std::uint32_t> calls;  // indices into Trace::runtime_calls, by start
    BlockMaxTree call_ends;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> by_correlation;  // (id, call), by id
    std::vector<const SyncEvent*> syncs;  // by start
    BlockMaxTree sync_ends;
  };

  std::optional<std::size_t> findLaunchCall(std::uint32_t pid, std::uint32_t correlation_id) const;
  void indexCalls();
  void indexSyncs();
  const Process* process(std::uint32_t pid) const;

  const Trace& trace_;
  const RuntimeCall* calls_data_;
  std::size_t calls_size_;
  const SyncEvent* syncs_data_;
  std::size_t syncs_size_;
  const Stream* streams_data_;
  std::size_t streams_size_;
  std::vector<ApiKind> kinds_by_name_;  // per StringId
  std::unordered_map<std::uint32_t, Process> processes_;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, const Stream*> streams_;
};

// The trace's CallIndex, built on first use.
const CallIndex& callIndex(const Trace& trace);

}  // namespace cuoverlap::diagnosis
