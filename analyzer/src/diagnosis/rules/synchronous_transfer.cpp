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

// A synchronous copy or memset of `kind` with what it charges (addSynchronousTransfers).
struct TransferCharge {
  std::uint32_t position = 0;
  Interval charged;
};

std::vector<TransferCharge> transferCharges(const DeviceView& view, OpKind kind) {
  std::vector<TransferCharge> out;
  if (view.synchronousTransferPositions().empty()) return out;
  const std::vector<HostBlockingCharge> charges = chargeHostBlockingCalls(view);
  const auto& ops = view.ops();
  for (const std::uint32_t pos : view.synchronousTransferPositions()) {
    if (pos == 0 || view.kindAt(pos) != kind) continue;
    if (const auto call = view.launchCall(view.op(ops[pos]))) {
      const HostBlockingCharge* charge = chargeOf(charges, *call);
      if (charge != nullptr) out.push_back({pos, charge->idle});
    } else {
      out.push_back({pos, chargeWithoutCall(view, ops[pos])});
    }
  }
  return out;
}

// Adds the transfers charged at least `floor` to the finding.
void addTransfers(const DeviceView& view, const std::vector<TransferCharge>& transfers,
                  FindingBuilder& builder, Ns floor) {
  for (const TransferCharge& t : transfers) {
    if (t.charged.length() < floor) continue;
    const GpuOp& op = view.op(view.ops()[t.position]);
    const std::string what =
        t.charged.length() < kMinimumCostNs
            ? " blocked the host, and other threads' calls behind it, while the device stayed busy"
            : " blocked the host; the device idled " + units::formatDuration(t.charged.length()) +
                  " that the next op could have been spared";
    builder.add(t.charged, evidenceForOp(view, op, describeOp(view, op) + what));
  }
}

}  // namespace

void addSynchronousTransfers(const DeviceView& view, OpKind kind, FindingBuilder& builder) {
  addTransfers(view, transferCharges(view, kind), builder, kMinimumCostNs);
}

std::optional<Ns> addRunOfSynchronousTransfers(const DeviceView& view, OpKind kind,
                                               ApiKind sync_kind, FindingBuilder& builder) {
  if (builder.count() != 0) return std::nullopt;
  const std::vector<TransferCharge> transfers = transferCharges(view, kind);
  Ns total = 0;
  for (const TransferCharge& t : transfers) total += t.charged.length();
  if (total < kMinimumCostNs) return std::nullopt;
  const std::optional<Ns> what_if = asynchronousFixSaving(view, sync_kind);
  if (what_if && *what_if >= kMinimumCostNs) addTransfers(view, transfers, builder, 0);
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
  if (what_if && *what_if >= kMinimumCostNs && *what_if <= held) {
    addTransfers(view, transferCharges(view, kind), builder, 0);
  }
  return what_if;
}

}  // namespace cuoverlap::diagnosis
