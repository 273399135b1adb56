#include "diagnosis/schedule_estimate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "diagnosis/api_names.h"
#include "diagnosis/pinned_rate.h"
#include "diagnosis/schedule_run.h"

namespace cuoverlap::diagnosis {
namespace {

// Where the device limits are unknown, the SM share (smShare) taken for a grid with a block on
// every SM: that of 256-thread blocks resident 8 to an SM (2048 threads per SM, as on the H100:
// 132 blocks of 1,056 slots). With the limits known the test is exact, grid_blocks >= sm_count
// (ScheduleModel::every_sm_): for other block sizes, or where registers or shared memory allow
// fewer blocks an SM, a share of an eighth is not a block on every SM (a DDP trace's 24-block
// kernel with 103,808 bytes of shared memory holds 24/132 of an H200 on 24 SMs).
constexpr double kBlockOnEverySmShare = 0.125;

// A measured point of schedule_estimate.h: after sleeping `slept_us`, `longer_us` more.
struct SleepPoint {
  double slept_us;
  double longer_us;
};

// Log-linear between the points (by sleep), none before the first, the last one's after it.
template <std::size_t N>
Ns longerAfterSleep(Ns slept, const SleepPoint (&points)[N]) {
  const double us = static_cast<double>(slept) / 1e3;
  if (us <= points[0].slept_us) return 0;
  for (std::size_t i = 1; i < N; ++i) {
    if (us > points[i].slept_us) continue;
    const SleepPoint& a = points[i - 1];
    const SleepPoint& b = points[i];
    const double f = std::log(us / a.slept_us) / std::log(b.slept_us / a.slept_us);
    return static_cast<Ns>(1e3 * (a.longer_us + f * (b.longer_us - a.longer_us)));
  }
  return static_cast<Ns>(1e3 * points[N - 1].longer_us);
}

}  // namespace


Ns copyReturnAfterSleep(Ns slept, bool one_thread) {
  static constexpr SleepPoint kPoints[] = {{170, 0}, {550, 1.4}, {1700, 7.2}, {5500, 16.5}};
  static constexpr SleepPoint kOneThread[] = {{170, 0}, {550, 1.2}, {1700, 1.6}, {5500, 2.9}};
  return one_thread ? longerAfterSleep(slept, kOneThread) : longerAfterSleep(slept, kPoints);
}

Ns launchAfterSleep(Ns slept) {
  static constexpr SleepPoint kPoints[] = {{15, 0},    {55, 0.7},   {170, 1.4},
                                           {550, 2.5}, {1700, 5.8}, {5500, 15.7}};
  return longerAfterSleep(slept, kPoints);
}

// Greedy list scheduling of equal blocks, as the block scheduler places them: at each moment the
// SMs that free first take the next blocks. `taken` of the SMs free at `held`, the rest at 0.
Ns blocksEndWithSlotsHeld(double waves_left, Ns block, double taken, Ns held) {
  taken = std::clamp(taken, 0.0, 1.0);
  double rest = waves_left;
  Ns others_free = 0;
  Ns held_free = held;
  Ns end = 0;
  while (rest > kShareSlack) {
    const bool others = taken < 1.0 && (others_free <= held_free || taken <= 0.0);
    Ns& free = others ? others_free : held_free;
    rest -= std::min(rest, others ? 1.0 - taken : taken);
    end = std::max(end, free + block);
    free += block;
  }
  return end;
}

std::int64_t residentBlocksPerSm(const Device& device, const GpuOp& kernel) {
  if (device.max_threads_per_sm <= 0 || device.max_blocks_per_sm <= 0 ||
      kernel.block_threads == 0) {
    return 0;
  }
  std::int64_t blocks = std::min<std::int64_t>(device.max_blocks_per_sm,
                                               device.max_threads_per_sm / kernel.block_threads);
  const std::int64_t registers_per_block =
      static_cast<std::int64_t>(kernel.registers_per_thread) * kernel.block_threads;
  if (device.max_registers_per_sm > 0 && registers_per_block > 0) {
    blocks = std::min(blocks, device.max_registers_per_sm / registers_per_block);
  }
  if (device.max_shared_mem_per_sm > 0 && kernel.shared_mem_bytes > 0) {
    blocks = std::min<std::int64_t>(blocks, device.max_shared_mem_per_sm / kernel.shared_mem_bytes);
  }
  return blocks;
}

Ns submittedAt(const DeviceView& view, std::size_t call, Ns op_start) {
  const ApiKind kind = view.callKind(call);
  const RuntimeCall& c = view.call(call);
  const bool blocked = (kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync) && op_start < c.end;
  return blocked ? c.start : c.end;
}

double wavesOf(const Device* device, const GpuOp& kernel) {
  if (device == nullptr || device->sm_count <= 0 || kernel.grid_blocks == 0) return 1.0;
  const std::int64_t per_sm = residentBlocksPerSm(*device, kernel);
  if (per_sm <= 0) return 1.0;
  return static_cast<double>(kernel.grid_blocks) / static_cast<double>(per_sm * device->sm_count);
}

double smShare(const Device* device, const GpuOp& kernel) {
  return std::clamp(wavesOf(device, kernel), 1e-6, 1.0);
}

namespace {

// ScheduleModel's engine holds (schedule_estimate.h, above span()).
std::vector<OrderEdge> findEngineHolds(const DeviceView& view) {
  constexpr Ns kNear = 5000;   // X starts within this of P's end
  constexpr Ns kIdle = 10000;  // X ready, and the engine idle, this long before P began
  constexpr std::size_t kLookBack = 64;
  std::vector<OrderEdge> holds;
  const auto ops = view.ops();
  std::vector<std::size_t> on_engine[8];
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    if (view.kindAt(pos) == OpKind::kKernel) continue;
    on_engine[static_cast<std::size_t>(engineOf(view.op(ops[pos]))) % 8].push_back(pos);
  }
  std::vector<std::pair<Ns, Ns>> busy;
  for (const std::vector<std::size_t>& list : on_engine) {
    for (std::size_t i = 1; i < list.size(); ++i) {
      const std::size_t x = list[i];
      if (view.onLegacyDefaultStreamAt(x)) continue;
      const ScopedOp sx = ops[x];
      // Most copies start as they are ready: only one that waited at least kIdle can be held.
      const std::optional<Ns> ready = view.readyTime(x);
      if (!ready || *ready + kIdle > sx.start) continue;
      std::int64_t p = -1;  // the engine's copy that ended last before X started
      for (std::size_t j = i; j-- > 0 && i - j <= kLookBack;) {
        const ScopedOp sj = ops[list[j]];
        if (sj.end <= sx.start && (p < 0 || sj.end > ops[static_cast<std::size_t>(p)].end)) {
          p = static_cast<std::int64_t>(list[j]);
        }
      }
      if (p < 0 || view.onLegacyDefaultStreamAt(static_cast<std::size_t>(p))) continue;
      const ScopedOp sp = ops[static_cast<std::size_t>(p)];
      if (sx.start - sp.end > kNear) continue;
      const GpuOp& gx = view.op(sx);
      const GpuOp& gp = view.op(sp);
      if (DeviceView::streamKey(gx) == DeviceView::streamKey(gp)) continue;
      const auto cx = view.launchCall(gx);
      const auto cp = view.launchCall(gp);
      if (!cx || !cp || view.call(*cp).start >= view.call(*cx).start) continue;
      if (*ready + kIdle > sp.start) continue;
      busy.clear();
      for (std::size_t j = i; j-- > 0 && i - j <= kLookBack;) {
        const ScopedOp sj = ops[list[j]];
        if (list[j] != static_cast<std::size_t>(p) && sj.end > *ready && sj.start < sp.start) {
          busy.emplace_back(std::max(sj.start, *ready), std::min(sj.end, sp.start));
        }
      }
      std::sort(busy.begin(), busy.end());
      Ns cursor = *ready;
      bool idle = false;
      for (const auto& [from, to] : busy) {
        if (from - cursor >= kIdle) {
          idle = true;
          break;
        }
        cursor = std::max(cursor, to);
      }
      if (!idle && sp.start - cursor < kIdle) continue;
      holds.push_back({static_cast<std::size_t>(p), x, std::max<Ns>(0, sx.start - sp.end)});
    }
  }
  return holds;
}

}  // namespace

