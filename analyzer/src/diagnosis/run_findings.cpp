// runFindings: every rule over every device of the scope, the most costly findings first;
// runRules: every rule over one prepared view.
// Rule definitions: the file of each rule in rules/ and docs/findings.md.
#include <algorithm>

#include "cuoverlap/diagnosis.h"
#include "diagnosis/cost_ledger.h"
#include "diagnosis/device_view.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/waiting_threads.h"

namespace cuoverlap {

namespace diagnosis {

FindingsExplained runRules(const DeviceView& view, std::vector<Finding>& findings) {
  using RuleFn = std::optional<Finding> (*)(const DeviceView&);
  static constexpr RuleFn kRules[] = {
      findLegacyDefaultStream,    findSingleStream,
      findPageableMemcpy,         findSyncMemcpy,
      findSyncMemset,             findBlockingSyncCall,
      findEarlyResultWait,        findImplicitSyncCall,       findEventWaitSerialization,
      findHostLaunchBound,        findDeviceSaturatingKernel,
      findCrossStreamKernelWait,  findTransferBound,
      findExposedCommunication,
      findCommunicationSerialized,
      findHostBusy,               findModuleLoad,
      findManagedPageFaults,      findManySmallCopies,
  };
  std::vector<Finding> device_findings;
  for (RuleFn rule : kRules) {
    if (auto finding = rule(view)) device_findings.push_back(std::move(*finding));
  }
  if (auto finding = findLowOverlap(view, device_findings)) {
    device_findings.push_back(std::move(*finding));
  }
  FindingsExplained explained = chargeFindings(view, device_findings);
  explained.waiting_threads = waitingThreads(view);
  findings.insert(findings.end(), device_findings.begin(), device_findings.end());
  return explained;
}

}  // namespace diagnosis

void sortFindingsByCost(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(),
                   [](const Finding& a, const Finding& b) { return a.time_ns > b.time_ns; });
}

std::vector<Finding> runFindings(const Trace& trace, const Scope& scope,
                                 const std::vector<DeviceReport>& devices) {
  std::vector<Finding> findings;
  for (const DeviceReport& report : devices) {
    if (scope.device && *scope.device != report.metrics.device_id) continue;
    const diagnosis::DeviceView view(trace, scope, report.metrics.device_id);
    if (!view.empty()) diagnosis::runRules(view, findings);
  }
  sortFindingsByCost(findings);
  return findings;
}

}  // namespace cuoverlap
