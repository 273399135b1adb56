// Folding per-instance analyses into one range summary without keeping the instances: the sums per
// device (range_sum.cpp's definitions), the per-instance ratios for the spreads, and the findings
// merged per (id, device) with the number of instances each fired in and its fix's saving in each.
// O(instances) doubles per device and a pair per finding per instance it fired in; no DeviceReport
// per instance is kept.
#pragma once

#include <cstddef>
#include <map>
#include <utility>
#include <vector>

#include "cuoverlap/report.h"

namespace cuoverlap {

// Median, p10, p90 (nearest rank) and max; all 0 when empty.
DurationSpread durationSpread(const std::vector<Ns>& values);

class RangeAggregator {
 public:
  explicit RangeAggregator(std::size_t instances) : instances_(instances) {}

  // One device's analysis of instance `instance`, with that device's findings.
  void add(std::size_t instance, const DeviceReport& device, const std::vector<Finding>& findings);

  std::vector<DeviceReport> devices() const;        // summed, ratios recomputed
  std::vector<RangeDeviceSpread> spreads() const;   // per-instance ratios' median and p90
  std::vector<Finding> findings() const;            // merged, most costly first

 private:
  struct PerDevice {
    DeviceReport sum;
    double hidden_weighted = 0.0;
    std::vector<double> overlap, hidden, efficiency, idle;
  };
  struct Merged {
    Finding finding;
    // Its fix's saving in each instance it fired in (the others saved 0), with that instance: one
    // entry an instance, so their number is the instances it fired in.
    std::vector<std::pair<std::size_t, Ns>> savings;
  };

  std::size_t instances_;
  std::map<std::uint16_t, PerDevice> devices_;
  std::vector<Merged> merged_;
};

}  // namespace cuoverlap
