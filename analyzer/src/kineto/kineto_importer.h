// The Kineto (PyTorch profiler JSON) importer: the second importer in front of the one model,
// beside the SQLite reader (analyzer/src/reader*.cpp). readTrace() (reader.cpp) sends a file
// here when it starts with gzip's magic bytes or with '{'.
//
// Mapping (docs/schema.md, "Kineto traces"):
//   cat kernel / gpu_memcpy / gpu_memset  -> GpuOp (device, context, stream, correlation from
//       args; copy direction and memory kinds from the name "Memcpy HtoD (Pageable -> Device)")
//   cat cuda_runtime / cuda_driver        -> RuntimeCall (pid, tid, args.correlation)
//   cat cuda_sync                         -> SyncEvent
//   cat user_annotation, ProfilerStep#N   -> NVTX push/pop range on its host thread
//   cat gpu_user_annotation               -> NVTX start/end range, domain "gpu_user_annotation"
//   process_name metadata, distributedInfo (rank, world_size) -> Trace::processes
//   deviceProperties                      -> Trace::devices
// Timestamps: ts/dur in µs as written, converted to integer ns digit by digit, plus
// baseTimeNanoseconds when the file has one (Kineto >= 2023 writes ts relative to it).
// GPU events carry the device as pid; an op's process is the one whose runtime call has the
// same correlation id, else the trace's main host process.
#pragma once

#include <string>

#include "cuoverlap/model.h"

namespace cuoverlap::kineto {

// True when the file's first bytes are gzip's magic or, after a UTF-8 byte order mark and
// whitespace, '{' or '['.
bool looksLikeJson(const std::string& path);

// Fills `trace` (path and source already set) from the file; vectors come back unsorted.
// Throws UserError on bad input.
void importTrace(const std::string& path, Trace& trace);

}  // namespace cuoverlap::kineto
