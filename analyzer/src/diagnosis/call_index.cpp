#include "diagnosis/call_index.h"

#include <algorithm>
#include <memory>

namespace cuoverlap::diagnosis {

CallIndex::CallIndex(const Trace& trace)
    : trace_(trace), calls_data_(trace.runtime_calls.data()), calls_size_(trace.runtime_calls.size()),
      syncs_data_(trace.syncs.data()), syncs_size_(trace.syncs.size()),
      streams_data_(trace.streams.data()), streams_size_(trace.streams.size()) {
  indexCalls();
  indexSyncs();
  for (const Stream& s : trace.streams) streams_[{s.pid, s.context_id, s.stream_id}] = &s;
}

bool CallIndex::describes(const Trace& trace) const {
  return &trace == &trace_ && calls_data_ == trace.runtime_calls.data() &&
         calls_size_ == trace.runtime_calls.size() && syncs_data_ == trace.syncs.data() &&
         syncs_size_ == trace.syncs.size() && streams_data_ == trace.streams.data() &&
         streams_size_ == trace.streams.size() && kinds_by_name_.size() == trace.strings.size();
}

void CallIndex::indexCalls() {
  const std::vector<RuntimeCall>& all = trace_.runtime_calls;
  kinds_by_name_.assign(trace_.strings.size(), ApiKind::kOther);
  std::vector<std::uint8_t> classified(trace_.strings.size(), 0);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const RuntimeCall& call = all[i];
    if (call.name < classified.size() && !classified[call.name]) {
      kinds_by_name_[call.name] = classifyApi(trace_.str(call.name));
      classified[call.name] = 1;
    }
    Process& p = processes_[call.pid];
    p.calls.push_back(static_cast<std::uint32_t>(i));
    if (call.correlation_id != 0) p.by_correlation.emplace_back(call.correlation_id, i);
  }
  for (auto& entry : processes_) {
    Process& p = entry.second;  // a name lambdas can capture (not a structured binding)
    // The reader returns calls sorted by start; hand-built traces may not be.
    const auto by_start = [&](std::uint32_t a, std::uint32_t b) { return all[a].start < all[b].start; };
    if (!std::is_sorted(p.calls.begin(), p.calls.end(), by_start)) {
      std::stable_sort(p.calls.begin(), p.calls.end(), by_start);
    }
    p.call_ends = BlockMaxTree(p.calls.size(), [&](std::size_t q) { return all[p.calls[q]].end; });
    // One entry per id: its first runtime call, else its first driver call.
    std::stable_sort(p.by_correlation.begin(), p.by_correlation.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::size_t kept = 0;
    for (std::size_t first = 0; first < p.by_correlation.size();) {
      std::size_t chosen = first;
      std::size_t last = first;
      for (; last < p.by_correlation.size() && p.by_correlation[last].first == p.by_correlation[first].first;
           ++last) {
        if (all[p.by_correlation[chosen].second].is_driver && !all[p.by_correlation[last].second].is_driver) {
          chosen = last;
        }
      }
      p.by_correlation[kept++] = p.by_correlation[chosen];
      first = last;
    }
    p.by_correlation.resize(kept);
    p.by_correlation.shrink_to_fit();
  }
}

void CallIndex::indexSyncs() {
  for (const SyncEvent& sync : trace_.syncs) processes_[sync.pid].syncs.push_back(&sync);
  for (auto& entry : processes_) {
    Process& p = entry.second;  // a name lambdas can capture (not a structured binding)
    std::stable_sort(p.syncs.begin(), p.syncs.end(),
                     [](const SyncEvent* a, const SyncEvent* b) { return a->start < b->start; });
    p.sync_ends = BlockMaxTree(p.syncs.size(), [&](std::size_t q) { return p.syncs[q]->end; });
  }
}

const CallIndex::Process* CallIndex::process(std::uint32_t pid) const {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : &it->second;
}

std::optional<std::size_t> CallIndex::findLaunchCall(std::uint32_t pid,
                                                     std::uint32_t correlation_id) const {
  const Process* p = process(pid);
  if (p == nullptr) return std::nullopt;
  auto it = std::lower_bound(p->by_correlation.begin(), p->by_correlation.end(), correlation_id,
                             [](const auto& entry, std::uint32_t id) { return entry.first < id; });
  if (it == p->by_correlation.end() || it->first != correlation_id) return std::nullopt;
  return it->second;
}

bool CallIndex::hasLaunchCalls(std::uint32_t pid) const {
  const Process* p = process(pid);
  return p != nullptr && !p->by_correlation.empty();
}

void CallIndex::appendCallsOverlapping(std::uint32_t pid, Ns a, Ns b,
                                       std::vector<std::size_t>& out) const {
  const Process* p = process(pid);
  if (p == nullptr || b <= a) return;
  const std::vector<RuntimeCall>& all = trace_.runtime_calls;
  const auto end_of = [&](std::size_t q) { return all[p->calls[q]].end; };
  p->call_ends.forEachOverlapping(
      [&](std::size_t q) { return all[p->calls[q]].start; }, end_of, a, b, a,
      [&](std::size_t q) { return end_of(q) > a; },  // zero-length calls at a are out
      [&](std::size_t q) { out.push_back(p->calls[q]); });
}

void CallIndex::appendSyncsOverlapping(std::uint32_t pid, Ns a, Ns b,
                                       std::vector<const SyncEvent*>& out) const {
  const Process* p = process(pid);
  if (p == nullptr || b <= a) return;
  p->sync_ends.forEachOverlapping(
      [&](std::size_t q) { return p->syncs[q]->start; }, [&](std::size_t q) { return p->syncs[q]->end; },
      a, b, a - 1, [](std::size_t) { return true; },
      [&](std::size_t q) { out.push_back(p->syncs[q]); });
}

const Stream* CallIndex::stream(std::uint32_t pid, std::uint32_t context_id,
                                std::uint32_t stream_id) const {
  auto it = streams_.find({pid, context_id, stream_id});
  return it == streams_.end() ? nullptr : it->second;
}

const CallIndex& callIndex(const Trace& trace) {
  std::shared_ptr<CallIndex>& cached = trace.index_cache.calls;
  if (!cached || !cached->describes(trace)) cached = std::make_shared<CallIndex>(trace);
  return *cached;
}

}  // namespace cuoverlap::diagnosis
