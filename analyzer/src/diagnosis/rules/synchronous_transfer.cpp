// Cost of a synchronous copy or memset (definition: synchronous_transfer.h).
#include "diagnosis/rules/synchronous_transfer.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cuoverlap/intervals.h"
#include "cuoverlap/units.h"
#include "diagnosis/rules/asynchronous_fix.h"
#include "diagnosis/rules/host_blocking_cost.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {
namespace {

// Without runtime data the host is known to have blocked at least while the op ran: the idle time
// after it, up to the next op, capped at the op's duration.
Interval chargeWithoutCall(const DeviceView& view, const ScopedOp& op) {
  const auto next = view.firstOpStartingAtOrAfter(op.end);
  if (!next) return {};
  const Ns end = std::min(view.ops()[*next].start, op.end + (op.end - op.start));
  return {op.end, std::max(op.end, op.end + view.idleWithin(op.end, end))};
}

// addSynchronousTransfers with instances charged under `floor` left out; with no builder, only the
// total charged to the instances kept. Returns that total.
Ns addTransfers(const DeviceView& view, OpKind kind, FindingBuilder* builder, Ns floor) {
  Ns total = 0;
  const std::vector<HostBlockingCharge> charges = chargeHostBlockingCalls(view);
  const auto& ops = view.ops();
  for (const std::uint32_t pos : view.synchronousTransferPositions()) {
    if (pos == 0 || view.kindAt(pos) != kind) continue;
    const GpuOp& op = view.op(ops[pos]);
    Interval charged;
    if (const auto call = view.launchCall(op)) {
      const HostBlockingCharge* charge = chargeOf(charges, *call);
      if (charge == nullptr) continue;
      charged = charge->idle;
    } else {
      charged = chargeWithoutCall(view, ops[pos]);
    }
    if (charged.length() < floor) continue;
    total += charged.length();
    if (builder == nullptr) continue;
    const std::string what =
        charged.length() < kMinimumCostNs
            ? " blocked the host, and other threads' calls behind it, while the device stayed busy"
            : " blocked the host; the device idled " + units::formatDuration(charged.length()) +
                  " that the next op could have been spared";
    builder->add(charged, evidenceForOp(view, op, describeOp(view, op) + what));
  }
  return total;
}

}  // namespace

void addSynchronousTransfers(const DeviceView& view, OpKind kind, FindingBuilder& builder) {
  addTransfers(view, kind, &builder, kMinimumCostNs);
}

std::optional<Ns> addRunOfSynchronousTransfers(const DeviceView& view, OpKind kind,
                                               ApiKind sync_kind, FindingBuilder& builder) {
  if (builder.count() != 0) return std::nullopt;
  if (addTransfers(view, kind, nullptr, 0) < kMinimumCostNs) return std::nullopt;
  const std::optional<Ns> what_if = asynchronousFixSaving(view, sync_kind);
  if (what_if && *what_if >= kMinimumCostNs) addTransfers(view, kind, &builder, 0);
  return what_if;
}

Ns synchronousCallsNs(const DeviceView& view, OpKind kind) {
  std::vector<std::pair<Ns, Ns>> calls;
  for (const std::uint32_t pos : view.synchronousTransferPositions()) {
    if (pos == 0 || view.kindAt(pos) != kind) continue;
    if (const auto call = view.launchCall(view.op(view.ops()[pos]))) {
      // The call's own time, and where its op began after the call returned, the time the op
      // waited on the device (behind the legacy stream's barrier): its consumer waited as long.
      const RuntimeCall& c = view.call(*call);
      calls.emplace_back(c.start, std::max(c.end, view.ops()[pos].start));
    }
  }
  std::sort(calls.begin(), calls.end());
  UnionLength held;
  for (const auto& [start, end] : calls) held.add(start, end);
  return held.length();
}

std::optional<Ns> addHeldSynchronousTransfers(const DeviceView& view, OpKind kind, ApiKind sync_kind,
                                              FindingBuilder& builder) {
  if (builder.count() != 0) return std::nullopt;
  const Ns held = synchronousCallsNs(view, kind);
  if (held == 0) return std::nullopt;
  const std::optional<Ns> what_if = asynchronousFixSaving(view, sync_kind);
  if (what_if && *what_if >= kMinimumCostNs && *what_if <= held) addTransfers(view, kind, &builder, 0);
  return what_if;
}

}  // namespace cuoverlap::diagnosis
