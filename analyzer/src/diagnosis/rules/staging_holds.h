// Legacy-stream calls held in the driver behind other threads' staged pageable copies
// (pageable_memcpy.cpp, heldBehindStaging), for the what-ifs of the fixes that remove or keep
// such a hold.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {

// A synchronous copy or memset on the legacy stream whose call the driver held while other
// threads' staged pageable copies were in progress (heldBehindStaging): as recorded its op ran
// only after the last of them returned, and was submitted as it ran.
struct StagingHold {
  std::size_t position = 0;        // the held op
  std::vector<OrderEdge> edges;    // from each holding copy (lag: what its call did after it)
  Ns issued_at = 0;                // its recorded start: when the driver submitted it
};

// The view's ops held so, given the program's order `order` (its legacy barrier edges among them).
std::vector<StagingHold> stagingHolds(const DeviceView& view, const std::vector<OrderEdge>& order);

// `edges` and, after them, every hold's edges (the schedule as recorded, held ops waiting for
// their holders).
inline std::vector<OrderEdge> withHoldEdges(std::vector<OrderEdge> edges, const std::vector<StagingHold>& holds) {
  for (const StagingHold& h : holds) edges.insert(edges.end(), h.edges.begin(), h.edges.end());
  return edges;
}

// `model` with the holds of `holds` that `keep` selects issued at their recorded start, and their
// edges appended to `edges`.
template <typename Keep>
ScheduleModel keepHolds(const ScheduleModel& model, const std::vector<StagingHold>& holds, Keep keep,
                        std::vector<OrderEdge>& edges) {
  std::vector<std::pair<std::size_t, Ns>> issued;
  for (const StagingHold& h : holds) {
    if (!keep(h)) continue;
    issued.emplace_back(h.position, h.issued_at);
    edges.insert(edges.end(), h.edges.begin(), h.edges.end());
  }
  return issued.empty() ? model : model.withIssuedAt(issued);
}

}  // namespace cuoverlap::diagnosis
