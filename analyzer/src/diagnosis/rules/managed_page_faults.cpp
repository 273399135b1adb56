// managed-page-faults: kernels that ran while the driver migrated their managed (unified) memory in
// on demand: a GPU page-fault group of the kernel's device and process starts inside the kernel's
// run. The faulting warps stall until the driver has moved the pages, so such a kernel runs many
// times longer than with its data already on the device (on an H100: 44 ms instead of 0.47 ms).
// Fix (lab transform prefetch-managed): cudaMemPrefetchAsync the buffers to the device on the
// kernel's stream before the kernel.
// Cost: what the fix saves, from the what-if schedule (schedule_estimate.h, event waits kept): the
// span as recorded minus the span with each faulting kernel taking its fault-free duration plus
// its prefetch, on its stream:
//   - fault-free duration, from the runs of the same kernel (name, grid blocks, threads per block
//     and shared memory; where the trace records op buffers, the size of the largest buffer it was
//     handed too: one launch shape over buffers of other sizes runs other work) on the device. A
//     fault stalls its warps at most from the run's first fault group to the end of the last
//     group or migration the driver did for it, so each faulting run's duration less that
//     stretch is a floor on its shape's fault-free duration; a run whose faults overlapped its
//     other warps' work (a multi-wave grid where few blocks touch the faulting pages) shows a low
//     one, so the shape's highest floor holds for all its runs.
//     The estimate is the median of the shape's runs that did not fault, when there are any and
//     it is not below that floor (else they did other work: one launch shape often runs
//     different work) and the grid is not one below a wave whose runs grow with their faults'
//     service (its faulted blocks ended every run, so the duration at no service below is its
//     fault-free one); else the largest of the floor, the duration the shape's runs with one
//     fault group show at no service (durationWithoutService: the line of their durations on
//     their faults' service, or the duration of the runs served least where those ended with
//     the rest of the grid; a multi-wave grid's runs last as long however long their few
//     faulting blocks were held; for a grid of a wave or more by the device's limits whose
//     faulted blocks ended every run, the geometric mean of that and the shape's shortest run)
//     and the run less the time the driver spent on its faults (the union of its fault groups
//     and migrations inside the run); never more than the run itself;
//   - prefetch: the driver's turnaround for a migration asked of it (migrationTurnaround: what
//     the trace's CPU page faults waited before the driver began moving their pages, the
//     window's first one for the window's first move of a range, which the driver is slower to
//     start; 0 without any), plus the bytes migrated to the device during the run at the pinned HtoD rate and a
//     copy's fixed cost (pinned_rate.h: pinnedDuration; 0 when no rate is known), plus the
//     driver's remap of the moved pages on the device (remapAfterMigration: what its fault
//     groups took after their last migration): cudaMemPrefetchAsync holds its thread until all
//     of it is done, and the kernel is launched after it. None for the window's first op: its
//     prefetch and the launch behind it come before the device's first op, where the span
//     begins (recorded on an H100, the lab's prefetch-managed variants: their spans begin at
//     the first kernel, 35-80 µs after the first prefetch's migration);
//   - the host's reads after the kernel: a CPU fault on memory a prefetch moved brings the range
//     around its page back whole, so of the faults a thread took between a blocking call and its
//     next launch on pages the kernels' faults had moved, only the first of each such range
//     remains (hostFaultsGiven); each other one gives back the median time such a fault took
//     (from the end of the previous fault's migrations to the end of its own) to the thread's
//     next launches and blocking call; and the window's first CPU fault, whose slow start the
//     prefetch now takes, gives back what it waited beyond the typical turnaround.
// Of that saving S, R = min(S, ledger ideal - ledger ideal with the faster kernels) lowers the
// ideal (Finding::ideal_reduction_ns, outside the ledger's cap); S - R is charged through the
// ledger, where the faulting kernels ran and where the host took the faults it no longer takes.
// Fires when the saving reaches kMinimumClaimNs.
// The saving leaves out the replay's own error where the fix takes it off the critical path
// (replay_error.h).
// Needs: GPU page-fault records (our collector; nsys with --cuda-um-gpu-page-faults=true).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "cuoverlap/units.h"
#include "diagnosis/cost_ledger.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/pinned_rate.h"
#include "diagnosis/replay_error.h"
#include "diagnosis/rules/fault_free.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {
namespace {

// The device's fault groups and HtoD migrations, each in start order, without those of explicit
// prefetches (access type "prefetch", migration cause "user"): they are the fix, not the fault.
struct DeviceFaults {
  std::vector<const UmPageFaultGroup*> faults;
  std::vector<const UmMigration*> migrations;
};

// What the driver did for one kernel run.
struct KernelFaults {
  std::size_t position = 0;
  std::uint64_t faults = 0;
  std::uint64_t groups = 0;
  std::uint64_t bytes = 0;  // migrated to the device
  Ns serviced = 0;          // |union of fault groups and migrations| inside the run
  Ns stalled = 0;           // first fault group's start to the last group's or migration's end
  std::vector<std::pair<std::uint64_t, std::uint64_t>> moved;  // address ranges migrated in
};

DeviceFaults faultsOn(const DeviceView& view) {
  DeviceFaults out;
  for (const UmPageFaultGroup& f : view.trace().unified_memory.gpu_faults) {
    if (servedFault(f, view.deviceId())) out.faults.push_back(&f);
  }
  for (const UmMigration& m : view.trace().unified_memory.migrations) {
    if (faultMigration(m, view.deviceId())) out.migrations.push_back(&m);
  }
  return out;
}

// The records of `all` (in start order) that start in [start, end) and belong to `pid` (0: any).
template <typename Record>
std::vector<const Record*> startingIn(const std::vector<const Record*>& all, Ns start, Ns end,
                                      std::uint32_t pid) {
  auto first = std::lower_bound(all.begin(), all.end(), start,
                                [](const Record* r, Ns t) { return r->start < t; });
  std::vector<const Record*> out;
  for (auto it = first; it != all.end() && (*it)->start < end; ++it) {
    if ((*it)->pid == 0 || pid == 0 || (*it)->pid == pid) out.push_back(*it);
  }
  return out;
}

KernelFaults faultsOf(const DeviceFaults& device, const ScopedOp& run, std::uint32_t pid) {
  KernelFaults k;
  std::vector<Interval> busy;
  for (const UmPageFaultGroup* f : startingIn(device.faults, run.start, run.end, pid)) {
    ++k.groups;
    k.faults += f->faults;
    busy.push_back({f->start, std::min(f->end, run.end)});
  }
  for (const UmMigration* m : startingIn(device.migrations, run.start, run.end, pid)) {
    k.bytes += m->bytes;
    busy.push_back({m->start, std::min(m->end, run.end)});
    if (m->address != 0) k.moved.push_back({m->address, m->address + m->bytes});
  }
  if (!busy.empty()) {
    Ns first = busy.front().start, last = busy.front().end;
    for (const Interval& i : busy) {
      first = std::min(first, i.start);
      last = std::max(last, i.end);
    }
    k.stalled = last - first;
  }
  k.serviced = totalLength(unionOf(std::move(busy)));
  return k;
}

Ns median(std::vector<Ns> values) {
  std::sort(values.begin(), values.end());
  return values[(values.size() - 1) / 2];
}

// A faulting run of one launch shape: how long it ran, and how long its faults held it (its
// first fault group's start to the end of the last group or migration the driver did for it).
struct FaultingRun {
  Ns duration = 0;
  Ns stalled = 0;
  bool one_group = false;
};

// The fault-free duration W the shape's runs with one fault group show where their faulted blocks
// ended before the rest of the grid; 0 where none did. A run lasts the later of W and its
// service S plus its faulted blocks' time after it (T), so the runs served least end at W and the
// others at S + T: the least duration less service among the runs is T, and a run whose own
// exceeds it by more than `resolution` ended at W. Those runs must be the ones served least and
// agree on W within `resolution`, else the runs do not follow the two branches (durations growing
// with service throughout) and tell nothing here. Recorded on an H100 (lab baselines, and their
// prefetch-managed variants' own traces): a 3168-block grid ran 210-213 µs served for 56-170 µs
// (278 µs for 234) and 210-211 µs prefetched; a 1056-block grid 276 µs served for 97 µs (347-389
// µs for 187-229) and 240-242 µs prefetched.
Ns durationWhereFaultsEndedEarly(const std::vector<const FaultingRun*>& single, Ns resolution) {
  Ns tail = std::numeric_limits<Ns>::max();
  for (const FaultingRun* r : single) tail = std::min(tail, r->duration - r->stalled);
  Ns shortest = std::numeric_limits<Ns>::max(), longest = 0;
  Ns early_served = 0, late_served = std::numeric_limits<Ns>::max();
  for (const FaultingRun* r : single) {
    if (r->duration - r->stalled > tail + resolution) {
      shortest = std::min(shortest, r->duration);
      longest = std::max(longest, r->duration);
      early_served = std::max(early_served, r->stalled);
    } else {
      late_served = std::min(late_served, r->stalled);
    }
  }
  if (longest == 0 || early_served >= late_served || longest - shortest > resolution) return 0;
  return shortest;
}

// The fault-free duration a launch shape's runs show, read from how their durations grow with
// their faults' service; 0 where they cannot tell. A fault group holds back only the blocks that
// touched its pages; they resume when the driver has served it and do the rest of their work, so
// a run ends at the later of its fault-free end and its faulted blocks' end: its duration grows
// one for one with the service where those blocks end last (a single wave, or faults late in
// the run) and not at all where the other blocks' work outlasts them (a multi-wave grid whose few
// faulting blocks resume early). Across the shape's runs with one fault group each, the
// least-squares line of duration on service time, its slope held to [0, 1], gives the duration
// at no service. Runs with several groups are left out: their faults hold different blocks at
// different times. It needs two such runs whose services differ by more than `resolution` (the
// driver's remap: when within a group its warps resumed is that uncertain).
// Recorded on an H100 (lab, prefetch-managed variants): 3168-block grids whose faults were served
// for 72-157 µs and 142-236 µs ran 211 and 1098-1117 µs, and 210 and 1033-1045 µs prefetched.
Ns durationWithoutService(const std::vector<FaultingRun>& runs, Ns resolution,
                          bool* ended_early = nullptr, double* slope = nullptr) {
  std::vector<const FaultingRun*> single;
  for (const FaultingRun& r : runs) {
    if (r.one_group) single.push_back(&r);
  }
  if (single.size() < 2 || resolution <= 0) return 0;
  double mean_s = 0, mean_d = 0;
  Ns low = single.front()->stalled, high = low;
  for (const FaultingRun* r : single) {
    mean_s += static_cast<double>(r->stalled);
    mean_d += static_cast<double>(r->duration);
    low = std::min(low, r->stalled);
    high = std::max(high, r->stalled);
  }
  if (high - low <= resolution) return 0;
  const double n = static_cast<double>(single.size());
  mean_s /= n;
  mean_d /= n;
  double covariance = 0, variance = 0;
  for (const FaultingRun* r : single) {
    const double ds = static_cast<double>(r->stalled) - mean_s;
    covariance += ds * (static_cast<double>(r->duration) - mean_d);
    variance += ds * ds;
  }
  const double grows = std::clamp(covariance / variance, 0.0, 1.0);
  if (slope != nullptr) *slope = grows;
  const Ns line = std::max<Ns>(0, static_cast<Ns>(mean_d - grows * mean_s));
  const Ns early = durationWhereFaultsEndedEarly(single, resolution);
  if (ended_early != nullptr) *ended_early = early > 0;
  return std::max(line, early);
}

// The least slope of a shape's durations on their faults' service (durationWithoutService) at
// which its runs grow with the service, so that the faulted blocks ended them: one for one in
// principle; the lab's sub-wave grids show 0.98-1.0 where their runs without faults ran other
// work (any slope from 0 to 0.95 moves the same cases on the eight corpora).
constexpr double kGrowsWithService = 0.8;

// How many migrations after a CPU page fault are searched for the one that moved its page.
constexpr std::ptrdiff_t kMigrationsSearched = 64;

// The driver's turnaround for a migration a host thread asked for: per CPU page fault of the
// process, the time from the fault to the start of the first DtoH migration that moves its page
// (the driver unmapping the page on the device before it copies it). A prefetch to the device is
// the same request the other way (unmap on the host, copy, map), made by the cudaMemPrefetchAsync
// call instead of a fault; the kernel behind it waits for all of it. `typical` is the median over
// the trace; `first` the turnaround of the window's first CPU fault: the driver's first move of a
// range takes it longer to start (recorded on an H100, the lab's windows: the first CPU fault of
// a window waited 37 µs, its later ones 18 µs (medians of 58 and 229), and each program's first
// prefetch started its copy 33-52 µs after its call, the later ones 14-39 µs, as the program's
// first and later CPU faults). Both 0 without any CPU fault, `first` is `typical` without one in
// the window.
struct Turnaround {
  Ns typical = 0;
  Ns first = 0;
  Ns first_at = -1;  // the window's first CPU fault, -1 without one
};

// How long a CPU page fault waited before the driver began moving its page back: the start of
// the first of `downloads` (in start order) that moves it, less the fault's time; -1 where none
// does. Bounded search: the driver moves a faulting page among the next few migrations, or never
// (it mapped the page remotely instead).
Ns faultTurnaround(const UmCpuFault& fault, const std::vector<const UmMigration*>& downloads) {
  auto it = std::lower_bound(downloads.begin(), downloads.end(), fault.time,
                             [](const UmMigration* m, Ns t) { return m->start < t; });
  const auto stop =
      downloads.end() - it > kMigrationsSearched ? it + kMigrationsSearched : downloads.end();
  for (; it != stop; ++it) {
    if ((*it)->address <= fault.address && fault.address < (*it)->address + (*it)->bytes) {
      return (*it)->start - fault.time;
    }
  }
  return -1;
}

Turnaround migrationTurnaround(const DeviceView& view, std::uint32_t pid) {
  const UnifiedMemory& um = view.trace().unified_memory;
  std::vector<const UmMigration*> downloads;
  for (const UmMigration& m : um.migrations) {
    if (m.device_id == view.deviceId() && m.direction == CopyKind::kUvmDtoH && m.address != 0 &&
        m.cause != schema::UmMigrationCause::kUser) {
      downloads.push_back(&m);
    }
  }
  std::vector<Ns> turnarounds;
  Turnaround out;
  for (const UmCpuFault& fault : um.cpu_faults) {
    if (pid != 0 && fault.pid != 0 && fault.pid != pid) continue;
    const Ns waited = faultTurnaround(fault, downloads);
    if (waited < 0) continue;
    turnarounds.push_back(waited);
    const bool in_window = fault.time >= view.windowStart() && fault.time < view.windowEnd();
    if (in_window && (out.first_at < 0 || fault.time < out.first_at)) {
      out.first_at = fault.time;
      out.first = waited;
    }
  }
  if (turnarounds.empty()) return out;
  out.typical = median(std::move(turnarounds));
  if (out.first_at < 0) out.first = out.typical;
  return out;
}

// The driver's remap after a migration it did for the device: per fault group with migrations to
// the device inside it, the time from the end of the last of them to the group's end (the driver
// mapping the moved pages on the device and letting the warps replay); the median, 0 without any.
// A prefetch ends the same way: the cudaMemPrefetchAsync call, which holds its host thread until
// the move is done, returns that long after its copy (on an H100: 8-45 µs, as its fault groups').
Ns remapAfterMigration(const DeviceFaults& device) {
  std::vector<Ns> remaps;
  for (const UmPageFaultGroup* f : device.faults) {
    Ns last = 0;
    for (const UmMigration* m : startingIn(device.migrations, f->start, f->end, f->pid)) {
      last = std::max(last, m->end);
    }
    if (last > 0 && last <= f->end) remaps.push_back(f->end - last);
  }
  return remaps.empty() ? 0 : median(std::move(remaps));
}

// The driver's first remap in the window: what the window's first fault group of the process with
// migrations to the device inside it took after the last of them (`typical` without one). The
// driver's first mapping of a range on the device is slower, whether a fault or a prefetch asks
// for it: recorded on an H100 (the lab's windows and their prefetch-managed variants), the first
// prefetches returned 11-49 µs after their copy, the later ones 3-24 µs, and the windows' first
// fault groups remapped in 10-25 µs, the later ones about 10.
Ns firstRemapInWindow(const DeviceView& view, const DeviceFaults& device, Ns typical,
                      std::uint32_t pid) {
  for (const UmPageFaultGroup* f : device.faults) {
    if (f->start < view.windowStart() || f->start >= view.windowEnd() || f->pid != pid) continue;
    Ns last = 0;
    for (const UmMigration* m : startingIn(device.migrations, f->start, f->end, f->pid)) {
      last = std::max(last, m->end);
    }
    if (last > 0 && last <= f->end) return f->end - last;
  }
  return typical;
}

// How far apart two of the host's page faults on prefetched memory may lie and still be served
// by one fault: a CPU fault on memory a prefetch moved to the device in one piece brings back
// the range around the faulting page whole, where after on-demand GPU faults it brings back 64
// KiB (recorded on an H100, the lab's prefetch-managed variants: buffers of 16 to 172 KiB came
// back in the first fault, one of 348 KiB and one of 5.6 MiB in 64 KiB pieces again).
constexpr std::uint64_t kPrefetchedRangeReturned = 256u << 10;

// The host's page faults that the fix makes unnecessary: after a prefetch, a thread's read of
// the buffer between a blocking call and its next launch faults once per prefetched range
// instead of once per 64 KiB group the kernel's own faults left. Per such stretch, the time from
// the end of the service of the fault before each unnecessary one to the end of its own
// (service: the DtoH migrations that start before the thread's next fault or launch), given
// back to the thread's next launches and blocking call (host_time_given.h). The window's first CPU
// fault, inside such a stretch, also gives back what it waited beyond the typical turnaround
// (`turnaround`: the prefetch made the first move of its range, and the later moves start as
// quickly as the typical one; recorded on an H100, the lab's prefetch-managed variants: their
// first CPU faults waited 15-29 µs, those of the programs without the fix 34-67 µs). CPU fault
// records name no thread: a fault of the process inside a thread's stretch counts as that
// thread's.
struct HostFaultsGiven {
  std::vector<Ns> earlier;           // per op position, ScheduleModel::span's `earlier`
  std::vector<CallChange> changed;   // the next blocking calls, begun sooner
  std::vector<Interval> stretches;   // where the host spent the time given back
  std::uint64_t faults = 0;          // the host's faults the fix makes unnecessary
};

// Address ranges [lo, hi) moved so far, merged: whether a range overlaps one, in O(log n).
class MovedRanges {
 public:
  bool overlaps(std::uint64_t lo, std::uint64_t hi) const {
    const auto after = ranges_.upper_bound(lo);  // the first range beginning after lo
    if (after != ranges_.end() && after->first < hi) return true;
    return after != ranges_.begin() && std::prev(after)->second > lo;
  }
  void add(std::uint64_t lo, std::uint64_t hi) {
    auto it = ranges_.upper_bound(lo);
    if (it != ranges_.begin() && std::prev(it)->second >= lo) {
      --it;
      lo = it->first;
      hi = std::max(hi, it->second);
      it = ranges_.erase(it);
    }
    for (; it != ranges_.end() && it->first <= hi; it = ranges_.erase(it)) hi = std::max(hi, it->second);
    ranges_.emplace(lo, hi);
  }

