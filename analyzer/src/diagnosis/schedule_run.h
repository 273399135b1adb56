// The what-if schedule's simulation (ScheduleRun: one run of ScheduleModel::span, event by event)
// and what it shares with the model's construction (schedule_estimate.cpp). Internal to the two
// files: the rules use schedule_estimate.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "diagnosis/schedule_estimate.h"
#include "diagnosis/schedule_turns.h"

namespace cuoverlap::diagnosis {

inline constexpr double kShareSlack = 1e-9;
// A host<->device copy that runs beside a copy in the other direction runs longer by this share of
// the time they overlap, each of the two: the link's two directions are not independent. On the
// lab corpus's H100 traces (pinned copies of 512 KiB or more, c1 baselines), copies overlapped
// by a copy in the other direction for over 80% of their run moved 45.1 GB/s HtoD and 47.6 DtoH
// (median; 273 and 210 copies) against 48.8 and 52.5 with no such overlap (3,732 and 2,172):
// ×1.08 and ×1.10; the same sizes compared (≥ 1 MiB) ×1.04-1.10 HtoD, ×1.03-1.20 DtoH. From 0.04
// to 0.08 the lab's corpora gain alike (c1 +2 to +3 within, nothing lost); 0.03 and 0.09 each
// lose a held-out case of another finding by a few µs.
inline constexpr double kDuplexSlowdown = 0.08;

// A small pinned HtoD copy queued on its engine (its launch call returned before the engine's
// previous copy ended) runs longer than one that finds the engine idle: in the lab's fixed
// programs on an H100 (/work/vt34, 2026-11-27), copies of at most 4 KiB took 2.40 µs queued
// (median of 60,789; p10 2.24) against 0.96 µs issued to an idle engine (5,337 synchronous
// ones), 4-12 KiB 2.59 against 1.09, 12-20 KiB 2.75 against 1.82; from about 24 KiB the two
// agree (24,656 B: 2.88 isolated, 2.91 queued). So a schedule that queues copies the trace ran
// one at a time (sync-memcpy's fix issues 768 uploads of 12,496 B that ran 1.31 µs each; they
// ran 2.43 µs each in the fixed program) runs each at least kQueuedCopyFloorNs plus its bytes at
// kQueuedCopyBytesPerNs, on top of the engine's turnaround (2.3-2.75 µs for the sizes above).
// Uploads up to kQueuedCopyMaxBytes (past ~24 KiB the floor is below the copies' own time).
inline constexpr Ns kQueuedCopyFloorNs = 2'300;
inline constexpr double kQueuedCopyBytesPerNs = 50.0;
inline constexpr std::uint64_t kQueuedCopyMaxBytes = 64 << 10;

inline Ns queuedCopyFloor(const GpuOp& op) {
  const bool small_pinned_upload = op.kind == OpKind::kMemcpy && engineOf(op) == Engine::kH2D &&
                                   op.src_kind == MemKind::kPinned && op.bytes <= kQueuedCopyMaxBytes;
  if (!small_pinned_upload) return 0;
  return kQueuedCopyFloorNs + static_cast<Ns>(static_cast<double>(op.bytes) / kQueuedCopyBytesPerNs);
}
inline constexpr std::uint8_t kHtoDSlot = 1;  // engineSlot(Engine::kH2D)
inline constexpr std::uint8_t kDtoHSlot = 2;  // engineSlot(Engine::kD2H)

// Min-heaps of (key, position).
using Keyed = std::pair<Ns, std::size_t>;
using MinHeap = std::priority_queue<Keyed, std::vector<Keyed>, std::greater<Keyed>>;

// An engine's ready ops in order of ((high, low), position): a rank of one number is (its value
// >> 20, its low 20 bits), a copy's (the time it joined the engine's queues, its issue rank). The
// same order as one number (time << 20) + rank, without that number's overflow (a time past 2^43
// ns or a negative one from a corrupt trace, a view of 2^20 ops).
using RankKey = std::pair<std::pair<Ns, Ns>, std::size_t>;
using RankHeap = std::priority_queue<RankKey, std::vector<RankKey>, std::greater<RankKey>>;
inline constexpr int kRankLowBits = 20;

inline std::pair<Ns, Ns> splitRank(Ns rank) {
  return {rank >> kRankLowBits, rank & ((Ns{1} << kRankLowBits) - 1)};
}

// One simulation of ScheduleModel::span: the state of every queue and engine, advanced from event
// to event (an op's end, or the moment a dependency-free op is released).
class ScheduleRun {
 public:
  ScheduleRun(const ScheduleModel& model, const std::vector<OrderEdge>& edges,
              const std::vector<Ns>& earlier, const std::vector<FasterOp>& faster,
              const std::vector<CallChange>& changed);
  Ns run();
  // The calls of `turns` take their turn where this schedule begins them beside another thread's
  // holding call (schedule_turns.h).
  void setTurns(const HostTurns& turns);
  static Ns spanWithTurns(const ScheduleModel& model, const HostTurns& turns,
                          const std::vector<OrderEdge>& edges, const std::vector<Ns>& earlier,
                          const std::vector<FasterOp>& faster, const std::vector<CallChange>& changed,
                          ScheduledHost* times) {
    std::vector<OrderEdge> all = edges;
    all.insert(all.end(), model.engine_holds_.begin(), model.engine_holds_.end());
    ScheduleRun run(model, all, earlier, faster, changed);
    run.setTurns(turns);
    if (times != nullptr) run.binder_.assign(model.size() + model.barriers_.size(), -1);
    const Ns span = run.run();
    if (times != nullptr) run.hostTimes(*times);
    return span;
  }
  void hostTimes(ScheduledHost& times) const {
    const std::size_t n = m_.size();
    times.release.assign(n, std::numeric_limits<Ns>::min());
    for (std::size_t p = 0; p < n; ++p) times.release[p] = releaseOf(p);
    times.recorded_release = m_.release_;
    times.op_end.assign(n, std::numeric_limits<Ns>::min());
    for (std::size_t p = 0; p < n; ++p) {
      if (finished_[p]) times.op_end[p] = end_[p];
    }
    for (std::size_t b = 0; b < m_.barriers_.size(); ++b) {
      if (!finished_[n + b]) continue;
      times.call[m_.barriers_[b].call] = {beganAt(b), end_[n + b]};
    }
    times.binder = binder_;
    times.node_end.assign(n + m_.barriers_.size(), std::numeric_limits<Ns>::min());
    times.node_call.assign(m_.barriers_.size(), 0);
    for (std::size_t v = 0; v < times.node_end.size(); ++v) {
      if (finished_[v]) times.node_end[v] = end_[v];
    }
    for (std::size_t b = 0; b < m_.barriers_.size(); ++b) times.node_call[b] = m_.barriers_[b].call;
  }
  // Op `p`'s release once the barrier it follows returned (the minimum of Ns before).
  Ns releaseOf(std::size_t p) const {
    const std::int64_t barrier = op_barrier_.empty() ? -1 : op_barrier_[p];
    if (barrier < 0) return own_release_.empty() ? ready_[p] : own_release_[p];
    const std::size_t node = m_.size() + static_cast<std::size_t>(barrier);
    if (!finished_[node]) return std::numeric_limits<Ns>::min();
    const Ns shift = resume_shift_.empty() ? 0 : resume_shift_[static_cast<std::size_t>(barrier)];
    return end_[node] + std::max<Ns>(0, op_lag_[p] + shift);
  }
  // Per op: the release it was issued at (issueOrdered), the minimum of Ns for none.
  std::vector<Ns> releases() const {
    std::vector<Ns> out = issue_release_;
    out.resize(m_.size(), std::numeric_limits<Ns>::min());
    return out;
  }