const std::vector<OrderEdge>& engineHolds(const DeviceView& view) {
  if (!view.engine_holds_) view.engine_holds_ = std::make_shared<const std::vector<OrderEdge>>(findEngineHolds(view));
  return *view.engine_holds_;
}

namespace {

// Per multi-wave kernel of the trace, where in its last wave (a fraction) it hands its SMs on
// (ScheduleRun::drainTails): the wave's middle, where half of its blocks have ended, unless the
// trace shows that no slot freed by then: a kernel ready before that wave began, started inside it,
// took the first slot it freed to it (an earlier one shows only that some slot freed, not half of
// them: the middle stands). g000241: a 4-block kernel ready in the first of a 2-wave kernel's
// 414 µs waves started 231 µs into the last (0.56); the schedule of the recorded program started it
// at the middle, 27 µs early, and ended 16 µs before the trace. Ops are in start order: the first
// such kernel started in the wave is its earliest.
std::vector<std::pair<std::size_t, float>> observeDrainHandoff(const DeviceView& view,
                                                               const std::vector<std::uint8_t>& engine,
                                                               const std::vector<double>& waves) {
  const auto& ops = view.ops();
  std::vector<std::pair<std::size_t, float>> handoff;  // by position: q rises
  for (std::size_t q = 0; q < ops.size(); ++q) {
    if (engine[q] != ScheduleModel::kSmEngine || waves[q] <= 1.0 + kShareSlack || ops[q].end <= ops[q].start) {
      continue;
    }
    const double rounds = std::ceil(waves[q] - kShareSlack);
    const Ns wave = static_cast<Ns>(static_cast<double>(ops[q].end - ops[q].start) / rounds);
    const Ns last = ops[q].end - wave;  // its last wave's start
    std::size_t j = q + 1;  // the first op started in that wave
    for (std::size_t hi = ops.size(); j < hi;) {
      const std::size_t mid = j + (hi - j) / 2;
      if (ops[mid].start < last) {
        j = mid + 1;
      } else {
        hi = mid;
      }
    }
    for (; j < ops.size() && ops[j].start < ops[q].end; ++j) {
      if (engine[j] != ScheduleModel::kSmEngine || view.op(ops[j]).kind != OpKind::kKernel) continue;
      const std::optional<Ns> ready = view.readyTime(j);
      if (!ready || *ready > last) continue;  // ready inside the wave: its start shows no slot
      const double at = static_cast<double>(ops[j].start - last) / static_cast<double>(std::max<Ns>(1, wave));
      if (at > 0.5) handoff.emplace_back(q, static_cast<float>(std::min(at, 1.0)));
      break;
    }
  }
  return handoff;
}

// Per one-wave device-filling kernel of the trace, where in its run (a fraction) the trace first
// started a later one-wave device-filling kernel inside it (0 where none): the point from which its
// blocks leave slots to the kernels queued behind it (ScheduleRun::roomPastSlotsFreeing).
std::vector<float> observeSlotsFreeing(const DeviceView& view, const std::vector<double>& share,
                                       const std::vector<double>& waves) {
  const auto& ops = view.ops();
  std::vector<float> at(ops.size(), 0.0f);
  // Device-filling by its limits: a kernel whose grid or the device's limits are missing has share
  // 1 by default (the Kineto traces' NCCL kernels of 24 blocks), and another started inside it
  // early in its run shows only that it never filled the device.
  const Device* device = view.device();
  const auto filler = [&](std::size_t pos) {
    const GpuOp& op = view.op(ops[pos]);
    return op.kind == OpKind::kKernel && ops[pos].end > ops[pos].start && waves[pos] <= 1.0 + kShareSlack &&
           share[pos] >= 1.0 - kFillsSlack && device != nullptr && device->sm_count > 0 && op.grid_blocks > 0 &&
           residentBlocksPerSm(*device, op) > 0;
  };
  std::vector<std::size_t> fillers;
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    if (filler(pos)) fillers.push_back(pos);
  }
  std::stable_sort(fillers.begin(), fillers.end(),
                   [&](std::size_t a, std::size_t b) { return ops[a].start < ops[b].start; });
  for (std::size_t k = 0; k < fillers.size(); ++k) {
    const Ns start = ops[fillers[k]].start;
    const Ns end = ops[fillers[k]].end;
    for (std::size_t l = k + 1; l < fillers.size() && ops[fillers[l]].start < end; ++l) {
      if (ops[fillers[l]].start <= start) continue;
      at[fillers[k]] = static_cast<float>(static_cast<double>(ops[fillers[l]].start - start) /
                                          static_cast<double>(end - start));
      break;
    }
  }
  return at;
}

