// Iterations from the repeating pattern of kernel names (a loop without NVTX ranges).
//
// On the device with the most kernels in scope, the kernels' names in start order form a sequence.
// For an anchor name A, the occurrences of A cut the sequence into segments (from one A up to the
// next); a loop whose step launches A once makes the segments identical. Each candidate anchor is
// scored by the kernels covered by its most common segment (count x length); the best anchor's
// iterations run from the first to the last occurrence of that segment, each from an A's start to
// the next A's start, the last ending at the end of its segment's last op. Candidates: the
// kMaxAnchors names occurring at least kMinIterations times with the fewest occurrences (a kernel
// launched once per step is among the rarest that repeat), so the cost is O(kMaxAnchors x kernels).
#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "cuoverlap/metrics.h"
#include "cuoverlap/trace_index.h"
#include "phases/iterations.h"

namespace cuoverlap::phases {
namespace {

constexpr std::size_t kMaxAnchors = 24;

// 8 bytes a kernel: its name and its index into Trace::ops.
struct Kernel {
  StringId name;
  std::uint32_t op;
};

std::vector<Kernel> kernelsOfBusiestDevice(const Trace& trace, const Scope& scope) {
  if (trace.ops.size() > std::numeric_limits<std::uint32_t>::max()) return {};
  // Per device from its own ops (trace_index.h), the kernels in scope.
  const auto kernels_on = [&](std::uint16_t device) {
    std::vector<Kernel> kernels;
    for (std::uint32_t i : opsOnDevice(trace, device)) {
      const GpuOp& op = trace.ops[i];
      if (op.kind == OpKind::kKernel && opInScope(op, scope)) kernels.push_back({op.name, i});
    }
    return kernels;
  };
  std::vector<Kernel> busiest;
  for (std::uint16_t device : devicesInScope(trace, scope)) {
    std::vector<Kernel> kernels = kernels_on(device);
    if (kernels.size() > busiest.size()) busiest = std::move(kernels);  // first of equals wins
  }
  return busiest;
}

// Segments cut at `anchor`: per segment its first kernel's position and a hash of its names.
struct Segments {
  std::vector<std::size_t> first;
  std::vector<std::uint64_t> hash;
};

Segments cutAt(const std::vector<Kernel>& kernels, StringId anchor) {
  Segments s;
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (kernels[i].name == anchor) {
      if (!s.first.empty()) s.hash.push_back(h);
      s.first.push_back(i);
      h = 1469598103934665603ull;
    }
    h = (h ^ kernels[i].name) * 1099511628211ull;
  }
  if (!s.first.empty()) s.hash.push_back(h);
  return s;
}

// The iterations anchored at `anchor`, scored by the kernels its most common segment covers.
IterationRun runFor(const Trace& trace, const std::vector<Kernel>& kernels, StringId anchor) {
  const Segments s = cutAt(kernels, anchor);
  std::unordered_map<std::uint64_t, std::size_t> counts;
  for (std::uint64_t h : s.hash) ++counts[h];
  IterationRun run;
  if (counts.empty()) return run;
  const auto common = std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
    return a.second < b.second;
  });
  if (common->second < kMinIterations) return run;
  std::size_t first = s.hash.size(), last = 0;
  for (std::size_t k = 0; k < s.hash.size(); ++k) {
    if (s.hash[k] != common->first) continue;
    first = std::min(first, k);
    last = k;
  }
  const std::size_t length_of_last =
      (last + 1 < s.first.size() ? s.first[last + 1] : kernels.size()) - s.first[last];
  run.source = "kernel-pattern";
  for (std::size_t k = first; k <= last; ++k) run.starts.push_back(trace.ops[kernels[s.first[k]].op].start);
  for (std::size_t i = s.first[last]; i < s.first[last] + length_of_last; ++i) {
    run.last_end = std::max(run.last_end, trace.ops[kernels[i].op].end);
  }
  run.gpu_work_ns = static_cast<Ns>(common->second * length_of_last);  // kernels covered
  return run;
}

}  // namespace

IterationRun kernelPatternIterations(const Trace& trace, const Scope& scope) {
  const std::vector<Kernel> kernels = kernelsOfBusiestDevice(trace, scope);
  std::unordered_map<StringId, std::size_t> counts;
  for (const Kernel& k : kernels) ++counts[k.name];
  std::vector<std::pair<std::size_t, StringId>> anchors;
  for (const auto& [name, count] : counts) {
    if (count >= kMinIterations) anchors.emplace_back(count, name);
  }
  std::sort(anchors.begin(), anchors.end());
  if (anchors.size() > kMaxAnchors) anchors.resize(kMaxAnchors);
  IterationRun best;
  for (const auto& [count, name] : anchors) {
    IterationRun run = runFor(trace, kernels, name);
    if (!run.starts.empty() && (best.starts.empty() || run.gpu_work_ns > best.gpu_work_ns)) {
      best = std::move(run);
    }
  }
  return best;
}

}  // namespace cuoverlap::phases
