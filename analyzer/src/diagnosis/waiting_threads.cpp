#include "diagnosis/waiting_threads.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "cuoverlap/intervals.h"
#include "diagnosis/api_names.h"

namespace cuoverlap::diagnosis {

namespace {

bool issuesWork(ApiKind kind) {
  return kind == ApiKind::kLaunch || kind == ApiKind::kMemcpyAsync || kind == ApiKind::kMemcpySync ||
         kind == ApiKind::kMemsetAsync || kind == ApiKind::kMemsetSync;
}

}  // namespace

std::uint32_t waitingThreads(const DeviceView& view) {
  struct Activity {
    Interval active;
    bool issues = false;
    bool blocks = false;
  };
  // The view's calls are those of the processes that ran its work: the driver's turns are taken
  // per process, so a thread issuing to another device of one counts as well.
  std::unordered_map<std::uint64_t, Activity> threads;
  std::uint64_t last_key = 0;
  Activity* last = nullptr;  // most calls come in runs of one thread's
  for (const std::size_t index : view.calls()) {
    const ApiKind kind = view.callKind(index);
    const bool issues = issuesWork(kind);
    const bool blocks = isHostBlocking(kind);
    if (!issues && !blocks) continue;
    const RuntimeCall& call = view.call(index);
    const std::uint64_t key = threadKey(call);
    if (last == nullptr || key != last_key) {
      const auto [it, added] = threads.try_emplace(key, Activity{{call.start, call.end}});
      last = &it->second;
      last_key = key;
    }
    last->active.start = std::min(last->active.start, call.start);
    last->active.end = std::max(last->active.end, call.end);
    last->issues = last->issues || issues;
    last->blocks = last->blocks || blocks;
  }
  std::vector<Interval> waiting;
  for (const auto& [key, activity] : threads) {
    if (activity.issues && activity.blocks) waiting.push_back(activity.active);
  }
  std::uint32_t side_by_side = 0;
  for (std::size_t i = 0; i < waiting.size(); ++i) {
    for (std::size_t j = 0; j < waiting.size(); ++j) {
      if (j != i && waiting[j].start < waiting[i].end && waiting[i].start < waiting[j].end) {
        ++side_by_side;
        break;
      }
    }
  }
  return side_by_side >= 2 ? side_by_side : 0;
}

}  // namespace cuoverlap::diagnosis
