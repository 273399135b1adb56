#include "diagnosis/legacy_barriers.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <utility>

namespace cuoverlap::diagnosis {

std::vector<OrderEdge> legacyBarrierEdges(const DeviceView& view) {
  using Launches = std::vector<std::pair<Ns, std::size_t>>;  // (launch start, position), sorted
  std::map<std::uint32_t, std::map<std::uint64_t, Launches>> blocking;  // context -> stream
  std::vector<std::pair<Ns, std::size_t>> legacy;
  const auto& ops = view.ops();
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    const auto call = view.launchCall(op);
    if (!call) continue;
    const Ns launched = view.call(*call).start;
    if (view.onLegacyDefaultStream(op)) {
      legacy.emplace_back(launched, pos);
      continue;
    }
    const Stream* stream = view.stream(op);
    if (stream != nullptr && stream->flag == StreamFlag::kDefault) {
      blocking[op.context_id][DeviceView::streamKey(op)].emplace_back(launched, pos);
    }
  }
  std::vector<OrderEdge> edges;
  for (auto& [context, streams] : blocking) {
    for (auto& [stream, list] : streams) std::sort(list.begin(), list.end());
  }
  for (const auto& [launched, pos] : legacy) {
    const auto context = blocking.find(view.op(ops[pos]).context_id);
    if (context == blocking.end()) continue;
    for (const auto& [stream, list] : context->second) {
      const auto after = std::lower_bound(list.begin(), list.end(), std::make_pair(launched, std::size_t{0}));
      if (after != list.begin()) edges.push_back({std::prev(after)->second, pos});
      if (after != list.end()) edges.push_back({pos, after->second});
    }
  }
  return edges;
}

}  // namespace cuoverlap::diagnosis
