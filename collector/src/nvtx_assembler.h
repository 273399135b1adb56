// Turns CUPTI's NVTX marker records into NVTX_EVENTS rows.
//
// CUPTI reports a range as two MARKER records (START, END) sharing an id, a mark as one
// INSTANTANEOUS record, and colour/category in a separate MARKER_DATA record with the same id.
// Ranges are emitted when their END arrives; marks are held until the end of the buffer they came
// in, so that their MARKER_DATA (which follows them) can be attached. A range whose START is
// attributed to a thread is a push/pop range (eventType 59), one attributed to the process a
// start/end range (60), unless setStartEndQuery says otherwise. Each new domain gets a DomainCreate row (75) and an id from 1; the default
// domain is 0, as in nsys. CUPTI attributes nvtxRangeStart ranges to the thread as well, so the
// live collector tells them apart by the range ids nvtxRangeStart* returned (setStartEndQuery).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "rows.h"

namespace cuoverlap::collector {

struct NvtxEvent {
  std::int32_t event_type = 0;  // schema::NvtxEventType
  std::uint64_t start = 0;
  std::optional<std::uint64_t> end;
  std::optional<std::uint32_t> range_id, color, category;
  std::string text;
  std::uint64_t global_tid = 0;
  std::optional<std::uint64_t> end_global_tid;
  std::uint32_t domain_id = 0;
};

class NvtxAssembler {
 public:
  // Tells whether a marker id belongs to nvtxRangeStart* (CUPTI marks those thread-scoped too).
  void setStartEndQuery(std::function<bool(std::uint32_t)> query) { is_start_end_ = std::move(query); }
  void onMarker(const MarkerRow& marker, std::vector<NvtxEvent>& out);
  void onMarkerData(const MarkerDataRow& data);
  // Releases the marks held back for their MARKER_DATA.
  void endOfBuffer(std::vector<NvtxEvent>& out);
  std::size_t unmatchedEnds() const { return unmatched_ends_; }
  std::size_t openRanges() const { return open_.size(); }

 private:
  std::uint32_t domainId(const char* domain, std::uint64_t timestamp, std::uint64_t global_tid,
                         std::vector<NvtxEvent>& out);
  void attachData(NvtxEvent& event, std::uint32_t marker_id);

  std::map<std::uint32_t, NvtxEvent> open_;  // by marker id
  std::unordered_map<std::uint32_t, MarkerDataRow> data_;
  std::vector<std::pair<std::uint32_t, NvtxEvent>> held_marks_;
  std::map<std::string, std::uint32_t> domains_;
  std::size_t unmatched_ends_ = 0;
  std::function<bool(std::uint32_t)> is_start_end_;
};

}  // namespace cuoverlap::collector
