// Iterations from CUDA graph launches (a loop that replays a captured graph).
//
// A graph replay loop has one cudaGraphLaunch/cuGraphLaunch per step; the graph's kernels carry
// that call's correlation id. The kernels inside one graph are not the loop (a 20-kernel graph
// replayed 50 times is 50 iterations, not 1,000), so launches come before the kernel pattern. The
// thread (pid, tid) with the most graph launches whose ops are in scope gives the run when it has
// at least kMinIterations; iteration i starts where launch i's first op starts, and the last ends
// with launch i's last op. Cost: one pass over the calls and one over the ops (hash lookups).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "cuoverlap/diagnosis.h"
#include "cuoverlap/metrics.h"
#include "diagnosis/api_names.h"
#include "phases/iterations.h"

namespace cuoverlap::phases {
namespace {

std::uint64_t keyOf(std::uint32_t pid, std::uint32_t correlation_id) {
  return (static_cast<std::uint64_t>(pid) << 32) | correlation_id;
}

bool isGraphLaunchCall(std::string_view name) {
  const std::string_view base = diagnosis::apiBaseName(name);
  return base.substr(0, 15) == "cudaGraphLaunch" || base.substr(0, 13) == "cuGraphLaunch";
}

}  // namespace

IterationRun graphLaunchIterations(const Trace& trace, const Scope& scope) {
  // The graph launches per thread, in start order (runtime calls are sorted by start).
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<const RuntimeCall*>> launches;
  for (const RuntimeCall& call : trace.runtime_calls) {
    if (call.correlation_id == 0 || (scope.pid && call.pid != *scope.pid)) continue;
    if (isGraphLaunchCall(trace.str(call.name))) launches[{call.pid, call.tid}].push_back(&call);
  }
  IterationRun run;
  if (launches.empty()) return run;
  std::unordered_map<std::uint64_t, Interval> work;  // per launch: its ops' first start, last end
  for (const auto& [thread, calls] : launches) {
    if (calls.size() < kMinIterations) continue;
    for (const RuntimeCall* call : calls) work.emplace(keyOf(call->pid, call->correlation_id), Interval{0, 0});
  }
  for (const GpuOp& op : trace.ops) {
    if (op.correlation_id == 0 || !opInScope(op, scope)) continue;
    auto it = work.find(keyOf(op.pid, op.correlation_id));
    if (it == work.end()) continue;
    Interval& w = it->second;
    if (w.end == 0) w = {op.start, op.end};
    w = {std::min(w.start, op.start), std::max(w.end, op.end)};
  }
  for (const auto& [thread, calls] : launches) {
    IterationRun candidate;
    candidate.source = "graph-launch";
    for (const RuntimeCall* call : calls) {
      auto it = work.find(keyOf(call->pid, call->correlation_id));
      if (it == work.end() || it->second.end == 0) continue;  // nothing of it in scope
      if (!candidate.starts.empty() && it->second.start < candidate.starts.back()) continue;
      candidate.starts.push_back(it->second.start);
      candidate.host_ns.push_back(call->end - call->start);
      candidate.last_end = std::max(candidate.last_end, it->second.end);
      candidate.gpu_work_ns += it->second.end - it->second.start;
    }
    if (candidate.starts.size() >= kMinIterations && candidate.starts.size() > run.starts.size()) {
      run = std::move(candidate);
    }
  }
  return run;
}

}  // namespace cuoverlap::phases
