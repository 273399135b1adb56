// Accumulates one finding's instances: count, estimated cost and the most costly examples.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuoverlap/intervals.h"
#include "cuoverlap/report.h"
#include "diagnosis/device_view.h"

namespace cuoverlap::diagnosis {

inline constexpr std::size_t kMaxEvidence = 5;
// Findings whose cost reaches this share of the device span are errors (docs/findings.md).
inline constexpr double kErrorShareOfSpan = 0.25;

class FindingBuilder {
 public:
  FindingBuilder(const DeviceView& view, std::string id, Severity severity);

  // One instance of the finding: what it cost and an example a user can look up.
  void add(Ns cost, Evidence evidence);
  // One instance whose cost is a stretch of device time that other instances may overlap (ops
  // of several streams delayed at once): the finding's time counts the union of these stretches,
  // never more than the time that passed.
  void add(Interval delayed, Evidence evidence);
  // One instance whose cost is the device idle time inside `window` (a host-side delay): the idle
  // stretches are its place in the cost ledger.
  void addIdle(Interval window, Evidence evidence);
  // A stretch where the finding's cost lies that belongs to no one instance (ops held back by an
  // instance), for the ledger; counts toward time() like add(Interval, ...) but adds no instance.
  void addRegion(Interval stretch) { delayed_.push_back(stretch); }
  // The finding's cost when it is not the time of its instances but the span a fix would save
  // (serialization findings: diagnosis/schedule_estimate.h). The stretches added with
  // add(Interval, ...) stay the place the ledger charges it in.
  void estimateSaving(Ns saving) { saving_ = saving; }
  // How much a fix would also lower the device's ideal (ops made faster, not overlapped):
  // Finding::ideal_reduction_ns, charged outside the ledger's cap.
  void lowerIdeal(Ns reduction) { ideal_reduction_ = reduction; }
  // What the finding's fix alone saves when that is not the cost the ledger charges
  // (Finding::fix_alone_ns).
  void fixAlone(Ns saving) { fix_alone_ = saving; }
  // Where the advice names several fixes: each one's saving, the recommended one first
  // (Finding::fixes).
  void fixSaves(std::vector<FixSaving> fixes) { fixes_ = std::move(fixes); }
  std::uint64_t count() const { return count_; }
  // The estimated cost so far: the saving when estimated, else the scalar costs plus the union of
  // the delayed stretches.
  Ns time() const;

  // The finding, or nothing when no instance was added.
  std::optional<Finding> build(std::string summary, std::string advice) const;

 private:
  // Counts an instance that adds `cost` to the scalar costs, keeping `evidence` as an example
  // ranked by `weight` (how much of the device's time it stands for).
  void addInstance(Ns cost, Ns weight, Evidence evidence);

  const DeviceView& view_;
  std::string id_;
  Severity severity_;
  std::uint64_t count_ = 0;
  Ns time_ = 0;
  std::vector<Interval> delayed_;
  std::optional<Ns> saving_;
  Ns ideal_reduction_ = 0;
  Ns fix_alone_ = -1;
  std::vector<FixSaving> fixes_;
  std::vector<std::pair<Ns, Evidence>> examples_;
};

// Evidence naming the call that launched `op` (or the op's own name without runtime data).
Evidence evidenceForOp(const DeviceView& view, const GpuOp& op, std::string detail);
// Evidence naming a runtime call; `stream_id` is 0 when the call has no stream (the evidence then
// names none).
Evidence evidenceForCall(const DeviceView& view, std::size_t call, std::uint32_t stream_id,
                         std::string detail);
// "kernel NAME" / "memcpy HtoD 4096 B" / "memset 4096 B": how an op is named in details.
std::string describeOp(const DeviceView& view, const GpuOp& op);

}  // namespace cuoverlap::diagnosis
