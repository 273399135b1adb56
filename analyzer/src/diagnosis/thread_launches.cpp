#include "diagnosis/thread_launches.h"

#include <algorithm>
#include <map>
#include <utility>

namespace cuoverlap::diagnosis {

ThreadLaunches::ThreadLaunches(const DeviceView& view) {
  if (view.trace().runtime_calls.empty()) return;  // no op has a launch call: nothing to index
  std::map<std::uint64_t, std::vector<std::pair<Ns, std::size_t>>> launches;  // pid << 32 | tid
  std::size_t position = 0;
  for (const ScopedOp& scoped : view.ops()) {
    const std::size_t at = position++;
    const auto launch = view.launchCall(view.op(scoped));
    if (!launch) continue;
    const RuntimeCall& call = view.call(*launch);
    launches[threadKey(call)].emplace_back(call.start, at);
  }
  if (launches.empty()) return;  // no launch calls (the per-op index stays empty)
  thread_of_.assign(view.ops().size(), -1);
  rank_.assign(view.ops().size(), 0);
  for (auto& [thread, list] : launches) {
    std::sort(list.begin(), list.end());
    std::vector<std::size_t>& positions = threads_.emplace_back();
    for (const auto& [start, at] : list) {
      thread_of_[at] = static_cast<std::int64_t>(threads_.size() - 1);
      rank_[at] = positions.size();
      positions.push_back(at);
    }
  }
}

std::optional<std::size_t> ThreadLaunches::before(std::size_t position) const {
  if (thread_of_.empty() || thread_of_[position] < 0 || rank_[position] == 0) return std::nullopt;
  return threads_[static_cast<std::size_t>(thread_of_[position])][rank_[position] - 1];
}

std::optional<std::size_t> ThreadLaunches::after(std::size_t position) const {
  if (thread_of_.empty() || thread_of_[position] < 0) return std::nullopt;
  const auto& list = threads_[static_cast<std::size_t>(thread_of_[position])];
  if (rank_[position] + 1 >= list.size()) return std::nullopt;
  return list[rank_[position] + 1];
}

}  // namespace cuoverlap::diagnosis
