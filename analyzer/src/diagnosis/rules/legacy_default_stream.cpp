// legacy-default-stream: an op issued to the legacy default (null) stream while another blocking
// stream of the same context had work. The legacy stream is an implicit barrier: its op waits for
// all earlier work of the context's blocking streams, and their later work waits for it.
// An op X on the null stream counts when some op Y of another blocking stream (flag "default" in
// the stream table) of the same context was in flight when X's launch call began (Y launched
// earlier and not yet finished), or was launched while X was in flight.
// Cost: the duration of each counted X, which ran alone although it could have overlapped.
// Needs: the null stream (stream flag or context nullStreamId), stream flags, launch calls.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {
namespace {

// The blocking-stream ops of one context, ordered by launch start, with the running maximum of
// their ends: answers "was any of them in flight at time t" and "was any launched in [a, b)".
struct BlockingStreamLaunches {
  std::vector<Ns> launch_start;
  std::vector<Ns> max_end;

  bool inFlightAt(Ns t) const {
    const auto k = std::lower_bound(launch_start.begin(), launch_start.end(), t) -
                   launch_start.begin();
    return k > 0 && max_end[k - 1] > t;
  }
  bool launchedIn(Ns from, Ns to) const {
    auto it = std::lower_bound(launch_start.begin(), launch_start.end(), from);
    return it != launch_start.end() && *it < to;
  }
};

std::map<std::uint32_t, BlockingStreamLaunches> blockingLaunchesPerContext(const DeviceView& view) {
  std::map<std::uint32_t, std::vector<std::pair<Ns, Ns>>> launches;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    const Stream* stream = view.stream(op);
    const auto call = view.launchCall(op);
    if (!call || !stream || stream->flag != StreamFlag::kDefault) continue;
    if (view.onLegacyDefaultStream(op)) continue;
    launches[op.context_id].emplace_back(view.call(*call).start, scoped.end);
  }
  std::map<std::uint32_t, BlockingStreamLaunches> result;
  for (auto& [context, list] : launches) {
    std::sort(list.begin(), list.end());
    BlockingStreamLaunches& out = result[context];
    for (const auto& [start, end] : list) {
      out.launch_start.push_back(start);
      out.max_end.push_back(out.max_end.empty() ? end : std::max(out.max_end.back(), end));
    }
  }
  return result;
}

}  // namespace

std::optional<Finding> findLegacyDefaultStream(const DeviceView& view) {
  const auto per_context = blockingLaunchesPerContext(view);
  FindingBuilder builder(view, "legacy-default-stream", Severity::kWarning);
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    const auto call = view.launchCall(op);
    if (!call || !view.onLegacyDefaultStream(op)) continue;
    auto it = per_context.find(op.context_id);
    if (it == per_context.end()) continue;
    const Ns launched = view.call(*call).start;
    if (!it->second.inFlightAt(launched) && !it->second.launchedIn(launched, scoped.end)) continue;
    builder.add(scoped.end - scoped.start,
                evidenceForOp(view, op, fmt::format("{} on the legacy default stream while "
                                                    "other blocking streams had work",
                                                    describeOp(view, op))));
  }
  return builder.build(
      fmt::format("{} ops on the legacy default stream acted as barriers for the other "
                  "blocking streams of their context",
                  builder.count()),
      "Issue this work to a created stream, create the other streams with "
      "cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), or compile with "
      "--default-stream per-thread");
}

}  // namespace cuoverlap::diagnosis
