// The CUPTI adapter's translation half: one activity record in, plain rows out (rows.h).
// Only this file's .cpp and the other files in cupti/ include cupti.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rows.h"

namespace cuoverlap::collector {

// Turns the activity records of one completed CUPTI buffer into rows on `sink`.
// Returns the number of records read.
std::size_t translateBuffer(std::uint8_t* buffer, std::size_t valid_size, RowSink& sink);

// Translates one record (a CUpti_Activity*). Exposed so that tests can build records themselves.
void translateActivity(const void* cupti_record, RowSink& sink);

}  // namespace cuoverlap::collector