 private:
  std::map<std::uint64_t, std::uint64_t> ranges_;  // lo -> hi
};

// The address ranges `migrations` moved, merged, in address order.
std::vector<std::pair<std::uint64_t, std::uint64_t>> rangesMoved(
    const std::vector<const UmMigration*>& migrations) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const UmMigration* m : migrations) {
    if (m->address != 0) ranges.push_back({m->address, m->address + m->bytes});
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

bool inRanges(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges,
              std::uint64_t address) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(),
                             std::make_pair(address, std::numeric_limits<std::uint64_t>::max()));
  return it != ranges.begin() && address < std::prev(it)->second;
}

// How many typical turnarounds a CPU fault on a page the driver saw thrash waits where the driver
// throttled the page (held it where it was for a while before moving it again): recorded on an
// H100 (the lab's baselines with thrashing records), throttled faults waited 157-785 µs, 10-40
// typical turnarounds, the other faults on such pages 10-75 µs, at most 5 (4 to 16 move the same
// cases across the nine corpora).
constexpr Ns kThrottledTurnarounds = 8;

HostFaultsGiven hostFaultsGiven(const DeviceView& view, const HostTimeline& host,
                                const DeviceFaults& device, std::uint32_t pid,
                                const Turnaround& turnaround) {
  HostFaultsGiven out;
  out.earlier.assign(view.ops().size(), 0);
  if (host.barrier_of.empty()) return out;
  // The host's faults on pages the kernels' faults moved to the device (what a prefetch moves).
  const auto moved = rangesMoved(device.migrations);
  std::vector<const UmCpuFault*> faults;
  for (const UmCpuFault& f : view.trace().unified_memory.cpu_faults) {
    if ((pid == 0 || f.pid == 0 || f.pid == pid) && inRanges(moved, f.address)) {
      faults.push_back(&f);
    }
  }
  if (faults.empty()) return out;
  std::sort(faults.begin(), faults.end(),
            [](const UmCpuFault* a, const UmCpuFault* b) { return a->time < b->time; });
  std::vector<const UmMigration*> downloads;
  for (const UmMigration& m : view.trace().unified_memory.migrations) {
    if (m.device_id == view.deviceId() && m.direction == CopyKind::kUvmDtoH &&
        m.cause != schema::UmMigrationCause::kUser) {
      downloads.push_back(&m);
    }
  }
  std::sort(downloads.begin(), downloads.end(),
            [](const UmMigration* a, const UmMigration* b) { return a->start < b->start; });
  // Per barrier: the start of the first launch after it (the end of its thread's stretch).
  std::vector<Ns> next_launch(host.barriers.size(), std::numeric_limits<Ns>::max());
  const ScopedOps ops = view.ops();
  for (std::size_t p = 0; p < ops.size(); ++p) {
    const std::int64_t b = host.barrier_of[p];
    const auto launch = view.launchCall(view.op(ops[p]));
    if (b < 0 || !launch) continue;
    Ns& first = next_launch[static_cast<std::size_t>(b)];
    first = std::min(first, view.call(*launch).start);
  }
  // The process's thrashing records (our collector), each a region the driver saw move back
  // and forth between host and device: per region start, its end and its first record's time.
  std::map<std::uint64_t, std::pair<std::uint64_t, Ns>> thrashed;
  std::uint64_t widest = 0;
  for (const UmThrashing& t : view.trace().unified_memory.thrashing) {
    if (t.remote_map || (pid != 0 && t.pid != 0 && t.pid != pid)) continue;
    auto [it, added] = thrashed.try_emplace(t.address, t.address + t.bytes, t.time);
    if (!added) it->second = {std::max(it->second.first, t.address + t.bytes), std::min(it->second.second, t.time)};
    widest = std::max(widest, t.bytes);
  }
  // Whether a region holding the fault's page thrashed before it (regions starting at most the
  // widest region's size below the page).
  const auto throttled = [&](const UmCpuFault& f) {
    for (auto it = thrashed.upper_bound(f.address); it != thrashed.begin();) {
      --it;
      if (f.address - it->first >= widest) break;
      if (f.address < it->second.first && it->second.second < f.time) return true;
    }
    return false;
  };
  std::map<std::size_t, std::vector<Interval>> spent_by;  // per barrier: its unnecessary faults
  std::map<std::size_t, Ns> cold_by;  // per barrier: its faults' slower starts
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    const Ns from = host.barriers[b].end;
    Ns until = next_launch[b];
    const bool has_next = b + 1 < host.barriers.size() &&
                          host.barriers[b + 1].previous == static_cast<std::int64_t>(b);
    if (has_next) until = std::min(until, host.barriers[b + 1].start);
    if (until == std::numeric_limits<Ns>::max()) continue;  // nothing on the device waits for it
    auto first = std::upper_bound(faults.begin(), faults.end(), from,
                                  [](Ns t, const UmCpuFault* f) { return t < f->time; });
    std::vector<const UmCpuFault*> stretch;
    for (auto it = first; it != faults.end() && (*it)->time < until; ++it) stretch.push_back(*it);
    // The window's first CPU fault waited for the driver's first move of its range; after a
    // prefetch, which made that move, it waits as long as the later ones.
    // A fault on a page the driver saw thrash waited for its throttle (the driver holds a
    // thrashing page where it is for a while before it moves it again); the prefetched page does
    // not thrash, and its fault starts as quickly as the typical one.
    for (const UmCpuFault* f : stretch) {
      Ns waited = -1;
      if (f->time == turnaround.first_at) {
        waited = turnaround.first;
      } else if (throttled(*f)) {
        const Ns own = faultTurnaround(*f, downloads);
        if (own > kThrottledTurnarounds * turnaround.typical) waited = own;
      }
      if (waited > turnaround.typical) {
        cold_by[b] += waited - turnaround.typical;
        out.stretches.push_back({f->time + turnaround.typical, f->time + waited});
      }
    }
    if (stretch.size() < 2) continue;
    const auto served = [&](std::size_t i) {
      const Ns next = i + 1 < stretch.size() ? stretch[i + 1]->time : until;
      Ns end = stretch[i]->time;
      auto m = std::lower_bound(downloads.begin(), downloads.end(), stretch[i]->time,
                                [](const UmMigration* x, Ns t) { return x->start < t; });
      for (; m != downloads.end() && (*m)->start < next; ++m) end = std::max(end, (*m)->end);
      return end;
    };
    std::vector<std::uint64_t> ranges_seen;
    for (std::size_t i = 0; i < stretch.size(); ++i) {
      const std::uint64_t range = stretch[i]->address / kPrefetchedRangeReturned;
      const bool seen =
          std::find(ranges_seen.begin(), ranges_seen.end(), range) != ranges_seen.end();
      if (!seen) {
        ranges_seen.push_back(range);
        continue;
      }
      const Interval spent{served(i - 1), served(i)};
      if (spent.end <= spent.start) continue;
      spent_by[b].push_back(spent);
      out.stretches.push_back(spent);
      ++out.faults;
    }
  }
  if (out.faults == 0 && cold_by.empty()) return out;
  // Each unnecessary fault costs the driver's service time: the median of them, not each one's
  // own stretch, which also holds whatever else delayed the thread there (preempted once in the
  // lab: 187 µs against 59 µs for the same fault in the next iteration).
  std::vector<Ns> lengths;
  for (const auto& [b, spent] : spent_by) {
    for (const Interval& i : spent) lengths.push_back(i.length());
  }
  const Ns per_fault = lengths.empty() ? 0 : median(std::move(lengths));
  std::vector<Ns> given(host.barriers.size(), 0);
  std::map<std::size_t, Ns> given_by = cold_by;
  for (const auto& [b, spent] : spent_by) given_by[b] += per_fault * static_cast<Ns>(spent.size());
  for (const auto& [b, time] : given_by) {
    given[b] = time;
    const bool has_next = b + 1 < host.barriers.size() &&
                          host.barriers[b + 1].previous == static_cast<std::int64_t>(b);
    if (has_next) {
      const HostBarrier& next = host.barriers[b + 1];
      out.changed.push_back({next.call, true, next.own, given[b]});
    }
  }
  for (std::size_t p = 0; p < ops.size(); ++p) {
    const std::int64_t b = host.barrier_of[p];
    if (b >= 0) out.earlier[p] = given[static_cast<std::size_t>(b)];
  }
  return out;
}

