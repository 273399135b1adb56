// Process names of an Nsight Systems export: the PROCESSES table (globalPid, pid, name; present
// in exports since about 2021) into Trace::processes, for the processes that have activity in the
// trace (the table also lists every process running on the machine during the capture).
// Entries another source already filled (our session table) keep what they have; only an empty
// command is completed.
#include <algorithm>
#include <map>
#include <set>

#include "reader_internal.h"

namespace cuoverlap::reader {
namespace {

constexpr std::string_view kProcessesTable = "PROCESSES";

std::set<std::uint32_t> activePids(const Trace& trace) {
  std::set<std::uint32_t> pids;
  for (const GpuOp& op : trace.ops) pids.insert(op.pid);
  for (const RuntimeCall& call : trace.runtime_calls) pids.insert(call.pid);
  for (const NvtxRange& range : trace.nvtx) pids.insert(range.pid);
  return pids;
}

}  // namespace

void readProcessNames(Context& ctx) {
  if (!ctx.db.hasTable(kProcessesTable)) return;
  sqlite::TableColumns columns(ctx.db, kProcessesTable);
  if (!columns.has("name") || (!columns.has("pid") && !columns.has("globalPid"))) return;
  const std::set<std::uint32_t> pids = activePids(ctx.trace);
  std::map<std::uint32_t, ProcessInfo> processes;
  for (ProcessInfo& info : ctx.trace.processes) processes[info.pid] = std::move(info);
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, kProcessesTable, {"globalPid", "pid"}, {}, {"name"}));
  while (row.step()) {
    if (row.isNull(2) || (row.isNull(0) && row.isNull(1))) continue;
    // The ids of ops and calls are pidOf(globalPid) (24 bits); the pid column is the fallback.
    const auto pid = row.isNull(0) ? static_cast<std::uint32_t>(row.int64(1) & 0xFFFFFF)
                                   : schema::pidOf(static_cast<std::uint64_t>(row.int64(0)));
    if (pids.count(pid) == 0) continue;
    ProcessInfo& info = processes[pid];
    info.pid = pid;
    if (info.command.empty()) info.command = std::string(row.text(2));
  }
  ctx.trace.processes.clear();
  for (auto& [pid, info] : processes) ctx.trace.processes.push_back(std::move(info));
}

}  // namespace cuoverlap::reader
