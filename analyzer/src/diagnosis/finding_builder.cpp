#include "cuoverlap/kernel_name.h"
#include "cuoverlap/units.h"
#include "diagnosis/finding_builder.h"

#include <algorithm>

#include <fmt/format.h>

namespace cuoverlap::diagnosis {
namespace {

bool sameEvidence(const Evidence& a, const Evidence& b) {
  return a.api == b.api && a.correlation_id == b.correlation_id && a.time == b.time &&
         a.detail == b.detail;
}

// The `limit` most costly examples, in time order, each shown once (several instances may point
// at the same call: three waits that held back one launch).
std::vector<std::pair<Ns, Evidence>> mostCostlyDistinct(std::vector<std::pair<Ns, Evidence>> examples,
                                                        std::size_t limit) {
  std::stable_sort(examples.begin(), examples.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::pair<Ns, Evidence>> kept;
  for (auto& example : examples) {
    if (kept.size() == limit) break;
    const bool seen = std::any_of(kept.begin(), kept.end(), [&](const auto& k) {
      return sameEvidence(k.second, example.second);
    });
    if (!seen) kept.push_back(std::move(example));
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [](const auto& a, const auto& b) { return a.second.time < b.second.time; });
  return kept;
}

}  // namespace

FindingBuilder::FindingBuilder(const DeviceView& view, std::string id, Severity severity)
    : view_(view), id_(std::move(id)), severity_(severity) {}

void FindingBuilder::add(Ns cost, Evidence evidence) { addInstance(cost, cost, std::move(evidence)); }

void FindingBuilder::add(Interval delayed, Evidence evidence) {
  delayed_.push_back(delayed);
  addInstance(0, delayed.length(), std::move(evidence));
}

void FindingBuilder::addIdle(Interval window, Evidence evidence) {
  Ns idle = 0;
  const auto& gaps = view_.idle();
  auto first = std::lower_bound(gaps.begin(), gaps.end(), window.start,
                                [](const Interval& gap, Ns t) { return gap.end <= t; });
  for (auto it = first; it != gaps.end(); ++it) {
    const Interval& gap = *it;
    if (gap.start >= window.end) break;
    const Interval part{std::max(gap.start, window.start), std::min(gap.end, window.end)};
    delayed_.push_back(part);
    idle += part.length();
  }
  addInstance(0, idle, std::move(evidence));
}

void FindingBuilder::addInstance(Ns cost, Ns weight, Evidence evidence) {
  ++count_;
  time_ += cost;
  // The weight goes in with the example: pruning below reorders examples_ by time.
  examples_.emplace_back(weight, std::move(evidence));
  // Keep memory bounded on huge traces: only the most costly examples can be shown.
  if (examples_.size() > 4 * kMaxEvidence) {
    examples_ = mostCostlyDistinct(std::move(examples_), kMaxEvidence);
  }
}

Ns FindingBuilder::time() const {
  if (saving_) return *saving_;
  return time_ + totalLength(unionOf(delayed_));
}

std::optional<Finding> FindingBuilder::build(std::string summary, std::string advice) const {
  if (count_ == 0) return std::nullopt;
  Finding finding;
  finding.id = id_;
  finding.severity = severity_;
  const Ns time = this->time();
  const Ns span = view_.spanLength();
  if (severity_ == Severity::kWarning && span > 0 &&
      static_cast<double>(time) >= kErrorShareOfSpan * static_cast<double>(span)) {
    finding.severity = Severity::kError;
  }
  finding.base_severity = severity_;
  finding.estimated_ns = time;
  for (const Interval& stretch : unionOf(delayed_)) {
    finding.cost_region.emplace_back(stretch.start, stretch.end);
  }
  finding.ideal_reduction_ns = ideal_reduction_;
  finding.fix_alone_ns = fix_alone_;
  finding.fixes = fixes_;
  finding.device_id = view_.deviceId();
  finding.count = count_;
  finding.time_ns = time + ideal_reduction_;
  finding.summary = std::move(summary);
  finding.advice = std::move(advice);
  for (auto& example : mostCostlyDistinct(examples_, kMaxEvidence)) {
    finding.evidence.push_back(std::move(example.second));
  }
  return finding;
}

namespace {

// A kernel name as evidence prose shows it: template arguments and parameters elided
// ("void ns::k<…>(…)") and at most 160 bytes, so that a name of a megabyte is not repeated in every
// piece of evidence (issue 13); the full name stays in the trace.
std::string evidenceName(std::string_view name) {
  constexpr std::size_t kMaxBytes = 160;
  std::string out = shortKernelName(name);
  if (out.size() > kMaxBytes) {
    std::size_t cut = kMaxBytes;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // UTF-8 boundary
    out = out.substr(0, cut) + "…";
  }
  return out;
}

}  // namespace

std::string describeOp(const DeviceView& view, const GpuOp& op) {
  switch (op.kind) {
    case OpKind::kKernel: return "kernel " + evidenceName(view.trace().str(op.name));
    case OpKind::kMemset: return "memset " + units::formatBytes(op.bytes);
    case OpKind::kMemcpy: break;
  }
  static constexpr const char* kDirections[] = {"",     "HtoD", "DtoH", "HtoA", "AtoH",
                                                "AtoA", "AtoD", "DtoA", "DtoD", "HtoH",
                                                "PtoP", "HtoD", "DtoH", "DtoD"};
  const auto kind = static_cast<std::size_t>(op.copy_kind);
  const char* direction = kind < std::size(kDirections) ? kDirections[kind] : "";
  return fmt::format("memcpy {}{}{}", direction, *direction ? " " : "", units::formatBytes(op.bytes));
}

Evidence evidenceForOp(const DeviceView& view, const GpuOp& op, std::string detail) {
  Evidence evidence;
  if (auto call = view.launchCall(op)) {
    evidence.api = std::string(view.callName(*call));
  } else {
    evidence.api = describeOp(view, op);
  }
  evidence.correlation_id = op.correlation_id;
  evidence.stream_id = op.stream_id;
  evidence.time = op.start;
  evidence.detail = std::move(detail);
  return evidence;
}

Evidence evidenceForCall(const DeviceView& view, std::size_t call, std::uint32_t stream_id,
                         std::string detail) {
  Evidence evidence;
  evidence.api = std::string(view.callName(call));
  evidence.correlation_id = view.call(call).correlation_id;
  evidence.stream_id = stream_id;
  evidence.has_stream = stream_id != 0;
  evidence.time = view.call(call).start;
  evidence.detail = std::move(detail);
  return evidence;
}

}  // namespace cuoverlap::diagnosis