// Per kernel of the trace, the SM share its blocks had over its recorded run, as a fraction of
// its own (`rate`, in 127ths; 0 where unknown): what the kernels running
// beside it left, never more than its own share, averaged over its run. Each holds its share from
// its start to its end, a kernel of several waves to the middle of its last wave (where the
// schedule hands its SMs on: drainTails). Kernels started after it count too: the block scheduler
// serves the kernels of concurrent streams side by side, not the first one's blocks first (g000100's
// fixed program started 528x256 and 64x256 kernels inside a 1056x256 kernel's run), so where the
// trace ran more beside it than the device holds, those took slots its blocks waited for. Where
// the kernels beside it held all of the SMs at some point of its run (shares that do not add up
// even so: the grid or device data is missing, or blocks the model does not place), or more than
// 64 ran beside it, it is unknown. A one-wave device-filling kernel whose slots the trace saw
// freeing (observeSlotsFreeing) holds none of them for the kernels started past that point.
std::vector<std::uint8_t> recordRates(const DeviceView& view, const std::vector<double>& share,
                                      const std::vector<double>& waves, const std::vector<float>& slots_free_at) {
  const auto& ops = view.ops();
  std::vector<std::uint8_t> rate(ops.size(), 0);
  std::vector<std::size_t> kernels;
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    if (view.op(ops[pos]).kind == OpKind::kKernel && ops[pos].end > ops[pos].start) kernels.push_back(pos);
  }
  std::stable_sort(kernels.begin(), kernels.end(),
                   [&](std::size_t a, std::size_t b) { return ops[a].start < ops[b].start; });
  const auto givesBack = [&](std::size_t pos) {
    const Ns end = ops[pos].end;
    if (waves[pos] <= 1.0 + kShareSlack) return end;
    const double duration = static_cast<double>(end - ops[pos].start);
    return end - static_cast<Ns>(duration / (2.0 * std::ceil(waves[pos] - kShareSlack)));
  };
  // A one-wave device-filling kernel whose slots the trace saw freeing holds none of them for the
  // kernels started past that point (ScheduleRun::roomPastSlotsFreeing).
  const auto givesBackToLater = [&](std::size_t pos) {
    const double at = pos < slots_free_at.size() ? slots_free_at[pos] : 0.0;
    if (at <= 0.0) return givesBack(pos);
    return ops[pos].start + static_cast<Ns>(static_cast<double>(ops[pos].end - ops[pos].start) * at);
  };
  constexpr std::size_t kMostBeside = 64;
  // (when it gives its SMs back, share, when it gives them back to a kernel started later) of the
  // kernels started so far
  std::vector<std::tuple<Ns, double, Ns>> holding;
  std::vector<std::pair<Ns, double>> changes;  // (when, share taken (+) or given back (-)) during its run
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    const std::size_t pos = kernels[k];
    const Ns start = ops[pos].start;
    const Ns end = ops[pos].end;
    holding.erase(std::remove_if(holding.begin(), holding.end(),
                                 [&](const auto& h) { return std::get<0>(h) <= start; }),
                  holding.end());
    holding.emplace_back(givesBack(pos), share[pos], givesBackToLater(pos));
    if (holding.size() > kMostBeside) continue;
    double held = 0.0;
    changes.clear();
    for (std::size_t h = 0; h + 1 < holding.size(); ++h) {  // not its own entry, the last
      if (std::get<2>(holding[h]) <= start) continue;
      held += std::get<1>(holding[h]);
      changes.emplace_back(std::get<2>(holding[h]), -std::get<1>(holding[h]));
    }
    bool known = true;
    for (std::size_t later = k + 1; later < kernels.size() && ops[kernels[later]].start < end; ++later) {
      if (later - k > kMostBeside) {
        known = false;
        break;
      }
      const std::size_t other = kernels[later];
      const Ns back = givesBack(other);
      if (back <= ops[other].start) continue;
      changes.emplace_back(ops[other].start, share[other]);
      changes.emplace_back(back, -share[other]);
    }
    if (!known) continue;
    // From the middle of its own last wave the schedule hands its SMs on and keeps its end: its
    // blocks are all placed, and what runs beside it from there takes none of their slots.
    const Ns placed = givesBack(pos);
    changes.emplace_back(placed, 0.0);
    std::sort(changes.begin(), changes.end());
    const double own = share[pos];
    double work = 0.0;  // share x ns
    Ns t = start;
    for (std::size_t c = 0; c <= changes.size() && t < end && known; ++c) {
      const Ns until = c < changes.size() ? std::clamp(changes[c].first, start, end) : end;
      if (until > t) {
        const double left = t >= placed ? 1.0 : 1.0 - held;
        known = left > 1e-6;
        work += std::min(own, left) * static_cast<double>(until - t);
        t = until;
      }
      if (c < changes.size()) held += changes[c].second;
    }
    if (!known) continue;
    const double progress = work / (own * static_cast<double>(end - start));
    rate[pos] = static_cast<std::uint8_t>(std::clamp<long>(std::lround(progress * 127.0), 1, 127));
  }
  return rate;
}

}  // namespace

double ScheduleModel::drainHandoff(std::size_t position) const {
  const auto it = std::lower_bound(drain_handoff_.begin(), drain_handoff_.end(), position,
                                   [](const std::pair<std::size_t, float>& x, std::size_t p) { return x.first < p; });
  return it != drain_handoff_.end() && it->first == position ? it->second : 0.5;
}

// The driver's service of GPU page faults, from the trace's fault groups of the device and its
// migrations to it for faults (servedFault, faultMigration: not explicit prefetches): a
// kernel is served in each stretch that begins inside its run (of its process), and any kernel
// whose run overlaps a stretch ran beside that service. Only the records that begin inside the
// view's span are read (both lists are in start order): a trace of many windows is not read whole
// for each.
void ScheduleModel::observeFaultService(const DeviceView& view) {
  const UnifiedMemory& um = view.trace().unified_memory;
  const Ns from = view.spanStart(), to = view.spanEnd();
  std::vector<std::pair<Interval, std::uint32_t>> service;  // (stretch, pid)
  auto f = std::lower_bound(um.gpu_faults.begin(), um.gpu_faults.end(), from,
                            [](const UmPageFaultGroup& g, Ns t) { return g.start < t; });
  for (; f != um.gpu_faults.end() && f->start < to; ++f) {
    if (servedFault(*f, view.deviceId()) && f->end > f->start) {
      service.push_back({{f->start, f->end}, f->pid});
    }
  }
  if (service.empty()) return;
  auto m = std::lower_bound(um.migrations.begin(), um.migrations.end(), from,
                            [](const UmMigration& g, Ns t) { return g.start < t; });
  for (; m != um.migrations.end() && m->start < to; ++m) {
    if (faultMigration(*m, view.deviceId()) && m->end > m->start) {
      service.push_back({{m->start, m->end}, m->pid});
    }
  }
  std::sort(service.begin(), service.end(),
            [](const auto& a, const auto& b) { return a.first.start < b.first.start; });
  std::vector<Interval> all;
  all.reserve(service.size());
  for (const auto& s : service) all.push_back(s.first);
  all = unionOf(std::move(all));
  const auto& ops = view.ops();
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    if (engine_[pos] != kSmEngine) continue;
    const ScopedOp run = ops[pos];
    const auto after = std::upper_bound(all.begin(), all.end(), run.start,
                                        [](Ns t, const Interval& i) { return t < i.end; });
    if (after == all.end() || after->start >= run.end) continue;  // no service during its run
    beside_faults_.push_back(pos);
    const std::uint32_t pid = view.op(run).pid;
    auto it = std::lower_bound(service.begin(), service.end(), run.start,
                               [](const auto& s, Ns t) { return s.first.start < t; });
    std::vector<Interval> own;
    for (; it != service.end() && it->first.start < run.end; ++it) {
      if (it->second != 0 && pid != 0 && it->second != pid) continue;
      own.push_back({it->first.start - run.start, std::min(it->first.end, run.end) - run.start});
    }
    if (!own.empty()) fault_service_.emplace_back(pos, unionOf(std::move(own)));
  }
}

