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
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

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

// Per StringId, its anchor's index (in anchor order), or -1: which anchor a kernel is, by one
// read instead of a comparison with each anchor.
using AnchorOf = std::vector<std::int8_t>;
static_assert(kMaxAnchors <= 127);

// The hashes of the segments cut at each anchor of [from, to) (from one of its occurrences up to
// the next), in one pass over the kernels (a pass per anchor read them up to kMaxAnchors times):
// each anchor's hash runs over every kernel and restarts at its occurrences. Segment k starts at
// the anchor's k-th occurrence.
std::vector<std::vector<std::uint64_t>> segmentHashes(const std::vector<Kernel>& kernels, std::size_t from,
                                                      std::size_t to, const AnchorOf& anchor_of) {
  constexpr std::uint64_t kOffset = 1469598103934665603ull;
  constexpr std::uint64_t kPrime = 1099511628211ull;
  const std::size_t anchors = to - from;
  std::vector<std::vector<std::uint64_t>> hashes(anchors);
  std::vector<std::uint64_t> h(anchors, 0);
  std::vector<char> started(anchors, 0);
  for (const Kernel& kernel : kernels) {
    const int anchor = anchor_of[kernel.name];
    if (anchor >= static_cast<int>(from) && anchor < static_cast<int>(to)) {
      const std::size_t at = static_cast<std::size_t>(anchor) - from;
      if (started[at]) hashes[at].push_back(h[at]);
      started[at] = 1;
      h[at] = kOffset;
    }
    for (std::size_t a = 0; a < anchors; ++a) h[a] = (h[a] ^ kernel.name) * kPrime;
  }
  for (std::size_t a = 0; a < anchors; ++a) {
    if (started[a]) hashes[a].push_back(h[a]);
  }
  return hashes;
}

// The positions of `anchor`'s occurrences among the kernels: where its segments start.
std::vector<std::size_t> occurrencesOf(const std::vector<Kernel>& kernels, StringId anchor) {
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (kernels[i].name == anchor) at.push_back(i);
  }
  return at;
}

// Sorts 64-bit keys: least significant 16 bits first, a counting pass per digit that varies
// (std::sort's comparisons and branch misses cost several times more on the random hashes of
// segments that do not repeat).
void radixSort(std::vector<std::uint64_t>& keys) {
  if (keys.size() < 4096) return std::sort(keys.begin(), keys.end());
  constexpr int kDigits = 4;
  constexpr std::size_t kBuckets = 1 << 16;
  std::vector<std::size_t> counts(kDigits * kBuckets, 0);
  for (std::uint64_t key : keys) {
    for (int d = 0; d < kDigits; ++d) ++counts[d * kBuckets + ((key >> (16 * d)) & 0xffff)];
  }
  std::vector<std::uint64_t> other(keys.size());
  for (int d = 0; d < kDigits; ++d) {
    std::size_t* count = &counts[d * kBuckets];
    if (count[(keys.front() >> (16 * d)) & 0xffff] == keys.size()) continue;  // one value: no move
    std::size_t at = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) at += std::exchange(count[b], at);
    for (std::uint64_t key : keys) other[count[(key >> (16 * d)) & 0xffff]++] = key;
    keys.swap(other);
  }
}

// The most common segment (its hash and count); of equally common ones, the one that occurs first.
// Counted on a sorted copy: a hash map of the segments (mostly distinct where names do not
// repeat in a fixed order) cost a cache miss per segment, most of the steady state's search.
std::pair<std::uint64_t, std::size_t> mostCommon(const std::vector<std::uint64_t>& hashes) {
  std::vector<std::uint64_t> sorted = hashes;
  radixSort(sorted);
  std::size_t most = 0;
  for (std::size_t i = 0, j = 0; i < sorted.size(); i = j) {
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    most = std::max(most, j - i);
  }
  if (most < kMinIterations) return {0, most};
  std::vector<std::uint64_t> commonest;  // sorted; at most size / kMinIterations of them
  for (std::size_t i = 0, j = 0; i < sorted.size(); i = j) {
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    if (j - i == most) commonest.push_back(sorted[i]);
  }
  for (std::uint64_t h : hashes) {
    if (std::binary_search(commonest.begin(), commonest.end(), h)) return {h, most};
  }
  return {0, 0};  // not reached: some hash has the largest count
}