 private:
  struct EngineState {
    MinHeap waiting;     // (ready time, position): dependencies done, not yet released
    RankHeap queued;     // (issue rank, position): ready now
    bool busy = false;
    Ns free_at = std::numeric_limits<Ns>::min();  // its last op's end plus the engine's turnaround
    std::int64_t last = -1;  // the op it served last
  };

  // `to` may start no earlier than `lag` after `from` ends.
  struct Successor {
    std::size_t to = 0;
    Ns lag = 0;
  };

  void addHostNodes(const std::vector<CallChange>& changed, const std::vector<Ns>& earlier,
                    std::vector<Successor>& to, std::vector<std::size_t>& from);
  void addSuccessors(const std::vector<OrderEdge>& edges, const std::vector<CallChange>& changed,
                     const std::vector<Ns>& earlier);
  std::uint8_t engineOf(std::size_t node) const {
    return node < m_.size() ? m_.engine_[node] : ScheduleModel::kHostEngine;
  }
  void becomeAvailable(std::size_t pos);
  void promote(EngineState& engine);
  void dispatchCopies(std::size_t slot);
  void dispatchKernels();
  bool high(std::size_t pos) const { return !m_.high_.empty() && pos < m_.size() && m_.high_[pos] == 1; }
  bool ragged(std::size_t pos) const { return !m_.high_.empty() && pos < m_.size() && m_.high_[pos] == 2; }
  double stealFromPlacing(std::size_t pos, double wanted);
  bool oneWaveFiller(std::size_t pos) const {
    return pos < m_.size() && m_.engine_[pos] == ScheduleModel::kSmEngine && !multiWave(pos) &&
           m_.share_[pos] >= 1.0 - kFillsSlack;
  }
  double roomPastSlotsFreeing(std::size_t pos, std::vector<std::size_t>& donors);
  void dispatchHost();
  void start(std::size_t pos);
  void releaseSms(std::size_t ended);
  void endBehindHeldSlots(std::size_t pos);
  void drainTails(Ns time);
  bool multiWave(std::size_t pos) const { return m_.waves_[pos] > 1.0 + kShareSlack; }
  void finishAt(Ns time);
  std::int64_t stickyCandidate(const EngineState& engine, std::size_t slot) const;
  Ns nextEvent() const;
  // ready_[to] = max(ready_[to], at), remembering `from` (a node) as its binder where it raised it.
  void raise(std::size_t to, Ns at, std::size_t from) {
    if (at > ready_[to]) {
      ready_[to] = at;
      if (!binder_.empty()) binder_[to] = static_cast<std::int64_t>(from);
    }
  }