const std::vector<Interval>* ScheduleModel::faultServiceOf(std::size_t position) const {
  const auto it = std::lower_bound(fault_service_.begin(), fault_service_.end(), position,
                                   [](const auto& f, std::size_t p) { return f.first < p; });
  return it != fault_service_.end() && it->first == position ? &it->second : nullptr;
}

ScheduleModel::ScheduleModel(const DeviceView& view)
    : recorded_span_(view.spanLength()), span_start_(view.spanStart()) {
  const auto& ops = view.ops();
  const Device* device = view.device();
  const std::size_t n = ops.size();
  release_.reserve(n);
  duration_.reserve(n);
  engine_.reserve(n);
  share_.reserve(n);
  stream_prev_.reserve(n);
  stream_next_.assign(n, -1);
  std::unordered_map<std::uint64_t, std::int64_t> last_on_stream;
  std::unordered_map<std::uint64_t, std::uint32_t> stream_number;
  std::vector<std::uint64_t> stream_thread;  // per stream: the first launching thread, + 1
  std::vector<Ns> issued;
  issued.reserve(n);
  stream_of_.reserve(n);
  Ns kernels_end = std::numeric_limits<Ns>::min();  // the latest end of the device-filling kernels so far
  std::array<Ns, kEngineSlots> engine_end;  // per engine: the latest end of the trace's ops so far
  engine_end.fill(std::numeric_limits<Ns>::min());
  for (std::size_t pos = 0; pos < n; ++pos) {
    const ScopedOp scoped = ops[pos];
    const GpuOp& op = view.op(scoped);
    auto [it, inserted] = last_on_stream.try_emplace(DeviceView::streamKey(op), -1);
    const std::int64_t prev = it->second;
    stream_prev_.push_back(prev);
    {
      const auto [number, added] =
          stream_number.try_emplace(DeviceView::streamKey(op), static_cast<std::uint32_t>(stream_number.size()));
      if (added) {
        stream_thread.push_back(0);
        shared_.push_back(0);
      }
      stream_of_.push_back(number->second);
      if (const auto launch = view.launchCall(op)) {
        const std::uint64_t thread = threadKey(view.call(*launch)) + 1;
        std::uint64_t& first_thread = stream_thread[number->second];
        if (first_thread == 0) first_thread = thread;
        if (first_thread != thread) shared_[number->second] = 1;
      }
    }
    if (prev >= 0) stream_next_[static_cast<std::size_t>(prev)] = static_cast<std::int64_t>(pos);
    it->second = static_cast<std::int64_t>(pos);
    // An op cannot start before its launch call returned; one whose call returned after it
    // started (a synchronous or pageable copy) blocked in that call: see releaseBlocked.
    Ns release = view.spanStart();
    Ns issue = scoped.start;
    const auto launch = view.launchCall(op);
    if (launch) {
      const RuntimeCall& call = view.call(*launch);
      release = std::min(call.end + view.launchLatency(engineOf(op)), scoped.start);
      if (call.end > scoped.start) blocked_call_start_.emplace_back(pos, call.start);
      // A blocking copy or memset that returned before its op began submitted it as it returned.
      const ApiKind kind = view.callKind(*launch);
      const bool blocking = kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync;
      issue = blocking ? submittedAt(view, *launch, scoped.start) : call.start;
    }
    release_.push_back(std::max(release, view.spanStart()));
    duration_.push_back(scoped.end - scoped.start);
    queued_floor_.push_back(queuedCopyFloor(op));
    {
      const std::uint8_t slot = engineSlot(engineOf(op));
      const Ns released = std::max(release, view.spanStart());
      ran_idle_.push_back(slot < kEngineSlots && released > engine_end[slot] ? 1 : 0);
      if (slot < kEngineSlots) engine_end[slot] = std::max(engine_end[slot], scoped.end);
    }
    engine_.push_back(engineSlot(engineOf(op)));  // communication kernels take SMs too
    share_.push_back(op.kind == OpKind::kKernel ? smShare(device, op) : 1.0);
    waves_.push_back(op.kind == OpKind::kKernel ? wavesOf(device, op) : 1.0);
    every_sm_.push_back(op.kind == OpKind::kKernel && device != nullptr && device->sm_count > 0 &&
                                residentBlocksPerSm(*device, op) > 0
                            ? (static_cast<std::int64_t>(op.grid_blocks) >= device->sm_count ? 1 : 0)
                            : (share_.back() >= kBlockOnEverySmShare - kShareSlack ? 1 : 0));
    began_beside_.push_back(op.kind == OpKind::kKernel && kernels_end > scoped.start ? 1 : 0);
    if (op.kind == OpKind::kKernel && share_.back() >= 1.0 - kFillsSlack) kernels_end = std::max(kernels_end, scoped.end);
    // Ops of one stream were submitted in the order they ran: an op whose call began before its
    // predecessor's (host threads sharing a stream, one call waiting in the driver) was
    // submitted after it.
    issued.push_back(prev >= 0 ? std::max(issue, issued[static_cast<std::size_t>(prev)]) : issue);
  }
  {
    // Host<->device copies that ran beside copies in the other direction ran slowed
    // (kDuplexSlowdown): their own durations are the recorded ones less that slowdown, which a
    // schedule adds back where they overlap again (ScheduleRun::start).
    std::vector<std::size_t> up, down;
    for (std::size_t pos = 0; pos < n; ++pos) {
      if (engine_[pos] == kHtoDSlot) up.push_back(pos);
      if (engine_[pos] == kDtoHSlot) down.push_back(pos);
    }
    const auto unslow = [&](const std::vector<std::size_t>& mine, const std::vector<std::size_t>& theirs) {
      std::size_t first = 0;
      std::vector<Ns> base(mine.size());
      for (std::size_t k = 0; k < mine.size(); ++k) {
        const ScopedOp& a = ops[mine[k]];
        while (first < theirs.size() && ops[theirs[first]].end <= a.start) ++first;
        Ns overlap = 0;
        for (std::size_t j = first; j < theirs.size() && ops[theirs[j]].start < a.end; ++j) {
          const ScopedOp& b = ops[theirs[j]];
          overlap += std::max<Ns>(0, std::min(a.end, b.end) - std::max(a.start, b.start));
        }
        const Ns length = a.end - a.start;
        overlap = std::min(overlap, length);
        base[k] = length - static_cast<Ns>(static_cast<double>(overlap) * kDuplexSlowdown / (1.0 + kDuplexSlowdown));
      }
      return base;
    };
    const std::vector<Ns> up_base = unslow(up, down), down_base = unslow(down, up);
    for (std::size_t k = 0; k < up.size(); ++k) duration_[up[k]] = up_base[k];
    for (std::size_t k = 0; k < down.size(); ++k) duration_[down[k]] = down_base[k];
  }
  drain_handoff_ = observeDrainHandoff(view, engine_, waves_);
  slots_free_at_ = observeSlotsFreeing(view, share_, waves_);
  recorded_rate_ = recordRates(view, share_, waves_, slots_free_at_);
  observeFaultService(view);
  turnaround_[1] = view.engineTurnaround(Engine::kH2D);
  turnaround_[2] = view.engineTurnaround(Engine::kD2H);
  turnaround_[3] = view.engineTurnaround(Engine::kD2D);
  turnaround_[4] = view.engineTurnaround(Engine::kMemset);
  const Engine slot_engine[kHostEngine] = {Engine::kCompute, Engine::kH2D, Engine::kD2H,
                                            Engine::kD2D, Engine::kMemset};
  for (std::size_t from = 0; from < kHostEngine; ++from) {
    for (std::size_t to = 0; to < kHostEngine; ++to) {
      handoff_[from][to] = view.streamHandoff(slot_engine[from], slot_engine[to]);
    }
  }
  releaseBlocked(view, {});
  issued_ = issued;
  {
    // Each thread issues its ops in the order of their launch calls.
    std::vector<std::tuple<std::uint64_t, Ns, std::size_t>> calls;
    for (std::size_t pos = 0; pos < n; ++pos) {
      if (const auto launch = view.launchCall(view.op(ops[pos]))) {
        calls.emplace_back(threadKey(view.call(*launch)), view.call(*launch).start, pos);
      }
    }
    std::sort(calls.begin(), calls.end());
    thread_prev_.assign(n, -1);
    for (std::size_t k = 1; k < calls.size(); ++k) {
      if (std::get<0>(calls[k]) == std::get<0>(calls[k - 1])) {
        thread_prev_[std::get<2>(calls[k])] = static_cast<std::int64_t>(std::get<2>(calls[k - 1]));
      }
    }
  }
  // Issue order (launch call start, or when a blocking copy or memset that returned before its op
  // submitted it; ties by start order): engines take ready work in this order,
  // and an edge counts only when it points forward in it.
  std::vector<std::size_t> order(n);
  for (std::size_t pos = 0; pos < n; ++pos) order[pos] = pos;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return issued[a] < issued[b]; });
  rank_.resize(n);
  for (std::size_t r = 0; r < n; ++r) rank_[order[r]] = r;
  engine_holds_ = engineHolds(view);
  // A held copy is next in the hardware queue its engine was serving: it follows the copy it was
  // held behind at most the engine's turnaround after it, as queued copies do, not the recorded
  // gap, so that no other queue's ready copy takes the engine in between (then keeping it, sticky,
  // for its whole run: g000288). It still competes by when it became ready.
  for (OrderEdge& hold : engine_holds_) hold.lag = std::min(hold.lag, turnaround_[engine_[hold.to]]);
  addPrestage(view);
}

