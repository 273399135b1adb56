#include "diagnosis/communication_ops.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "diagnosis/median.h"

namespace cuoverlap::diagnosis {

CommunicationOps::CommunicationOps(const DeviceView& view)
    : view_(view), kernels_(view.trace()) {
  if (kernels_.noneInTrace()) return;
  std::vector<Interval> comm;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (view.kindAt(pos) != OpKind::kKernel) continue;
    const ScopedOp scoped = view.ops()[pos];
    const GpuOp& op = view.op(scoped);
    if (kernels_.isCommunication(op)) {
      positions_.push_back(pos);
      comm.push_back({scoped.start, scoped.end});
    }
  }
  // Most devices run no collective: then the compute intervals are never asked for.
  if (positions_.empty()) return;
  std::vector<Interval> compute;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (view.kindAt(pos) != OpKind::kKernel) continue;
    const ScopedOp scoped = view.ops()[pos];
    const GpuOp& op = view.op(scoped);
    if (!kernels_.isCommunication(op)) {
      compute.push_back({scoped.start, scoped.end});
    }
  }
  compute_union_ = unionOf(std::move(compute));
  comm_union_ = unionOf(std::move(comm));
}

namespace {

// |[start, end) ∩ U| for a sorted disjoint union U.
Ns coveredWithin(const std::vector<Interval>& disjoint, Ns start, Ns end) {
  auto it = std::upper_bound(disjoint.begin(), disjoint.end(), start,
                             [](Ns t, const Interval& iv) { return t < iv.end; });
  Ns covered = 0;
  for (; it != disjoint.end() && it->start < end; ++it) {
    covered += std::min(end, it->end) - std::max(start, it->start);
  }
  return covered;
}

}  // namespace

std::optional<CommunicationOps::OverlapEfficiency> CommunicationOps::measuredOverlapEfficiency() const {
  struct Runs {
    std::vector<Ns> alone;
    std::vector<std::pair<Ns, Ns>> beside;  // (duration, time under communication)
  };
  std::map<std::tuple<StringId, std::uint32_t, std::uint16_t>, Runs> groups;
  for (const ScopedOp scoped : view_.ops()) {
    const GpuOp& op = view_.op(scoped);
    if (op.kind != OpKind::kKernel || kernels_.isCommunication(op)) continue;
    const Ns duration = scoped.end - scoped.start;
    if (duration <= 0) continue;
    const Ns under = coveredWithin(comm_union_, scoped.start, scoped.end);
    Runs& runs = groups[{op.name, op.grid_blocks, op.block_threads}];
    if (under == 0) runs.alone.push_back(duration);
    if (2 * under >= duration) runs.beside.emplace_back(duration, under);
  }
  OverlapEfficiency result;
  for (auto& [key, runs] : groups) {
    if (runs.alone.empty() || runs.beside.empty()) continue;
    const Ns baseline = medianOf(std::move(runs.alone));
    for (const auto& [duration, under] : runs.beside) {
      result.extra_ns += duration - baseline;
      result.under_ns += under;
      ++result.kernels;
    }
  }
  if (result.kernels == 0 || result.under_ns <= 0) return std::nullopt;
  result.efficiency = std::clamp(
      1.0 - static_cast<double>(result.extra_ns) / static_cast<double>(result.under_ns), 0.0, 1.0);
  return result;
}

std::vector<Interval> CommunicationOps::exposedPieces(Ns start, Ns end) const {
  std::vector<Interval> pieces;
  // The first busy interval that ends after `start`; busy intervals are disjoint and sorted.
  auto it = std::upper_bound(compute_union_.begin(), compute_union_.end(), start,
                             [](Ns t, const Interval& iv) { return t < iv.end; });
  Ns cursor = start;
  for (; it != compute_union_.end() && it->start < end; ++it) {
    if (it->start > cursor) pieces.push_back({cursor, it->start});
    cursor = std::max(cursor, it->end);
  }
  if (cursor < end) pieces.push_back({cursor, end});
  return pieces;
}

Ns CommunicationOps::exposedTotal() const {
  std::vector<Interval> exposed;
  for (std::size_t pos : positions_) {
    const ScopedOp scoped = view_.ops()[pos];
    for (const Interval& piece : exposedPieces(scoped.start, scoped.end)) exposed.push_back(piece);
  }
  return totalLength(unionOf(std::move(exposed)));
}

namespace {

// NVTX push/pop and start/end ranges of `pid` (any thread: a framework's step range is often on
// another thread than the one that launches its collectives) open at `time`, by start.
std::vector<const NvtxRange*> openRanges(const Trace& trace, std::uint32_t pid, Ns time) {
  std::vector<const NvtxRange*> open;
  const auto last = std::upper_bound(trace.nvtx.begin(), trace.nvtx.end(), time,
                                     [](Ns t, const NvtxRange& r) { return t < r.start; });
  for (auto it = trace.nvtx.begin(); it != last; ++it) {
    if (it->pid != pid || it->end <= time || it->end == it->start) continue;
    open.push_back(&*it);
  }
  return open;
}

}  // namespace

std::string shortKernelName(std::string_view name) {
  if (name.rfind("void ", 0) == 0) name.remove_prefix(5);
  std::string out = "kernel ";
  int depth = 0;
  for (char c : name) {
    if (c == '(' && depth == 0) break;
    if (c == '<' && depth++ == 0) out += "<…>";
    if (c == '>' && depth > 0) { --depth; continue; }
    if (depth == 0 && c != '<') out += c;
  }
  return out;
}

std::string describeCollectiveInContext(const DeviceView& view, const GpuOp& op) {
  const Trace& trace = view.trace();
  std::string text = describeCollective(trace.str(op.name));
  const auto launch = view.launchCall(op);
  const std::vector<const NvtxRange*> open =
      launch ? openRanges(trace, view.call(*launch).pid, view.call(*launch).start)
             : openRanges(trace, op.pid, op.start);
  if (open.empty()) return text;
  const std::size_t first = open.size() > 3 ? open.size() - 3 : 0;
  text += " in NVTX ";
  for (std::size_t i = first; i < open.size(); ++i) {
    text += fmt::format("{}'{}'", i == first ? "" : " / ", trace.str(open[i]->text));
  }
  return text;
}

}  // namespace cuoverlap::diagnosis
