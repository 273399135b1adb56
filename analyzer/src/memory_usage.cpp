#include "cuoverlap/memory_usage.h"

namespace cuoverlap {

std::vector<MemoryInUse> deviceMemoryInUse(const Trace& trace, std::uint16_t device_id) {
  std::vector<MemoryInUse> steps;
  std::uint64_t total = 0;
  for (const MemoryEvent& e : trace.memory_events) {  // in time order
    if (e.device_id != device_id || e.kind != MemKind::kDevice) continue;
    total = e.allocation ? total + e.bytes : (e.bytes < total ? total - e.bytes : 0);
    if (!steps.empty() && steps.back().time == e.time) {
      steps.back().bytes = total;
    } else {
      steps.push_back({e.time, total});
    }
  }
  return steps;
}

}  // namespace cuoverlap
