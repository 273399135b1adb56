// Lookups over a Trace that would otherwise scan the whole trace once per device or per op (a
// trace with 64k devices or contexts made those scans quadratic). Each index is built on first
// use in one pass, cached in Trace::index_cache, and rebuilt when the vector it describes was
// reallocated or resized (hand-built traces in tests change them between calls).
#pragma once

#include <cstdint>
#include <vector>

#include "cuoverlap/model.h"

namespace cuoverlap {

// Indices into Trace::ops of the ops on one device, in the order of Trace::ops (4 bytes per op).
// UserError beyond 2^32 ops.
const std::vector<std::uint32_t>& opsOnDevice(const Trace& trace, std::uint16_t device_id);

// The ids of the devices that have ops, ascending.
std::vector<std::uint16_t> devicesWithOps(const Trace& trace);

// Whether stream `stream_id` is the null (legacy default) stream of context `context_id` of
// process `pid` by Trace::contexts; a context recorded with pid 0 matches any process.
bool isContextNullStream(const Trace& trace, std::uint32_t pid, std::uint32_t context_id,
                         std::uint32_t stream_id);

// Per StringId: 1 when the string is a communication kernel name (communication.h's rule), so
// that every metrics call, window and ledger charge does not test every string again.
const std::vector<std::uint8_t>& communicationKernelNames(const Trace& trace);

}  // namespace cuoverlap