// The driver copies a pageable HtoD copy through pinned staging buffers, the host staging the
// next part while the engine moves the last: as recorded, right after its call began, the copy
// moved at the rate its staging allowed. One whose op waits (its stream busy) while its call
// stages has part of its bytes staged ahead, and those move at the pinned rate once it starts:
// in the fixed programs' own traces (/work/vtraces14), pageable uploads of 2.3-13 MB whose call
// began 0.3-1.2 ms earlier than recorded, their stream busy, took 30-70 µs less (g000016's five
// 5.2 MB uploads 233-291 -> 187-218 µs, g000085's 13 MB 727 -> 658 µs, g000206's 2.3 MB 250 ->
// 73 µs), about 1 MiB staged ahead at the pinned rate (median over 15 such pairs).
void ScheduleModel::addPrestage(const DeviceView& view) {
  constexpr double kPrestageBytes = 1024.0 * 1024.0;
  const auto& ops = view.ops();
  PinnedRate pinned;
  bool have_rate = false;
  for (const auto& [pos, call_start] : blocked_call_start_) {
    const GpuOp& op = view.op(ops[pos]);
    if (op.kind != OpKind::kMemcpy || op.copy_kind != CopyKind::kHtoD || op.src_kind != MemKind::kPageable ||
        op.bytes == 0 || duration_[pos] <= 0) {
      continue;
    }
    if (!have_rate) {
      pinned = pinnedRate(view, Engine::kH2D);
      have_rate = true;
    }
    if (pinned.bytes_per_ns <= 0.0) return;
    const double bytes = static_cast<double>(op.bytes);
    const double gain = static_cast<double>(duration_[pos]) / bytes - 1.0 / pinned.bytes_per_ns;
    if (gain <= 0.0) continue;
    if (prestage_.empty()) prestage_.resize(size());
    prestage_[pos] = {std::min(kPrestageBytes, bytes), bytes / static_cast<double>(duration_[pos]), gain,
                      ops[pos].start};
  }
}

ScheduleModel ScheduleModel::withLanes(const std::vector<std::uint64_t>& lane) const {
  ScheduleModel split = *this;
  const std::size_t n = size();
  split.stream_prev_.assign(n, -1);
  split.stream_next_.assign(n, -1);
  std::unordered_map<std::uint64_t, std::int64_t> last_on_lane;
  for (std::size_t pos = 0; pos < n && pos < lane.size(); ++pos) {
    auto [it, inserted] = last_on_lane.try_emplace(lane[pos], -1);
    split.stream_prev_[pos] = it->second;
    if (it->second >= 0) split.stream_next_[static_cast<std::size_t>(it->second)] = static_cast<std::int64_t>(pos);
    it->second = static_cast<std::int64_t>(pos);
  }
  return split;
}

ScheduleModel ScheduleModel::withSlotsFreeingAt(const std::vector<std::size_t>& positions, float at,
                                                const std::vector<std::size_t>& takers) const {
  ScheduleModel changed = *this;
  for (const std::size_t p : positions) {
    const bool filler = p < size() && engine_[p] == kSmEngine && waves_[p] <= 1.0 + kShareSlack &&
                        share_[p] >= 1.0 - kFillsSlack;
    if (!filler || slots_free_at_[p] > 0.0f) continue;  // a point the trace showed stays
    changed.slots_free_at_[p] = at;
    if (changed.slots_drain_.empty()) changed.slots_drain_.assign(size(), 0);
    changed.slots_drain_[p] = 1;
  }
  if (changed.slots_drain_.empty()) return changed;
  changed.slots_taker_.assign(size(), 0);
  for (const std::size_t p : takers) {
    if (p < size()) changed.slots_taker_[p] = 1;
  }
  return changed;
}

