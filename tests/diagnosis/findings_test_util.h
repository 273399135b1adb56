// Looking up findings by id in test assertions.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "cuoverlap/diagnosis.h"

namespace cuoverlap::test {

inline std::vector<Finding> findingsOf(const Trace& trace, const Scope& scope = {}) {
  DeviceReport device;
  device.metrics.device_id = 0;
  return runFindings(trace, scope, {device});
}

inline std::set<std::string> idsOf(const std::vector<Finding>& findings) {
  std::set<std::string> ids;
  for (const Finding& f : findings) ids.insert(f.id);
  return ids;
}

inline const Finding* findingById(const std::vector<Finding>& findings, const std::string& id) {
  for (const Finding& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

}  // namespace cuoverlap::test