  const ScheduleModel& m_;
  std::vector<Ns> duration_;                   // the model's, with the faster ops' applied
  std::vector<Ns> ready_;                      // release, then max with predecessors' ends
  std::vector<std::int64_t> binder_;  // per node: the node whose end set ready_ last (-1: none); empty
                                      // unless the run's host times are asked for (spanWithTurns)
  std::vector<Ns> earlier_;                    // per op: host time given back before its release
  std::vector<Ns> released_at_;                // per op: when its release (not its stream) let it go
  std::vector<std::uint32_t> remaining_;       // predecessors not yet finished
  std::vector<std::size_t> first_successor_;   // CSR over successors
  std::vector<Successor> successors_;
  std::vector<std::uint8_t> started_;
  EngineState engines_[ScheduleModel::kEngines];
  double sm_used_ = 0.0;
  std::vector<double> taken_;                  // per kernel: the SM share it holds
  std::vector<double> first_taken_;            // per kernel: the SM share it took when it started
  std::vector<std::size_t> fillers_;           // started one-wave device-filling kernels, not yet pruned
  std::vector<double> handed_on_;              // per such kernel: the share of its room kernels queued behind it took
  // per kernel whose recorded run is known (recordedRate > 0): the SM share its end was computed
  // for (its progress rate is that over its full share), 0 for the others
  std::vector<double> rate_share_;
  // per kernel: it started short of its share beside kernels started before it, each with a block
  // on every SM (startsBesideEarlierBlocks); cleared once its whole share is free (releaseSms)
  std::vector<std::uint8_t> in_rounds_;
  // Whether every kernel holding SMs as `pos` starts has a block on every SM (ScheduleModel::
  // every_sm_: no SM is left free to take the blocks the held slots would run) and started before
  // it (its slots free inside `pos`'s first round, not at the same instant as `pos`'s own first
  // blocks); false where none holds SMs. It reads the started SM kernels (on_sms_, the finished
  // ones dropped here), not every op: it runs at each short start of a multi-wave kernel.
  bool startsBesideEarlierBlocks(std::size_t pos) {
    on_sms_.erase(std::remove_if(on_sms_.begin(), on_sms_.end(), [&](std::size_t q) { return finished_[q] != 0; }),
                  on_sms_.end());
    bool any = false;
    for (const std::size_t q : on_sms_) {
      if (q == pos || taken_[q] <= kShareSlack) continue;
      if (!m_.every_sm_[q] || started_at_[q] >= now_) return false;
      any = true;
    }
    return any;
  }
  double recordedRate(std::size_t pos) const {
    return pos < m_.recorded_rate_.size() ? static_cast<double>(m_.recorded_rate_[pos]) / 127.0 : 0.0;
  }
  std::vector<std::size_t> placing_;          // running kernels with blocks still to place, in start order
  std::vector<std::size_t> on_sms_;           // started kernels of the SM engine, finished ones dropped lazily
  MinHeap running_;                            // (end, position); stale where end_ moved
  std::vector<Ns> end_;                        // per started node: when it ends
  std::vector<Ns> started_at_;                 // per started node: when it started
  std::priority_queue<Ns, std::vector<Ns>, std::greater<Ns>> wakes_;  // wave ends a kernel waits for
  MinHeap tails_;                              // (middle of its last wave, position): multi-wave kernels
  std::vector<std::pair<std::size_t, Ns>> drained_;  // (position, when it drained): still running
  std::unordered_map<std::size_t, Ns> tail_at_;  // per multi-wave kernel: its tails_ entry in force
  void shareTheDrain(std::size_t pos);
  void holdBesideFaults(std::size_t pos);
  Ns endHeldBy(Ns end, const std::vector<Interval>& holds) const;
  std::vector<Interval> fault_holds_;          // fault service holding kernels' ends (holdBesideFaults)
  // A blocking call's waits for other threads' ops (ScheduleModel::wait_issued_only_), decided
  // when it begins: per barrier, the ops still to decide; the barriers each op holds once decided.
  bool waitForIssued(std::size_t barrier);
  bool issuedBy(std::size_t pos, Ns time) const;
  bool releasedBy(std::size_t pos, Ns time) const;
  std::vector<std::vector<std::size_t>> issued_waits_;   // per barrier
  std::unordered_map<std::size_t, std::vector<std::size_t>> held_barriers_;  // op -> barrier nodes
  std::vector<Ns> host_start_;                 // per barrier: when it begins, once known
  std::vector<Ns> after_previous_;             // per barrier: its start after the previous returns
  std::vector<std::int64_t> op_barrier_;       // per op: the barrier it follows, -1 for none
  std::vector<Ns> op_lag_;                     // per op after a barrier: its release after it
  std::vector<Ns> own_release_;                // per op after no barrier: its release
  // Per barrier: what its thread issues after it moves by that much (launchAfterSleep), set when
  // it starts; whether it is an explicit synchronize (or a blocking copy or memset) that still waits.
  std::vector<Ns> resume_shift_;
  std::vector<std::uint8_t> sleeper_;
  std::vector<std::uint8_t> finished_;
  // ScheduleModel::withIssueOrder: per op, whether its stream is queued in issue order; per such
  // stream the op issued last and the (issue time, op) history; per op the op queued after it
  // and the op waiting for it to end; the issues still to come.
  void issueOrdered(std::size_t pos, Ns released);
  void processIssues();
  Ns handoffBetween(std::size_t from, std::size_t to) const {
    return duration_[to] > 0 ? m_.handoff_[m_.engine_[from]][m_.engine_[to]] : 0;
  }
  std::int64_t nextOnStream(std::size_t pos) const {
    return !dyn_.empty() && dyn_[pos] ? dyn_next_[pos] : m_.stream_next_[pos];
  }
  std::vector<std::uint8_t> dyn_;
  std::vector<std::int64_t> tail_;
  std::vector<std::vector<std::pair<Ns, std::size_t>>> history_;
  std::vector<std::int64_t> dyn_next_;
  std::vector<std::int64_t> dyn_succ_;
  MinHeap issues_;
  // ScheduleModel::withBarrierIssueOrder: the legacy barrier decided at each issue. Per op, the
  // ops that wait for it (decided as they were issued) and the edges into it kept until it is
  // issued (from an op of a stream queued in issue order: they hold only if that op was issued
  // first); per context, the legacy op issued last and per blocking stream the op issued last; the
  // barrier's lag per engine pair (-1: none sampled) and over all.
  bool barrierEdge(const OrderEdge& e) const;
  void addDynamic(std::size_t from, std::size_t to, Ns lag);
  Ns barrierLag(std::size_t from, std::size_t to) const;
  bool barrier_mode_ = false;
  std::vector<Ns> issue_release_;
  struct PushedWait {
    std::size_t pos;
    Ns own;
    Ns at;
  };
  std::unordered_map<std::size_t, std::vector<PushedWait>> pushed_wait_;
  std::vector<Ns> issued_at_;
  std::unordered_map<std::size_t, std::vector<std::size_t>> held_issue_;  // op -> ops issued after it
  // Per op queued in issue order: the ops so queued that its thread must have issued before it
  // (buildIssueAfter); empty: none anywhere.
  void buildIssueAfter(const std::vector<OrderEdge>& edges);
  std::vector<std::vector<std::size_t>> issue_after_;
  std::vector<std::vector<Successor>> dyn_after_;
  std::vector<std::vector<Successor>> dyn_in_;  // Successor::to holds the edge's source here
  std::vector<std::uint8_t> issued_flag_;
  std::map<std::int64_t, std::int64_t> last_legacy_;
  std::map<std::int64_t, std::map<std::uint32_t, std::size_t>> last_blocking_;
  Ns barrier_lag_[ScheduleModel::kHostEngine][ScheduleModel::kHostEngine] = {};
  Ns barrier_lag_any_ = 0;
  // setTurns': per barrier, its thread and its turn (0: none); the holding barriers and the ops of
  // holding asynchronous calls, those another thread's turn looks for.
  const HostTurns* turns_ = nullptr;
  std::vector<std::uint64_t> barrier_thread_;
  std::vector<Ns> barrier_turn_;
  std::vector<std::size_t> holding_barriers_;
  std::vector<std::size_t> holding_ops_;
  Ns beganAt(std::size_t b) const;
  bool besideHolder(std::size_t b, Ns time) const;
  Ns now_ = 0;
  Ns first_start_ = std::numeric_limits<Ns>::max();
  Ns last_end_ = std::numeric_limits<Ns>::min();
};

}  // namespace cuoverlap::diagnosis