ScheduleModel ScheduleModel::withDrainCostRecorded(const DeviceView& view) const {
  // What each kernel's recorded duration holds of the last wave of a multi-wave kernel it
  // started in, as ScheduleRun::shareTheDrain prices it: that wave holds the SMs it shares,
  // falling linearly to none at its end (half of them at its middle, where the schedule hands
  // them on), and the kernel's blocks advance at the share it leaves. A kernel of recorded
  // duration d that started `left` before that wave's end lost occupied * left / 2 where it
  // outlasted the wave, occupied * (d - d^2 / (2 left)) where it did not (occupied = left over
  // the wave's length). Ops are in start order; the multi-wave kernels still running at a
  // kernel's start are few (the device runs at most 128 kernels at once).
  const auto& ops = view.ops();
  const std::size_t n = ops.size();
  ScheduleModel changed = *this;
  changed.recorded_drain_cost_.assign(n, 0);
  std::vector<std::size_t> running;
  for (std::size_t pos = 0; pos < n; ++pos) {
    if (engine_[pos] != kSmEngine || view.op(ops[pos]).kind != OpKind::kKernel) continue;
    const Ns start = ops[pos].start;
    running.erase(std::remove_if(running.begin(), running.end(),
                                 [&](std::size_t q) { return ops[q].end <= start; }),
                  running.end());
    const double d = static_cast<double>(ops[pos].end - start);
    double cost = 0.0;
    for (const std::size_t q : running) {
      const double wave =
          static_cast<double>(ops[q].end - ops[q].start) / std::ceil(waves_[q] - kShareSlack);
      const double left = static_cast<double>(ops[q].end - start);
      if (left > wave) continue;  // it started before that kernel's last wave
      const double occupied = left / wave;
      cost = std::max(cost, d >= left ? occupied * left / 2.0 : occupied * (d - d * d / (2.0 * left)));
    }
    changed.recorded_drain_cost_[pos] = static_cast<Ns>(cost);
    if (waves_[pos] > 1.0 + kShareSlack && ops[pos].end > start) running.push_back(pos);
  }
  return changed;
}

ScheduleModel ScheduleModel::withGraphNodes(const std::vector<std::int64_t>& graph,
                                            Ns node_handoff, Ns entry) const {
  ScheduleModel changed = *this;
  changed.node_handoff_.assign(size(), -1);
  changed.graph_of_.assign(size(), -1);
  for (std::size_t p = 0; p < size() && p < graph.size(); ++p) changed.graph_of_[p] = graph[p];
  // Per position of a graph's op: the last op of that graph's run on its stream from it (a wide
  // barrier waits for it: waitForIssued), found once per stream, not walked per barrier.
  changed.graph_run_end_.assign(size(), -1);
  std::vector<std::size_t> chain;
  for (std::size_t head = 0; head < size(); ++head) {
    if (stream_prev_[head] >= 0) continue;
    chain.clear();
    for (std::int64_t p = static_cast<std::int64_t>(head); p >= 0; p = stream_next_[static_cast<std::size_t>(p)]) {
      chain.push_back(static_cast<std::size_t>(p));
    }
    for (std::size_t k = chain.size(); k-- > 0;) {
      const std::size_t p = chain[k];
      if (changed.graph_of_[p] < 0) continue;
      const bool same = k + 1 < chain.size() && changed.graph_of_[chain[k + 1]] == changed.graph_of_[p];
      changed.graph_run_end_[p] = same ? changed.graph_run_end_[chain[k + 1]] : static_cast<std::int64_t>(p);
    }
  }
  for (std::size_t p = 0; p < size() && p < graph.size(); ++p) {
    const std::int64_t prev = stream_prev_[p];
    if (graph[p] < 0 || prev < 0 || engine_[p] != kSmEngine) continue;
    const auto from = engine_[static_cast<std::size_t>(prev)];
    if (graph[static_cast<std::size_t>(prev)] != graph[p]) {
      // The graph's first kernel on its stream: the device enters the graph `entry` later.
      if (entry > 0) changed.node_handoff_[p] = handoff_[from][kSmEngine] + entry;
      continue;
    }
    if (from != kSmEngine) continue;
    changed.node_handoff_[p] = std::min(node_handoff, handoff_[kSmEngine][kSmEngine]);
  }
  return changed;
}

ScheduleModel ScheduleModel::withIssueOrder() const {
  ScheduleModel changed = *this;
  changed.issue_order_ = true;
  return changed;
}

ScheduleModel ScheduleModel::withBarrierIssueOrder(const std::vector<std::int64_t>& barrier,
                                                   const BarrierIssue& issued,
                                                   const std::vector<Ns>& reference,
                                                   const std::vector<std::uint64_t>& lane) const {
  ScheduleModel changed = *this;
  const std::size_t n = size();
  // Streams numbered by lane (the queues in issue order): a lane is shared when one of its ops'
  // streams was, or when it holds ops of several streams.
  if (lane.size() >= n) {
    std::unordered_map<std::uint64_t, std::uint32_t> number;
    std::vector<std::uint8_t> shared;
    std::vector<std::uint32_t> first_stream;
    for (std::size_t pos = 0; pos < n; ++pos) {
      const auto [it, added] = number.try_emplace(lane[pos], static_cast<std::uint32_t>(number.size()));
      if (added) {
        shared.push_back(shared_[stream_of_[pos]]);
        first_stream.push_back(stream_of_[pos]);
      } else if (first_stream[it->second] != stream_of_[pos] || shared_[stream_of_[pos]]) {
        shared[it->second] = 1;
      }
      changed.stream_of_[pos] = it->second;
    }
    changed.shared_ = shared;
  }
  changed.barrier_class_ = barrier;
  changed.barrier_class_.resize(size(), -1);
  if (issued.key.size() >= n) {
    changed.issue_.key.assign(issued.key.begin(), issued.key.begin() + static_cast<std::ptrdiff_t>(n));
    if (issued.own.size() >= n && issued.pusher.size() >= n) {
      changed.issue_.own.assign(issued.own.begin(), issued.own.begin() + static_cast<std::ptrdiff_t>(n));
      changed.issue_.pusher.assign(issued.pusher.begin(), issued.pusher.begin() + static_cast<std::ptrdiff_t>(n));
    }
  }
  if (reference.size() >= size()) {
    changed.reference_.assign(reference.begin(), reference.begin() + static_cast<std::ptrdiff_t>(size()));
  }
  return changed;
}

std::vector<Ns> ScheduleModel::issueReleases(const std::vector<OrderEdge>& edges) const {
  ScheduleRun run(*this, edges, {}, {}, {});
  run.run();
  return run.releases();
}

ScheduleModel ScheduleModel::withWideWaits() const {
  ScheduleModel changed = *this;
  changed.wide_waits_ = true;
  return changed;
}

