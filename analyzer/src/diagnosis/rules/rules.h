// The finding rules: one file each, one entry point each, the definition at the top of the file
// and in docs/findings.md. A rule that lacks the data it needs returns nothing.
#pragma once

#include <optional>
#include <vector>

#include "cuoverlap/report.h"
#include "diagnosis/device_view.h"

namespace cuoverlap::diagnosis {

// Costs below this are noise (launch jitter, timer resolution); same rationale as the default gap
// threshold in docs/gaps.md.
inline constexpr Ns kMinimumCostNs = 10'000;
// A finding whose whole saving is below this is not reported: the floor on a total, where
// kMinimumCostNs is the floor on one instance (a stall, a stretch). Many instances each under 10 us
// add up to a saving the lab measures (docs/findings.md, "Conventions").
inline constexpr Ns kMinimumClaimNs = 5'000;
// exposed-communication fires from this share of the device span (also after the job analysis
// leaves a rank's wait for late peers out, job/peer_wait.h).
inline constexpr double kExposedCommunicationMinShare = 0.05;

std::optional<Finding> findLegacyDefaultStream(const DeviceView& view);
std::optional<Finding> findSingleStream(const DeviceView& view);
std::optional<Finding> findPageableMemcpy(const DeviceView& view);
std::optional<Finding> findSyncMemcpy(const DeviceView& view);
std::optional<Finding> findSyncMemset(const DeviceView& view);
std::optional<Finding> findBlockingSyncCall(const DeviceView& view);
std::optional<Finding> findEarlyResultWait(const DeviceView& view);
std::optional<Finding> findImplicitSyncCall(const DeviceView& view);
std::optional<Finding> findEventWaitSerialization(const DeviceView& view);
std::optional<Finding> findHostLaunchBound(const DeviceView& view);
std::optional<Finding> findDeviceSaturatingKernel(const DeviceView& view);
std::optional<Finding> findCrossStreamKernelWait(const DeviceView& view);
std::optional<Finding> findTransferBound(const DeviceView& view);
std::optional<Finding> findExposedCommunication(const DeviceView& view);
std::optional<Finding> findCommunicationSerialized(const DeviceView& view);
std::optional<Finding> findHostBusy(const DeviceView& view);
std::optional<Finding> findModuleLoad(const DeviceView& view);
std::optional<Finding> findManagedPageFaults(const DeviceView& view);
std::optional<Finding> findManySmallCopies(const DeviceView& view);
// Runs last: names which of the device's `earlier` findings explain the lost overlap.
std::optional<Finding> findLowOverlap(const DeviceView& view, const std::vector<Finding>& earlier);

// Every rule above over one view, in this order, then the cost ledger over the device's findings
// (diagnosis/cost_ledger.h); appends the findings (unsorted) and returns what they explain.
FindingsExplained runRules(const DeviceView& view, std::vector<Finding>& findings);

}  // namespace cuoverlap::diagnosis