// Where a faulting kernel's fault-free duration comes from.
enum class FaultFreeSource { kCleanRuns, kBounds, kLine, kLessService };

// The device's faulting kernel runs, each with its fault-free duration (the estimate the top of
// this file describes, never more than the run itself) and where that came from.
struct FaultingKernels {
  std::vector<KernelFaults> runs;
  std::vector<Ns> fault_free;
  std::vector<FaultFreeSource> source;
  Ns remap = 0;
};

FaultingKernels faultingKernels(const DeviceView& view, const DeviceFaults& device) {
  FaultingKernels out;
  std::vector<KernelFaults>& faulting = out.runs;
  // Fault-free durations by kernel: name and launch shape, and where the trace records the memory
  // each op touched (op buffers), the size of the largest buffer it was handed (0: none recorded).
  using KernelShape = std::tuple<StringId, std::uint32_t, std::uint16_t, std::uint32_t, std::uint64_t>;
  const auto shapeOf = [&view](const GpuOp& op) {
    return KernelShape{op.name, op.grid_blocks, op.block_threads, op.shared_mem_bytes,
                       largestOpBuffer(view.trace(), op)};
  };
  std::map<KernelShape, std::vector<Ns>> clean_runs;
  std::size_t position = 0;
  for (const ScopedOp& scoped : view.ops()) {
    const std::size_t at = position++;
    const GpuOp& op = view.op(scoped);
    if (op.kind != OpKind::kKernel) continue;
    KernelFaults k = faultsOf(device, scoped, op.pid);
    if (k.groups == 0) {
      clean_runs[shapeOf(op)].push_back(scoped.end - scoped.start);
      continue;
    }
    k.position = at;
    faulting.push_back(k);
  }
  if (faulting.empty()) return out;
  const Ns remap = remapAfterMigration(device);
  out.remap = remap;
  // Per shape: the highest floor on its fault-free duration among its faulting runs, and the
  // duration its runs show without their faults' service.
  std::map<KernelShape, std::vector<FaultingRun>> runs_of;
  std::map<KernelShape, double> waves_of;  // by the device's limits
  for (const KernelFaults& k : faulting) {
    const ScopedOp scoped = view.ops()[k.position];
    waves_of[shapeOf(view.op(scoped))] =
        view.device() != nullptr && view.device()->sm_count > 0 &&
                residentBlocksPerSm(*view.device(), view.op(scoped)) > 0
            ? wavesOf(view.device(), view.op(scoped))
            : 0.0;
    runs_of[shapeOf(view.op(scoped))].push_back(
        {scoped.end - scoped.start, k.stalled, k.groups == 1});
  }
  std::map<KernelShape, Ns> floor_of, unserved_of, bounded_of;
  std::map<KernelShape, double> slope_of;
  for (const auto& [shape, runs] : runs_of) {
    Ns shortest = std::numeric_limits<Ns>::max();
    for (const FaultingRun& r : runs) {
      floor_of[shape] = std::max(floor_of[shape], r.duration - r.stalled);
      shortest = std::min(shortest, r.duration);
    }
    bool ended_early = false;
    double slope = 0.0;
    unserved_of[shape] = durationWithoutService(runs, remap, &ended_early, &slope);
    slope_of[shape] = slope;
    // Where the grid fills a wave by the device's limits, the shape ran more than once and no
    // run ended with the rest of the grid, the trace bounds the fault-free duration only from
    // below by the faulted blocks' time after their service (the floor, or the line where it
    // says more) and from above by the shortest run: the rest of the grid ran in rounds whose
    // number the limits do not tell (a kernel's blocks may hold fewer slots than the limits
    // give: the lab's 256-thread kernel ran 528 blocks a round on an H100, half the limits'
    // 1056, so 1056 blocks in two; "How many blocks a wave really holds"). The geometric mean of
    // the two bounds has the least worst-case relative error. Recorded on an H100 (the
    // prefetch-managed variants' own traces): 1056-block grids whose faulted blocks ran 45, 65
    // and 100 µs after their service and whose shortest runs took 179, 219 and 199 µs ran 89,
    // 129 and 182-198 µs prefetched (the mean: 90, 119, 141); 3168-block grids 93-209 against
    // 291-347, 229 and 297 prefetched (164, 269). A grid below a wave by the limits keeps the
    // floor (264- and 528-block grids of the lab ran their faulted blocks' time prefetched).
    // The line bounds it only where the runs grow with their service (kGrowsWithService): through
    // runs that do not, the line is about their mean duration, no lower bound, and would close the
    // bracket on the shortest run (H200 g000001: a 2112-block grid's runs, 1.11-1.18 ms with
    // 128 KiB faulted in each, slope under 0.8; the bracket from its floor claims 645 µs of the
    // 747 its prefetch saved, the closed one 513).
    const Ns low = std::max(floor_of[shape], slope >= kGrowsWithService ? unserved_of[shape] : Ns{0});
    if (!ended_early && runs.size() >= 2 && waves_of[shape] >= 1.0 && low > 0 &&
        shortest > low) {
      bounded_of[shape] = static_cast<Ns>(
          std::sqrt(static_cast<double>(low) * static_cast<double>(shortest)));
    }
  }
  for (const KernelFaults& k : faulting) {
    const ScopedOp scoped = view.ops()[k.position];
    const GpuOp& op = view.op(scoped);
    const Ns duration = scoped.end - scoped.start;
    const Ns floor = floor_of[shapeOf(op)];
    const auto clean = clean_runs.find(shapeOf(op));
    // A grid below a wave by the device's limits runs all its blocks from its start; where its
    // runs grow with their faults' service (the faulted blocks ended each run), the duration they
    // show at no service is its fault-free duration, and its runs without faults that took
    // longer ran other work (one launch shape, other arguments).
    const double waves = waves_of[shapeOf(op)];
    const bool faulted_blocks_end = waves > 0.0 && waves < 1.0 && unserved_of[shapeOf(op)] > 0 &&
                                    slope_of[shapeOf(op)] >= kGrowsWithService;
    const bool known = clean != clean_runs.end() && median(clean->second) >= floor &&
                       !faulted_blocks_end;
    const Ns line = unserved_of[shapeOf(op)];
    const Ns bounded = bounded_of[shapeOf(op)];
    const Ns unserved = std::max(line, bounded);
    const bool between = !known && bounded > std::max({floor, line, duration - k.serviced});
    const bool on_line = !known && !between && unserved > std::max(floor, duration - k.serviced);
    out.fault_free.push_back(std::min(
        duration, known ? median(clean->second)
                        : std::max({floor, unserved, duration - k.serviced})));
    out.source.push_back(known     ? FaultFreeSource::kCleanRuns
                         : between ? FaultFreeSource::kBounds
                         : on_line ? FaultFreeSource::kLine
                                   : FaultFreeSource::kLessService);
  }
  return out;
}

}  // namespace