// An anchor's most common segment: the first and last of its occurrences (segment indices), how
// often it occurs and how many kernels its last occurrence holds.
struct Pattern {
  StringId anchor = kNoString;
  std::size_t first = 0;
  std::size_t last = 0;
  std::size_t count = 0;
  std::size_t length_of_last = 0;
  std::size_t covered() const { return count * length_of_last; }  // kernels covered: the score
};

// An anchor's most common segment, its length still to be found (lengthsOfLast).
std::optional<Pattern> patternAt(StringId anchor, const std::vector<std::uint64_t>& hashes) {
  Pattern p;
  p.anchor = anchor;
  std::uint64_t common = 0;
  std::tie(common, p.count) = mostCommon(hashes);
  if (p.count < kMinIterations) return std::nullopt;
  p.first = hashes.size();
  for (std::size_t k = 0; k < hashes.size(); ++k) {
    if (hashes[k] != common) continue;
    p.first = std::min(p.first, k);
    p.last = k;
  }
  return p;
}

// Each pattern's last occurrence's length: from its anchor to the anchor's next occurrence (or
// the last kernel), for every anchor in one pass.
void lengthsOfLast(const std::vector<Kernel>& kernels, const AnchorOf& anchor_of,
                   std::vector<std::optional<Pattern>>& patterns) {
  std::vector<std::size_t> seen(patterns.size(), 0);
  std::vector<std::size_t> start(patterns.size(), 0);
  for (std::optional<Pattern>& p : patterns) {
    if (p) p->length_of_last = kernels.size();  // until the end unless the anchor occurs again
  }
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const int at = anchor_of[kernels[i].name];
    if (at < 0 || !patterns[at]) continue;
    Pattern& p = *patterns[at];
    if (seen[at] == p.last) start[at] = i;
    if (seen[at] == p.last + 1) p.length_of_last = i;
    ++seen[at];
  }
  for (std::size_t a = 0; a < patterns.size(); ++a) {
    if (patterns[a]) patterns[a]->length_of_last -= start[a];
  }
}

// The iterations of a pattern: from each occurrence's anchor to the next, the last ending at the end
// of its last op. Built for the best anchor only (a random read of the ops per iteration).
IterationRun iterationsOf(const Trace& trace, const std::vector<Kernel>& kernels, const Pattern& p) {
  IterationRun run;
  run.source = "kernel-pattern";
  const std::vector<std::size_t> first = occurrencesOf(kernels, p.anchor);
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
  // Names are indices into Trace::strings: counted in an array, not a hash map.
  std::vector<std::size_t> counts(trace.strings.size(), 0);
  for (const Kernel& k : kernels) {
    if (k.name >= counts.size()) counts.resize(std::size_t{k.name} + 1, 0);
    ++counts[k.name];
  }
  std::vector<std::pair<std::size_t, StringId>> anchors;
  for (std::size_t name = 0; name < counts.size(); ++name) {
    if (counts[name] >= kMinIterations) anchors.emplace_back(counts[name], static_cast<StringId>(name));
  }
  std::sort(anchors.begin(), anchors.end());
  if (anchors.size() > kMaxAnchors) anchors.resize(kMaxAnchors);
  AnchorOf anchor_of(counts.size(), -1);
  for (std::size_t a = 0; a < anchors.size(); ++a) anchor_of[anchors[a].second] = static_cast<std::int8_t>(a);
  // The anchors in chunks of at most a quarter of the kernels' segments (or the commonest anchor's
  // alone), so that the hashes held at once stay within what one anchor's took.
  std::vector<std::optional<Pattern>> patterns;
  const std::size_t budget = anchors.empty() ? 0 : std::max(anchors.back().first, kernels.size() / 4);
  for (std::size_t from = 0, to = 0; from < anchors.size(); from = to) {
    std::size_t held = anchors[from].first;
    for (to = from + 1; to < anchors.size() && held + anchors[to].first <= budget; ++to) held += anchors[to].first;
    const std::vector<std::vector<std::uint64_t>> hashes = segmentHashes(kernels, from, to, anchor_of);
    for (std::size_t a = from; a < to; ++a) patterns.push_back(patternAt(anchors[a].second, hashes[a - from]));
  }
  lengthsOfLast(kernels, anchor_of, patterns);
  std::optional<Pattern> best;  // of equal scores the first anchor's
  for (std::optional<Pattern>& p : patterns) {
    if (p && (!best || p->covered() > best->covered())) best = std::move(p);
  }
  return best ? iterationsOf(trace, kernels, *best) : IterationRun{};
}

}  // namespace cuoverlap::phases
