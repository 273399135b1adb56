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
#include <optional>
#include <tuple>
#include <utility>
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

// The most common segment (its hash and count); of equally common ones, the one that occurs first.
// Counted on a sorted copy: a hash map of the segments (mostly distinct where names do not
// repeat in a fixed order) cost a cache miss per segment, most of the steady state's search.
std::pair<std::uint64_t, std::size_t> mostCommon(const std::vector<std::uint64_t>& hashes) {
  std::vector<std::uint64_t> sorted = hashes;
  std::sort(sorted.begin(), sorted.end());
  std::size_t most = 0;
  for (std::size_t i = 0, j = 0; i < sorted.size(); i = j) {
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    most = std::max(most, j - i);
  }
  if (most < kMinIterations) return {0, most};
  const auto count = [&](std::uint64_t h) {
    const auto range = std::equal_range(sorted.begin(), sorted.end(), h);
    return static_cast<std::size_t>(range.second - range.first);
  };
  for (std::uint64_t h : hashes) {
    if (count(h) == most) return {h, most};
  }
  return {0, 0};  // not reached: some hash has the largest count
}

// An anchor's most common segment: the first and last of its occurrences (segment indices), how
// often it occurs and how many kernels its last occurrence holds.
struct Pattern {
  Segments segments;
  std::size_t first = 0;
  std::size_t last = 0;
  std::size_t count = 0;
  std::size_t length_of_last = 0;
  std::size_t covered() const { return count * length_of_last; }  // kernels covered: the score
};

std::optional<Pattern> patternAt(const std::vector<Kernel>& kernels, StringId anchor) {
  Pattern p;
  p.segments = cutAt(kernels, anchor);
  const Segments& s = p.segments;
  std::uint64_t common = 0;
  std::tie(common, p.count) = mostCommon(s.hash);
  if (p.count < kMinIterations) return std::nullopt;
  p.first = s.hash.size();
  for (std::size_t k = 0; k < s.hash.size(); ++k) {
    if (s.hash[k] != common) continue;
    p.first = std::min(p.first, k);
    p.last = k;
  }
  p.length_of_last = (p.last + 1 < s.first.size() ? s.first[p.last + 1] : kernels.size()) - s.first[p.last];
  return p;
}

// The iterations of a pattern: from each occurrence's anchor to the next, the last ending at the end
// of its last op. Built for the best anchor only (a random read of the ops per iteration).
IterationRun iterationsOf(const Trace& trace, const std::vector<Kernel>& kernels, const Pattern& p) {
  IterationRun run;
  run.source = "kernel-pattern";
  const std::vector<std::size_t>& first = p.segments.first;
  for (std::size_t k = p.first; k <= p.last; ++k) run.starts.push_back(trace.ops[kernels[first[k]].op].start);
  for (std::size_t i = first[p.last]; i < first[p.last] + p.length_of_last; ++i) {
    run.last_end = std::max(run.last_end, trace.ops[kernels[i].op].end);
  }
  run.gpu_work_ns = static_cast<Ns>(p.covered());
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
  std::optional<Pattern> best;  // of equal scores the first anchor's
  for (const auto& [count, name] : anchors) {
    std::optional<Pattern> p = patternAt(kernels, name);
    if (p && (!best || p->covered() > best->covered())) best = std::move(p);
  }
  return best ? iterationsOf(trace, kernels, *best) : IterationRun{};
}

}  // namespace cuoverlap::phases
