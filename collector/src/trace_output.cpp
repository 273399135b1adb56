#include "trace_output.h"

#include <sys/stat.h>
#include <unistd.h>

#include "trace_schema.h"

#ifndef CUOVERLAP_VERSION_STRING
#define CUOVERLAP_VERSION_STRING "unknown"
#endif

namespace cuoverlap::collector {
namespace {

// A per-process name already taken (a worker that inherited its rank's RANK, or a file left by an
// earlier run whose pid came back) gets a pid suffix; a fixed name is never shared (O_EXCL
// refuses the second process) and an existing file is never overwritten.
void avoidTakenPerProcessName(CollectorOptions& options) {
  struct stat info {};
  if (options.per_process && ::lstat(options.output_path.c_str(), &info) == 0) {
    options.output_path = withPidSuffix(options.output_path, getpid());
  }
}

}  // namespace

std::unique_ptr<TraceWriter> openTraceOutput(CollectorOptions& options, RunRegistration& registration,
                                             std::string& reason) {
  avoidTakenPerProcessName(options);
  if (!options.run_dir.empty()) {
    reason = registration.registerTrace(options.run_dir, options.output_path);
    if (!reason.empty()) return nullptr;
  }
  auto pid = static_cast<std::uint32_t>(getpid());
  try {
    try {
      return std::make_unique<TraceWriter>(options.output_path, pid);
    } catch (const WriterError&) {
      // Another process of the same rank took the name between the check and the creation.
      struct stat info {};
      if (!options.per_process || ::lstat(options.output_path.c_str(), &info) != 0) throw;
      options.output_path = withPidSuffix(options.output_path, getpid());
      registration.updateTracePath(options.output_path);
      return std::make_unique<TraceWriter>(options.output_path, pid);
    }
  } catch (const std::exception& e) {
    registration.withdraw();
    reason = e.what();
    return nullptr;
  }
}

std::vector<std::pair<std::string, std::string>> sessionStartValues(
    const CollectorOptions& options, std::uint64_t start_ns, const std::string& cupti_version,
    const std::string& driver_version) {
  namespace key = schema::session_key;
  std::vector<std::pair<std::string, std::string>> values = {
      {std::string(key::kSchema), std::string(schema::kTraceSchemaId)},
      {std::string(key::kCommand), options.command},
      {std::string(key::kPid), std::to_string(getpid())},
      {std::string(key::kParentPid), std::to_string(getppid())},
      {std::string(key::kHost), options.host},
      {std::string(key::kApiTracing), options.api == ApiTracing::kAll ? "all" : "lean"},
      {std::string(key::kStartNs), std::to_string(start_ns)},
      {std::string(key::kCollectorVersion), CUOVERLAP_VERSION_STRING},
      {std::string(key::kCuptiVersion), cupti_version},
      {std::string(key::kDriverVersion), driver_version},
  };
  auto optional = [&values](std::string_view name, const std::optional<int>& value) {
    if (value) values.emplace_back(std::string(name), std::to_string(*value));
  };
  optional(key::kRank, options.rank.rank);
  optional(key::kLocalRank, options.rank.local_rank);
  optional(key::kWorldSize, options.rank.world_size);
  return values;
}

}  // namespace cuoverlap::collector