ScheduleModel ScheduleModel::withIssuedAt(const std::vector<std::pair<std::size_t, Ns>>& issued) const {
  ScheduleModel changed = *this;
  const std::size_t n = size();
  for (const auto& [p, at] : issued) {
    if (p < n) changed.issued_[p] = std::max(changed.issued_[p], at);
    if (p < n && p < changed.issue_.key.size()) changed.issue_.key[p] = std::max(changed.issue_.key[p], at);
  }
  for (std::size_t p = 0; p < n; ++p) {
    const std::int64_t prev = stream_prev_[p];
    if (prev >= 0) changed.issued_[p] = std::max(changed.issued_[p], changed.issued_[static_cast<std::size_t>(prev)]);
  }
  std::vector<std::size_t> order(n);
  for (std::size_t pos = 0; pos < n; ++pos) order[pos] = pos;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return changed.issued_[a] < changed.issued_[b]; });
  for (std::size_t r = 0; r < n; ++r) changed.rank_[order[r]] = r;
  return changed;
}

ScheduleModel ScheduleModel::withPriority(const std::vector<std::size_t>& positions,
                                          const std::vector<std::size_t>& ragged) const {
  ScheduleModel changed = *this;
  changed.high_.assign(size(), 0);
  for (const std::size_t p : ragged) {
    if (p < size() && engine_[p] == kSmEngine) changed.high_[p] = 2;
  }
  for (const std::size_t p : positions) {
    if (engine_[p] == kSmEngine) changed.high_[p] = 1;
  }
  return changed;
}

ScheduleModel::ScheduleModel(const DeviceView& view, const HostTimeline& host,
                             const std::vector<OrderEdge>& recorded)
    : ScheduleModel(view) {
  if (!recorded.empty()) releaseBlocked(view, recorded);
  if (!host.empty()) addHost(view, host);
}

ScheduleModel::ScheduleModel(const DeviceView& view, const HostTimeline& host,
                             const std::vector<OrderEdge>& recorded,
                             const std::vector<std::size_t>& submitted_late)
    : ScheduleModel(view) {
  std::vector<bool> late(size(), false);
  for (const std::size_t p : submitted_late) {
    if (p >= size()) continue;
    late[p] = true;
    release_[p] = std::max(span_start_, view.ops()[p].start);
  }
  blocked_call_start_.erase(std::remove_if(blocked_call_start_.begin(), blocked_call_start_.end(),
                                           [&](const auto& b) { return late[b.first]; }),
                            blocked_call_start_.end());
  if (!recorded.empty()) releaseBlocked(view, recorded);
  if (!host.empty()) addHost(view, host);
}

// An op whose launch call blocked until it ran was released when the call began, plus the
// startup it took once the last of its recorded constraints had ended (its stream's previous op,
// the ops of `recorded` edges into it that ended before it started); the rest of the call's wait
// was for those ops, which the schedule keeps as order. Never released later than it started.
void ScheduleModel::releaseBlocked(const DeviceView& view, const std::vector<OrderEdge>& recorded) {
  const auto& ops = view.ops();
  std::unordered_map<std::size_t, Ns> constraint_end;  // position -> latest end of an edge's source
  for (const OrderEdge& e : recorded) {
    if (e.from >= size() || e.to >= size() || ops[e.from].end > ops[e.to].start) continue;
    auto [it, added] = constraint_end.emplace(e.to, ops[e.from].end + e.lag);
    if (!added) it->second = std::max(it->second, ops[e.from].end + e.lag);
  }
  for (const auto& [pos, call_start] : blocked_call_start_) {
    Ns waited_until = call_start;
    if (stream_prev_[pos] >= 0) {
      waited_until = std::max(waited_until, ops[static_cast<std::size_t>(stream_prev_[pos])].end);
    }
    if (const auto it = constraint_end.find(pos); it != constraint_end.end()) {
      waited_until = std::max(waited_until, it->second);
    }
    const Ns start = ops[pos].start;
    const Ns release = std::min(start, call_start + (start - std::min(waited_until, start)));
    release_[pos] = std::max(span_start_, release);
  }
}

// A barrier's return as the schedule computes it from the recorded ops: the later of its start
// and the end of the ops it waited for, plus its own time. That is its recorded return, except
// for a synchronize the trace's clocks show returning before those ops ended (returned_at_w: the
// host's and the device's clocks disagree by a few µs), which the schedule returns as they end.
// The thread's later calls and launches follow it by their recorded time after that return, so
// that the clocks' disagreement is not added once per step.
void ScheduleModel::addHost(const DeviceView& view, const HostTimeline& host) {
  const auto& ops = view.ops();
  const std::vector<std::size_t>& calls = view.calls();
  const std::uint64_t first_thread = calls.empty() ? 0 : threadKey(view.call(calls.front()));
  one_thread_ = std::all_of(calls.begin(), calls.end(),
                            [&](std::size_t call) { return threadKey(view.call(call)) == first_thread; });
  std::vector<Ns> returned(host.barriers.size());
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    const HostBarrier& barrier = host.barriers[b];
    Ns waited = barrier.start;
    for (std::size_t p : barrier.waited_for) waited = std::max(waited, ops[p].end);
    returned[b] = std::max(barrier.end, waited + barrier.own);
  }
  barriers_.reserve(host.barriers.size());
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    const HostBarrier& barrier = host.barriers[b];
    Barrier node{barrier.call, barrier.start, barrier.own, barrier.previous, 0};
    const ApiKind kind = view.callKind(barrier.call);
    node.wide = kind == ApiKind::kAllocation;
    if (isExplicitSync(kind)) {
      Ns waited = barrier.start;  // as the schedule sees it: until its W ended
      for (std::size_t p : barrier.waited_for) waited = std::max(waited, ops[p].end);
      node.slept = waited - barrier.start;
    } else {
      // A copy or memset call that blocked (synchronous, or with pageable memory) waits for the
      // work before its op as a synchronize waits for its work, then for its op.
      for (std::size_t p : barrier.waited_for) {
        const auto launch = view.launchCall(view.op(ops[p]));
        if (!launch || *launch != barrier.call) continue;
        node.own_op = static_cast<std::int64_t>(p);
        node.slept = std::max<Ns>(0, ops[p].start - barrier.start);
        break;
      }
    }
    if (barrier.previous >= 0) {
      node.after_previous =
          std::max<Ns>(0, barrier.start - returned[static_cast<std::size_t>(barrier.previous)]);
    }
    barriers_.push_back(node);
    const RuntimeCall& call = view.call(barrier.call);
    for (std::size_t p : barrier.waited_for) {
      barrier_waits_.push_back({p, b});
      const auto launch = view.launchCall(view.op(ops[p]));
      const bool other =
          launch && (view.call(*launch).tid != call.tid || view.call(*launch).pid != call.pid);
      wait_issued_only_.push_back(other ? 1 : 0);
    }
  }
  // How long before its release each op was issued: asked only of ops another thread's blocking
  // call waited for (ScheduleRun::issuedBy).
  if (std::find(wait_issued_only_.begin(), wait_issued_only_.end(), 1) != wait_issued_only_.end()) {
    issue_lead_.assign(size(), 0);
    for (std::size_t p = 0; p < size(); ++p) {
      if (const auto launch = view.launchCall(view.op(ops[p]))) {
        issue_lead_[p] = std::max<Ns>(0, release_[p] - view.call(*launch).start);
      }
    }
  }
  op_barrier_ = host.barrier_of;
  op_lag_.assign(size(), 0);
  for (std::size_t p = 0; p < size(); ++p) {
    if (op_barrier_[p] < 0) continue;
    op_lag_[p] = std::max<Ns>(0, release_[p] - returned[static_cast<std::size_t>(op_barrier_[p])]);
  }
}