std::vector<FasterOp> faultFreeKernels(const DeviceView& view) {
  std::vector<FasterOp> out;
  if (view.trace().unified_memory.gpu_faults.empty()) return out;
  const DeviceFaults device = faultsOn(view);
  if (device.faults.empty()) return out;
  const FaultingKernels kernels = faultingKernels(view, device);
  for (std::size_t i = 0; i < kernels.runs.size(); ++i) {
    out.push_back({kernels.runs[i].position, kernels.fault_free[i]});
  }
  return out;
}

std::optional<Finding> findManagedPageFaults(const DeviceView& view) {
  if (view.trace().unified_memory.gpu_faults.empty()) return std::nullopt;
  const DeviceFaults device = faultsOn(view);
  if (device.faults.empty()) return std::nullopt;
  const FaultingKernels kernels = faultingKernels(view, device);
  const std::vector<KernelFaults>& faulting = kernels.runs;
  if (faulting.empty()) return std::nullopt;
  const Ns remap = kernels.remap;
  const Ns first_remap = firstRemapInWindow(view, device, remap,
                                            view.op(view.ops()[faulting.front().position]).pid);
  bool prefetch_seen = false;
  const PinnedRate rate = pinnedRate(view, Engine::kH2D);
  const std::uint32_t pid = view.op(view.ops()[faulting.front().position]).pid;
  const Turnaround turnaround = migrationTurnaround(view, pid);
  FindingBuilder builder(view, "managed-page-faults", Severity::kWarning);
  std::vector<FasterOp> faster;
  std::uint64_t faults = 0, bytes = 0, from_clean_runs = 0, from_line = 0,
                from_bounds = 0;
  MovedRanges moved_before;  // by earlier runs
  bool prefetched_first = false;  // a prefetch, not a fault, makes the window's first move
  for (std::size_t i = 0; i < faulting.size(); ++i) {
    const KernelFaults& k = faulting[i];
    const ScopedOp scoped = view.ops()[k.position];
    const GpuOp& op = view.op(scoped);
    const Ns duration = scoped.end - scoped.start;
    const bool known = kernels.source[i] == FaultFreeSource::kCleanRuns;
    const bool between = kernels.source[i] == FaultFreeSource::kBounds;
    const bool on_line = kernels.source[i] == FaultFreeSource::kLine;
    const Ns fault_free = kernels.fault_free[i];
    // The window's first move of these pages: the driver starts it as late as its first CPU
    // fault's migration.
    const bool first_move = std::none_of(k.moved.begin(), k.moved.end(), [&](const auto& r) {
      return moved_before.overlaps(r.first, r.second);
    });
    for (const auto& [lo, hi] : k.moved) moved_before.add(lo, hi);
    const Ns front = first_move ? turnaround.first : turnaround.typical;
    // The window's first op: its prefetch (the call, the copy, the remap) and the launch behind
    // it come before the device's first op, so before the span, which begins at that kernel.
    const bool before_span = k.position == 0;
    // The window's first prefetch maps its range first: the slower first remap (outside the span
    // where it is the first op's).
    const Ns this_remap = k.bytes > 0 && !prefetch_seen ? first_remap : remap;
    prefetch_seen |= k.bytes > 0;
    const Ns fixed =
        fault_free +
        (k.bytes > 0 && !before_span ? front + pinnedDuration(rate, k.bytes) + this_remap : 0);
    faults += k.faults;
    bytes += k.bytes;
    from_clean_runs += known ? 1 : 0;
    from_line += on_line ? 1 : 0;
    from_bounds += between ? 1 : 0;
    if (fixed < duration) faster.push_back({k.position, fixed});
    prefetched_first |= first_move && k.bytes > 0 && fixed < duration;
    builder.add(Interval{scoped.start, scoped.end},
                evidenceForOp(view, op, fmt::format(
                    "{} ran {} while {} GPU page faults ({} groups) migrated {} to the device; "
                    "about {} with its data prefetched ({})",
                    describeOp(view, op), units::formatDuration(duration), k.faults, k.groups,
                    units::formatBytes(k.bytes), units::formatDuration(std::min(fixed, duration)),
                    known     ? "its runs without faults"
                    : between ? "between its faulted blocks' time after their service and its "
                                "shortest run"
                    : on_line ? "its runs' durations against their faults' service, at none"
                              : "its runs less their faults' service time")));
  }
  const HostTimeline& host = buildHostTimeline(view);
  Turnaround host_turnaround = turnaround;  // what the host's CPU faults wait with the fix
  if (!prefetched_first) host_turnaround.first = turnaround.typical;
  const HostFaultsGiven host_faults = hostFaultsGiven(view, host, device, pid, host_turnaround);
  for (const Interval& stretch : host_faults.stretches) builder.addRegion(stretch);
  const ScheduleModel model(view, host);
  const std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
  const Ns saving =
      faster.empty() && host_faults.faults == 0
          ? 0
          : savingLessReplayError(view, model, waits, waits, host_faults.earlier, faster, host_faults.changed);
  if (saving < kMinimumClaimNs) return std::nullopt;
  const Ns reduction = std::clamp<Ns>(ledgerIdeal(view) - ledgerIdeal(view, faster), 0, saving);
  builder.estimateSaving(saving - reduction);
  builder.lowerIdeal(reduction);
  const std::string estimate =
      from_clean_runs == faulting.size() ? "from the same kernels' runs without faults"
      : from_clean_runs == 0 ? "from the runs less the time their faults were serviced"
                             : fmt::format("{} from the same kernels' runs without faults, the "
                                           "others from the runs less the time their faults "
                                           "were serviced",
                                           from_clean_runs);
  return builder.build(
      fmt::format("{} kernel runs faulted managed memory in on demand: {} GPU page faults, {} "
                  "migrated to the device while they ran; fault-free durations {}{}{}{}{}{}",
                  builder.count(), faults, units::formatBytes(bytes), estimate,
                  from_line > 0 ? fmt::format(" ({} of them raised to the duration the runs "
                                              "show at no service: their faults hid under the "
                                              "kernel's other work)",
                                              from_line)
                                : "",
                  from_bounds > 0
                      ? fmt::format(" ({} of them raised to the geometric mean of their faulted "
                                    "blocks' time after their service and the shortest run: "
                                    "how many rounds the rest of the grid ran is not in the "
                                    "trace)",
                                    from_bounds)
                      : "",
                  rate.bytes_per_ns > 0 ? fmt::format(", prefetch at {:.1f} GB/s ({})",
                                                      rate.bytes_per_ns, rate.source)
                                        : ", prefetch time unknown (no pinned HtoD rate)",
                  turnaround.typical > 0
                      ? fmt::format(" after the driver's {} turnaround (this trace's CPU page "
                                    "faults{})",
                                    units::formatDuration(turnaround.typical),
                                    turnaround.first != turnaround.typical
                                        ? fmt::format("; {} for its first move of a range",
                                                      units::formatDuration(turnaround.first))
                                        : "")
                      : "",
                  host_faults.faults > 0
                      ? fmt::format("; the host's reads would take {} CPU page faults fewer (a "
                                    "prefetched range comes back in its first fault)",
                                    host_faults.faults)
                      : ""),
      "Prefetch the managed buffers to the device with cudaMemPrefetchAsync on the kernel's stream "
      "before the kernel (after the host last wrote them), or allocate with cudaMalloc and copy "
      "explicitly; cudaMemAdvise(SetPreferredLocation/SetAccessedBy) for data both sides use");
}

}  // namespace cuoverlap::diagnosis
