// Merges the per-process trace files of one job (written by the collector into `record`'s run
// directory) into one trace file, as Nsight Systems writes one report for all processes.
//
// Ids that are per process in CUPTI are made unique across the merged file, so that a reader that
// joins without the pid still joins correctly:
//   - StringIds: one table; each part's ids are remapped by string value (kernel names, API names,
//     overhead names, NVTX textId/jsonTextId).
//   - correlationId (kernels, copies, memsets, API calls, synchronizations, CUDA events): each
//     part after the first is offset by the largest id of the parts before it (0 stays 0: "none").
//     The first part keeps CUPTI's ids; a single-process trace is unchanged.
//   - NVTX domainId (named domains, from 1): offset the same way.
// Rows that carry the process (globalPid, globalTid, processId) keep it. TARGET_INFO_GPU holds one
// row per device id. Each part's CUOVERLAP_SESSION goes to CUOVERLAP_PROCESS_SESSION under its
// pid; CUOVERLAP_SESSION holds the job's totals (schema/trace_schema.h, session_key::kProcesses).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cuoverlap::schema {

struct MergeOptions {
  std::string command;        // the job's command line (record's)
  std::uint32_t root_pid = 0;  // the process record started
  bool replace = false;       // replace an existing output (rename over it, never through it)
};

// Writes `output` from `parts` (each a single-process collector trace; incomplete ones, from a
// killed process, are merged with what they hold). The output appears only complete: it is
// written under a temporary name in the same directory, then linked (or, with replace, renamed)
// into place; a symlink at `output` is never followed. Throws std::runtime_error with a
// one-line reason; then no output file exists (and the parts are untouched).
void mergeTraceFiles(const std::vector<std::string>& parts, const std::string& output,
                     const MergeOptions& options);

// The same result for one process without copying: `part` (a collector trace in the same file
// system as `output`) gets the merged file's session tables and is moved to `output`. Modifies
// and consumes `part`; use only on a file of one's own run directory.
void adoptTraceFile(const std::string& part, const std::string& output, const MergeOptions& options);

}  // namespace cuoverlap::schema
