// Where one process's trace goes: registration in record's run directory (run_registry.h), the
// per-process name clash rule, the file itself, and the session's start rows. Shared by the live
// collector (collector.cpp) and the CPU tests, which play traced processes without a GPU.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collector_options.h"
#include "run_registry.h"
#include "trace_writer.h"

namespace cuoverlap::collector {

// Registers (when options.run_dir is set) and creates the file at options.output_path (adjusted
// first: a per-process name already taken gets a pid suffix). Returns the writer, or nullptr with
// `reason` set; nothing is left behind on failure.
std::unique_ptr<TraceWriter> openTraceOutput(CollectorOptions& options, RunRegistration& registration,
                                             std::string& reason);

// The session rows known at start: schema, command, pid, ppid, host, rank/local rank/world size,
// api tracing, start_ns, versions.
std::vector<std::pair<std::string, std::string>> sessionStartValues(
    const CollectorOptions& options, std::uint64_t start_ns, const std::string& cupti_version,
    const std::string& driver_version);

}  // namespace cuoverlap::collector
