// CUPTI numbers memory kinds 0 unknown, 1 pageable, 2 pinned, 3 device, 4 array, 5 managed,
// 6 device static, 7 managed static; the nsys export (schema::MemKind) puts unknown last.
#pragma once

#include <cstdint>

#include "trace_schema.h"

namespace cuoverlap::collector {

constexpr std::uint8_t nsysMemoryKind(std::uint32_t cupti_kind) {
  if (cupti_kind == 0 || cupti_kind > 7) return static_cast<std::uint8_t>(schema::MemKind::kUnknown);
  return static_cast<std::uint8_t>(cupti_kind - 1);
}

}  // namespace cuoverlap::collector
