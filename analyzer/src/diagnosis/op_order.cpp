// Ops ordered by stream order and data-carrying event waits (definition: op_order.h).
#include "diagnosis/op_order.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_map>

#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {
namespace {

using Row = std::vector<std::int32_t>;  // per stream: a position on that stream (see below)

constexpr std::int32_t kNone = -1;

struct Streams {
  std::vector<std::uint32_t> of;              // per op: its stream's number
  std::vector<std::int32_t> index;            // per op: its place on its stream
  std::vector<std::vector<std::int32_t>> kernels_before;  // per stream: kernels among its first k ops
};

Streams numberStreams(const DeviceView& view) {
  Streams s;
  std::unordered_map<std::uint64_t, std::uint32_t> number;
  const auto& ops = view.ops();
  s.of.reserve(ops.size());
  s.index.reserve(ops.size());
  for (const ScopedOp scoped : ops) {
    const GpuOp& op = view.op(scoped);
    const auto [it, added] = number.emplace(DeviceView::streamKey(op), static_cast<std::uint32_t>(number.size()));
    if (added) s.kernels_before.push_back({0});
    auto& before = s.kernels_before[it->second];
    s.of.push_back(it->second);
    s.index.push_back(static_cast<std::int32_t>(before.size() - 1));
    before.push_back(before.back() + (op.kind == OpKind::kKernel ? 1 : 0));
  }
  return s;
}

// Incoming (to -> sources) and outgoing (from -> targets) edges of the waits that carry data:
// exact waits and waits with one candidate producer.
struct Edges {
  std::unordered_map<std::size_t, std::vector<std::size_t>> into;
  std::unordered_map<std::size_t, std::vector<std::size_t>> out_of;
};

Edges dataEdges(const DeviceView& view) {
  Edges edges;
  for (const StreamWait& wait : streamWaits(view)) {
    if (wait.waited_for.size() != 1 && !wait.exact) continue;
    if (!waitIsRealDependency(view, wait)) continue;
    for (std::size_t from : wait.waited_for) {
      if (from >= wait.released) continue;  // started later: orders nothing we can use
      edges.into[wait.released].push_back(from);
      edges.out_of[from].push_back(wait.released);
    }
  }
  return edges;
}

// Without data-carrying waits an op is ordered with exactly the ops of its own stream: with every
// kernel when no other stream has one. So with kernels on several streams no op is, and without
// kernels every op is. O(n) time, O(1) memory; the ops are read only where one stream has every
// kernel.
std::vector<bool> orderedByStreamsAlone(const DeviceView& view) {
  const auto& ops = view.ops();
  std::optional<std::uint64_t> kernel_stream;  // the stream of every kernel so far
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    if (view.kindAt(pos) != OpKind::kKernel) continue;
    const std::uint64_t stream = DeviceView::streamKey(view.op(ops[pos]));
    if (!kernel_stream) kernel_stream = stream;
    if (*kernel_stream != stream) return std::vector<bool>(ops.size(), false);
  }
  if (!kernel_stream) return std::vector<bool>(ops.size(), true);
  std::vector<bool> result;
  result.reserve(ops.size());
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    result.push_back(DeviceView::streamKey(view.op(ops[pos])) == *kernel_stream);
  }
  return result;
}

}  // namespace

std::vector<bool> orderedWithEveryKernel(const DeviceView& view) {
  const auto& ops = view.ops();
  const std::size_t n = ops.size();
  if (n == 0) return {};
  const Edges edges = dataEdges(view);
  if (edges.into.empty()) return orderedByStreamsAlone(view);
  const Streams streams = numberStreams(view);
  const std::size_t count = streams.kernels_before.size();
  std::int32_t total_kernels = 0;
  for (const auto& before : streams.kernels_before) total_kernels += before.back();
  if (n * count > kMaxClockEntries) return {};

  // Forward: per op, the last ancestor (itself included) on each stream; kernels up to it.
  std::vector<std::int32_t> ordered(n, 0);  // kernels ordered with the op, itself counted twice
  {
    std::vector<Row> current(count, Row(count, kNone));  // the last op seen on each stream
    std::unordered_map<std::size_t, Row> saved;          // rows of wait sources
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t s = streams.of[i];
      Row& row = current[s];  // becomes this op's row: no copy per op
      if (auto in = edges.into.find(i); in != edges.into.end()) {
        for (std::size_t from : in->second) {
          const Row& other = saved.at(from);
          for (std::size_t k = 0; k < count; ++k) row[k] = std::max(row[k], other[k]);
        }
      }
      row[s] = streams.index[i];
      for (std::size_t k = 0; k < count; ++k) {
        if (row[k] != kNone) ordered[i] += streams.kernels_before[k][static_cast<std::size_t>(row[k]) + 1];
      }
      if (edges.out_of.count(i) != 0) saved[i] = row;
    }
  }
  // Backward: per op, the first descendant (itself included) on each stream; kernels from it on.
  {
    constexpr std::int32_t kAfterAll = std::numeric_limits<std::int32_t>::max();
    std::vector<Row> current(count, Row(count, kAfterAll));
    std::unordered_map<std::size_t, Row> saved;  // rows of wait targets
    for (std::size_t i = n; i-- > 0;) {
      const std::uint32_t s = streams.of[i];
      Row& row = current[s];
      if (auto out = edges.out_of.find(i); out != edges.out_of.end()) {
        for (std::size_t to : out->second) {
          const Row& other = saved.at(to);
          for (std::size_t k = 0; k < count; ++k) row[k] = std::min(row[k], other[k]);
        }
      }
      row[s] = streams.index[i];
      for (std::size_t k = 0; k < count; ++k) {
        if (row[k] == kAfterAll) continue;
        const auto& before = streams.kernels_before[k];
        ordered[i] += before.back() - before[static_cast<std::size_t>(row[k])];
      }
      if (edges.into.count(i) != 0) saved[i] = row;
    }
  }
  std::vector<bool> result(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t self = view.op(ops[i]).kind == OpKind::kKernel ? 1 : 0;
    // Ancestors and descendants share only the op itself.
    result[i] = ordered[i] - 2 * self == total_kernels - self;
  }
  return result;
}

}  // namespace cuoverlap::diagnosis
