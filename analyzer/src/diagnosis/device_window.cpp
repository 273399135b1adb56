// WindowIndex and the windowed DeviceView constructor (definitions: device_window.h).
#include "diagnosis/device_window.h"

#include <algorithm>

namespace cuoverlap::diagnosis {

WindowIndex::WindowIndex(const DeviceView& whole)
    : whole_(whole),
      op_ends_(whole.op_indices_.size(),
               [&](std::size_t p) { return whole.trace_.ops[whole.op_indices_[p]].end; }),
      call_ends_(whole.calls_.size(),
                 [&](std::size_t p) { return whole.trace_.runtime_calls[whole.calls_[p]].end; }),
      syncs_by_start_(whole.syncs_) {
  std::stable_sort(syncs_by_start_.begin(), syncs_by_start_.end(),
                   [](const SyncEvent* x, const SyncEvent* y) { return x->start < y->start; });
  sync_ends_ = BlockMaxTree(syncs_by_start_.size(),
                            [&](std::size_t p) { return syncs_by_start_[p]->end; });
}

std::vector<std::uint32_t> WindowIndex::opsIn(Ns a, Ns b) const {
  const Trace& trace = whole_.trace_;
  const std::vector<std::uint32_t>& all = whole_.op_indices_;
  const Ns whole_start = whole_.window_start_;
  const auto start_of = [&](std::uint32_t i) { return std::max(trace.ops[i].start, whole_start); };
  const auto first = std::lower_bound(all.begin(), all.end(), a,
                                      [&](std::uint32_t i, Ns t) { return start_of(i) < t; });
  const auto last = std::lower_bound(first, all.end(), b,
                                     [&](std::uint32_t i, Ns t) { return start_of(i) < t; });
  std::vector<std::uint32_t> result;
  // Ops that began before a and still run at a: clipped to start at a, so in index order first.
  op_ends_.forEachAbove(static_cast<std::size_t>(first - all.begin()), a,
                        [&](std::size_t p) { return trace.ops[all[p]].end; },
                        [&](std::size_t p) { result.push_back(all[p]); });
  std::sort(result.begin(), result.end());
  result.insert(result.end(), first, last);
  return result;
}

std::vector<std::size_t> WindowIndex::callsIn(Ns a, Ns b) const {
  const auto& calls = whole_.trace_.runtime_calls;
  const std::vector<std::size_t>& all = whole_.calls_;
  const auto end_of = [&](std::size_t p) { return calls[all[p]].end; };
  std::vector<std::size_t> result;
  call_ends_.forEachOverlapping(
      [&](std::size_t p) { return calls[all[p]].start; }, end_of, a, b, a,
      [&](std::size_t p) { return end_of(p) > a; },  // zero-length calls at a are out
      [&](std::size_t p) { result.push_back(all[p]); });
  return result;
}

std::vector<const SyncEvent*> WindowIndex::syncsIn(Ns a, Ns b) const {
  const auto& all = syncs_by_start_;
  std::vector<const SyncEvent*> result;
  sync_ends_.forEachOverlapping(
      [&](std::size_t p) { return all[p]->start; }, [&](std::size_t p) { return all[p]->end; }, a,
      b, a - 1, [](std::size_t) { return true; },
      [&](std::size_t p) { result.push_back(all[p]); });
  std::sort(result.begin(), result.end());  // pointers into Trace::syncs: trace order
  return result;
}

DeviceView::DeviceView(const DeviceView& whole, const WindowIndex& index, Ns window_start,
                       Ns window_end)
    : trace_(whole.trace_), call_index_(whole.call_index_), device_id_(whole.device_id_),
      window_start_(std::max(window_start, whole.window_start_)),
      window_end_(std::min(window_end, whole.window_end_)),
      has_launch_calls_(whole.has_launch_calls_), legacy_streams_(whole.legacy_streams_),
      pinned_rates_(whole.pinned_rates_) {
  if (window_end_ <= window_start_) return;
  op_indices_ = index.opsIn(window_start_, window_end_);
  op_bits_.reserve(op_indices_.size());
  for (std::uint32_t i : op_indices_) {
    span_end_ = std::max(span_end_, std::min(trace_.ops[i].end, window_end_));
    op_bits_.push_back(opBits(trace_.ops[i]));
  }
  // The whole view's calls and syncs cover this view's host range (its ops are a subset).
  const std::vector<std::uint32_t> pids = viewPids();
  const Interval range = hostRange();
  const auto in_view = [&](std::uint32_t pid) {
    return std::binary_search(pids.begin(), pids.end(), pid);
  };
  std::vector<std::size_t> calls;
  std::vector<const SyncEvent*> syncs;
  if (range.end > range.start) {
    for (std::size_t call : index.callsIn(range.start, range.end)) {
      if (in_view(trace_.runtime_calls[call].pid)) calls.push_back(call);
    }
    for (const SyncEvent* sync : index.syncsIn(range.start, range.end)) {
      if (in_view(sync->pid)) syncs.push_back(sync);
    }
  }
  selectHostRecords(pids, std::move(calls), std::move(syncs));
  computeIdle();
  computePreviousOnStreamEnds();
}

}  // namespace cuoverlap::diagnosis