Ns ScheduleModel::span(const std::vector<OrderEdge>& edges, const std::vector<Ns>& earlier,
                       const std::vector<FasterOp>& faster,
                       const std::vector<CallChange>& changed) const {
  if (!engine_holds_.empty()) {
    std::vector<OrderEdge> all = edges;
    all.insert(all.end(), engine_holds_.begin(), engine_holds_.end());
    return ScheduleRun(*this, all, earlier, faster, changed).run();
  }
  return ScheduleRun(*this, edges, earlier, faster, changed).run();
}

Ns ScheduleModel::savingWithout(const std::vector<OrderEdge>& kept,
                                const std::vector<OrderEdge>& removed) const {
  std::vector<OrderEdge> all = kept;
  all.insert(all.end(), removed.begin(), removed.end());
  return std::max<Ns>(0, span(all) - span(kept));
}

void recordLaunchCalls(const DeviceView& view, const std::vector<HostTimeGiven>& given, HostTurns& turns) {
  const std::size_t n = view.ops().size();
  turns.op_thread.assign(n, 0);
  turns.op_call_start.assign(n, 0);
  turns.op_call_end.assign(n, 0);
  std::unordered_map<std::size_t, Ns> given_in_call;
  for (const HostTimeGiven& g : given) {
    if (g.in_call && g.amount > 0) given_in_call[g.call] += g.amount;
  }
  for (std::size_t p = 0; p < n; ++p) {
    const auto call = view.launchCall(view.op(view.ops()[p]));
    if (!call) continue;
    const RuntimeCall& c = view.call(*call);
    turns.op_thread[p] = threadKey(c);
    const auto g = given_in_call.find(*call);
    turns.op_call_start[p] = std::min(c.end, c.start + (g != given_in_call.end() ? g->second : 0));
    turns.op_call_end[p] = c.end;
  }
}

bool addTurnsBeside(const HostTimeline& host, const HostTurns& turns, const ScheduledHost& times,
                    const std::vector<BusyCall>& busy, std::vector<std::uint8_t>& candidate,
                    std::vector<CallChange>& changed, std::vector<Ns>& earlier, Ns turn) {
  constexpr Ns kPast = 2'000;
  if (busy.empty()) return false;
  const std::size_t n = times.release.size();
  std::vector<Ns> delay(n, 0);
  bool any = false;
  // A call takes its turn where it begins once its thread's earlier calls of this round took
  // theirs (addTurnDelays moves it by them): per (barrier its launch followed, thread), the
  // candidates in call order. Deciding each call at its place in the schedule without them gave
  // every call of a thread begun inside a long busy call a turn, though the turns of the first
  // ones carry the later ones past its end (lab c1 g000009's own-streams: 62 turns in four rounds,
  // 41 so; c8 g006047's nonblocking-streams 267 and 175, where its fixed run has 109 calls begun in
  // a copy's last 27.5 µs).
  std::map<std::pair<std::int64_t, std::uint64_t>, std::vector<std::pair<Ns, std::size_t>>> order;
  for (std::size_t p = 0; p < n && p < candidate.size(); ++p) {
    if (!candidate[p] || times.release[p] == std::numeric_limits<Ns>::min()) continue;
    const std::int64_t barrier = p < host.barrier_of.size() ? host.barrier_of[p] : -1;
    order[{barrier, turns.op_thread[p]}].push_back({turns.op_call_start[p], p});
  }
  for (auto& [key, calls] : order) {
    std::sort(calls.begin(), calls.end());
    Ns moved = 0;  // the turns of the thread's earlier calls
    for (const auto& [start, p] : calls) {
      const Ns took = turns.op_call_end[p] - turns.op_call_start[p];
      if (took >= turn) continue;
      const Ns begins = times.release[p] + (turns.op_call_start[p] - times.recorded_release[p]) + moved;
      for (const BusyCall& b : busy) {
        if (b.thread == turns.op_thread[p] || b.begin > begins || b.end <= begins + kPast) continue;
        delay[p] = turn - took;
        moved += delay[p];
        candidate[p] = 0;  // one turn per call
        any = true;
        break;
      }
    }
  }
  if (!any) return false;
  addTurnDelays(host, turns, delay, changed, earlier);
  return true;
}

void addTurnDelays(const HostTimeline& host, const HostTurns& turns, const std::vector<Ns>& delay,
                   std::vector<CallChange>& changed, std::vector<Ns>& earlier) {
  const std::size_t n = delay.size();
  if (earlier.empty()) earlier.assign(n, 0);
  // Per (barrier its launch followed, thread): the ops in call order; each moves by the delays
  // of its thread's calls since that barrier, its own included.
  std::map<std::pair<std::int64_t, std::uint64_t>, std::vector<std::pair<Ns, std::size_t>>> after;
  for (std::size_t p = 0; p < n && p < host.barrier_of.size(); ++p) {
    if (turns.op_thread[p] == 0) continue;
    after[{host.barrier_of[p], turns.op_thread[p]}].push_back({turns.op_call_start[p], p});
  }
  std::map<std::pair<std::int64_t, std::uint64_t>, Ns> next_barrier;
  for (auto& [key, ops] : after) {
    std::sort(ops.begin(), ops.end());
    Ns acc = 0;
    for (const auto& [start, p] : ops) {
      acc += delay[p];
      earlier[p] -= acc;
    }
    if (acc > 0) next_barrier[key] = acc;
  }
  for (const HostBarrier& barrier : host.barriers) {
    const auto th = turns.call_thread.find(barrier.call);
    if (th == turns.call_thread.end()) continue;
    const auto it = next_barrier.find({barrier.previous, th->second});
    if (it == next_barrier.end()) continue;
    const auto same = [&](const CallChange& c) { return c.call == barrier.call; };
    const auto c = std::find_if(changed.begin(), changed.end(), same);
    if (c != changed.end()) {
      c->earlier -= it->second;
    } else {
      changed.push_back({barrier.call, true, barrier.own, -it->second});
    }
  }
}

Ns spanWithTurns(const ScheduleModel& model, const HostTurns& turns, const std::vector<OrderEdge>& edges,
                 const std::vector<Ns>& earlier, const std::vector<FasterOp>& faster,
                 const std::vector<CallChange>& changed, ScheduledHost* times) {
  return ScheduleRun::spanWithTurns(model, turns, edges, earlier, faster, changed, times);
}

}  // namespace cuoverlap::diagnosis
