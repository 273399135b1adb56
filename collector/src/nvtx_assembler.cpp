#include "nvtx_assembler.h"

#include "trace_schema.h"

namespace cuoverlap::collector {

std::uint32_t NvtxAssembler::domainId(const char* domain, std::uint64_t timestamp,
                                      std::uint64_t global_tid, std::vector<NvtxEvent>& out) {
  if (domain == nullptr || *domain == '\0') return 0;
  auto [it, inserted] = domains_.emplace(domain, static_cast<std::uint32_t>(domains_.size() + 1));
  if (inserted) {
    NvtxEvent create;
    create.event_type = static_cast<std::int32_t>(schema::NvtxEventType::kDomainCreate);
    create.start = timestamp;
    create.text = domain;
    create.global_tid = global_tid;
    create.domain_id = it->second;
    out.push_back(std::move(create));
  }
  return it->second;
}

void NvtxAssembler::attachData(NvtxEvent& event, std::uint32_t marker_id) {
  auto it = data_.find(marker_id);
  if (it == data_.end()) return;
  if (it->second.has_color) event.color = it->second.color;
  if (it->second.category != 0) event.category = it->second.category;
  data_.erase(it);
}

void NvtxAssembler::onMarker(const MarkerRow& marker, std::vector<NvtxEvent>& out) {
  std::uint64_t tid = schema::encodeGlobalTid(marker.process_id, marker.thread_id);
  if (marker.phase == MarkerPhase::kEnd) {
    auto it = open_.find(marker.id);
    if (it == open_.end()) {
      ++unmatched_ends_;
      return;
    }
    NvtxEvent range = std::move(it->second);
    open_.erase(it);
    range.end = marker.timestamp;
    range.end_global_tid = tid;
    attachData(range, marker.id);
    out.push_back(std::move(range));
    return;
  }
  NvtxEvent event;
  event.start = marker.timestamp;
  event.text = marker.name != nullptr ? marker.name : "";
  event.global_tid = tid;
  event.domain_id = domainId(marker.domain, marker.timestamp, tid, out);
  if (marker.phase == MarkerPhase::kInstant) {
    event.event_type = static_cast<std::int32_t>(schema::NvtxEventType::kMark);
    held_marks_.emplace_back(marker.id, std::move(event));
    return;
  }
  bool start_end = !marker.thread_scoped || (is_start_end_ && is_start_end_(marker.id));
  event.event_type = static_cast<std::int32_t>(start_end ? schema::NvtxEventType::kStartEndRange
                                                         : schema::NvtxEventType::kPushPopRange);
  event.range_id = marker.id;
  open_[marker.id] = std::move(event);
}

void NvtxAssembler::onMarkerData(const MarkerDataRow& data) { data_[data.id] = data; }

void NvtxAssembler::endOfBuffer(std::vector<NvtxEvent>& out) {
  for (auto& [id, mark] : held_marks_) {
    attachData(mark, id);
    out.push_back(std::move(mark));
  }
  held_marks_.clear();
}

}  // namespace cuoverlap::collector
