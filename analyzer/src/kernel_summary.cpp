#include "cuoverlap/kernel_summary.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "cuoverlap/metrics.h"

namespace cuoverlap {
namespace {

Ns saturatingAdd(Ns a, Ns b) {
  return b > std::numeric_limits<Ns>::max() - a ? std::numeric_limits<Ns>::max() : a + b;
}

}  // namespace

std::map<std::uint16_t, std::vector<KernelSummary>> summarizeKernels(const Trace& trace, const Scope& scope,
                                                                     std::size_t limit) {
  struct Totals {
    std::uint64_t count = 0;
    Ns total = 0;
    Ns shortest = 0;
    Ns longest = 0;
  };
  std::map<std::uint16_t, std::unordered_map<StringId, Totals>> per_device;
  std::map<std::uint16_t, Ns> device_kernel_ns;
  // The device's maps are looked up only when the device changes (runs of one device are the
  // rule; std::map's elements stay where they are as others are added).
  std::unordered_map<StringId, Totals>* by_name = nullptr;
  Ns* device_total = nullptr;
  std::uint16_t device_id = 0;
  for (const GpuOp& op : trace.ops) {
    if (op.kind != OpKind::kKernel || !opInScope(op, scope)) continue;
    if (by_name == nullptr || op.device_id != device_id) {
      device_id = op.device_id;
      by_name = &per_device[device_id];
      device_total = &device_kernel_ns[device_id];
    }
    const Ns length = clippedEnd(op, scope) - clippedStart(op, scope);
    Totals& totals = (*by_name)[op.name];
    totals.shortest = totals.count == 0 ? length : std::min(totals.shortest, length);
    totals.longest = std::max(totals.longest, length);
    ++totals.count;
    totals.total = saturatingAdd(totals.total, length);
    *device_total = saturatingAdd(*device_total, length);
  }
  std::map<std::uint16_t, std::vector<KernelSummary>> summaries;
  for (const auto& [device_id, by_name] : per_device) {
    std::vector<KernelSummary> rows;
    rows.reserve(by_name.size());
    for (const auto& [name, totals] : by_name) {
      KernelSummary row;
      row.name = std::string(trace.str(name));
      row.count = totals.count;
      row.total_ns = totals.total;
      row.mean_ns = totals.total / static_cast<Ns>(totals.count);
      row.min_ns = totals.shortest;
      row.max_ns = totals.longest;
      const Ns all = device_kernel_ns[device_id];
      row.share = all > 0 ? static_cast<double>(totals.total) / static_cast<double>(all) : 0.0;
      rows.push_back(std::move(row));
    }
    std::sort(rows.begin(), rows.end(), [](const KernelSummary& a, const KernelSummary& b) {
      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
    });
    if (rows.size() > limit) rows.resize(limit);
    summaries[device_id] = std::move(rows);
  }
  return summaries;
}

}  // namespace cuoverlap
