// What-if schedules: how long a device's span would be if some ordering constraints were removed
// or the host issued some work earlier. Serialization findings (legacy-default-stream,
// event-wait-serialization, cross-stream-kernel-wait) cost the difference between two such
// schedules of the same ops — the span with the constraint and the span without it — so that the
// model's own error cancels out instead of landing in the finding's cost.
//
// The model (docs/findings.md, "How serialization costs are estimated") is an event-driven
// simulation of the device's queues. An op becomes ready when
//   - it was released: its launch call returned, plus the launch latency the trace shows for its
//     engine (DeviceView::launchLatency: an op launched onto an idle device starts some µs after
//     its call returns; never later than it started), minus any host time the what-if gives back
//     (an op queued behind its stream's previous one starts at the hand-off below instead). An
//     op that started before its call returned (a synchronous or pageable copy, a launch that
//     waited in the driver) was released when the call began, plus the startup it took after its
//     recorded constraints ended (its stream's previous op, the edges the trace ran under): the
//     rest of its wait was for them, which the schedule keeps as order, so a what-if without one
//     lets it start sooner (a cudaMemcpy queued behind another thread's kernels);
//   - the previous op of its stream ended, plus the stream's handoff between their engines
//     (DeviceView::streamHandoff: the device signals one op's end before the next may start,
//     about 1.2 µs kernel to kernel and 4-6 µs between a copy and a kernel on an H100; a what-if
//     that queues work the host issued late still pays it), and every op of an extra edge into it,
//     plus the edge's lag (an event wait releases its op some µs after the op it waited for ended:
//     StreamWait::release_lag) (edges from an op issued later than their target order nothing, so
//     the graph is acyclic;
//     ops of one stream count as issued in the order they ran: a call that began before another
//     thread's but waited in the driver was submitted after it).
// Engines take ready work as the hardware was seen to:
//   - each copy direction (HtoD, DtoH, other copies) and memsets are one engine running one op at
//     a time. A free engine keeps serving the stream it served last while that stream's next op
//     is ready (a hardware queue runs until it empties or blocks: recorded on an H100, 24 HtoD
//     copies of one stream ran back to back although another stream's copies were issued in
//     between); otherwise it takes the ready op whose queue became ready first: one that waited
//     for a dependency when that let it go, one ready as issued at its issue (g000105). A blocked
//     op does not hold up ready ops of other streams. Between two ops it takes the turnaround the trace shows for it
//     (DeviceView::engineTurnaround: about 1.3 µs for queued HtoD copies on an H100).
//     An HtoD and a DtoH copy that run at once share the link: each runs 8% longer for the time
//     they overlap (kDuplexSlowdown; the recorded durations of copies that overlapped one in the
//     other direction have that taken out first, so a schedule that keeps the overlap keeps them).
//   - kernels share the SMs, each taking the fraction min(1, grid blocks / (SM count x resident
//     blocks per SM)) for its whole measured duration (1 when the grid or the device limits are
//     unknown: such kernels never run side by side). Ready kernels start in issue order on the
//     SMs left free, as the block scheduler places blocks (the what-if's issue order: a kernel
//     whose thread it gives host time back is issued that much sooner, and queues ahead of
//     another thread's kernels issued in between): a kernel that got fewer SMs than its
//     share, or that runs in more than one wave, is still placing blocks; it takes SMs as they
//     free up, and no later kernel starts until it has placed them all (its share held, and for
//     one of several waves its end).
// Ops keep their measured durations, but for kernels: a kernel's blocks advance at the SM share it
// holds over its full share, against the rate its recorded run had (what the kernels running
// beside it in the trace left it, averaged over its run; unknown where the shares beside it filled
// the device: it keeps its duration), so one the trace ran on half its SMs and a what-if starts
// alone takes half its measured duration, and one started on part of its SMs runs slower until
// they free. A one-wave kernel whose blocks are done while the driver serves another kernel's GPU
// page faults (the stretches the trace shows served in that kernel's run, from its start in the
// schedule) ends as that service ends (ScheduleRun::holdBesideFaults). Built with a HostTimeline
// (host_timeline.h), the schedule also has the host wait: each blocking call is a node that ends
// when the ops it waited for ended (plus its own time), and the thread's later launches are
// released relative to it, so a faster device lets a synchronizing host run ahead. Of the ops
// other threads launched, it waits only for those the what-if issued before it began (the trace's
// W was found by the recorded issue times): a thread that runs ahead does not wait for work
// another thread issues later. The thread's first call after an explicit synchronize takes longer
// the longer the synchronize slept (launchAfterSleep): where a what-if changes how long one
// blocks, what the thread issues after it moves by the difference. Cost: O((n + e) log n).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "cuoverlap/intervals.h"
#include "diagnosis/device_view.h"
#include "diagnosis/host_timeline.h"

namespace cuoverlap::diagnosis {

// "`to` could not start before `lag` after `from` ended": positions in view.ops(). `lag`: the
// time the ordering itself takes to release `to` (an event wait's, StreamWait::release_lag).
struct OrderEdge {
  std::size_t from = 0;
  std::size_t to = 0;
  Ns lag = 0;
};

// An op whose duration a fix changes: its position in view.ops() and its duration after the fix.
// Mostly faster (pageable copies made pinned, a merged run's later copies gone), but the first
// copy of a merged run carries the whole run's bytes and may take longer than it did.
struct FasterOp {
  std::size_t position = 0;
  Ns duration = 0;
};

// A blocking call changed by a what-if: it no longer waits for the ops it waited for (a pageable
// copy made pinned and asynchronous), or still waits but returns sooner after them (a synchronous
// copy made pinned: no staging on the host after a DtoH). `own` replaces its own time.
// `earlier`: the call begins that much sooner after its thread's previous blocking call (host
// time given back before it: calls a fix removed), as the thread's later launches do.
// `waits_for_op`: an op (position) the call waits for after the fix though it did not in the
// trace (a pageable HtoD cudaMemcpy returned once staged; pinned, it returns after its copy).
struct CallChange {
  std::size_t call = 0;  // index into Trace::runtime_calls
  bool waits = true;
  Ns own = 0;
  Ns earlier = 0;
  std::int64_t waits_for_op = -1;
};

// When a kernel's blocks still to place end, relative to now: `waves_left` waves of blocks that
// each last `block`, placed on the whole device's SMs, of which `taken` (a fraction) are held by
// other blocks for `held` first. Without them held: ceil(waves_left) x block; a last wave with
// room for the displaced blocks ends no later.
Ns blocksEndWithSlotsHeld(double waves_left, Ns block, double taken, Ns held);

// How much longer a host thread's first call after an explicit synchronize takes when the
// synchronize blocked for `slept` than when it found its work almost done (the thread resumes
// slowly after a long sleep). On the lab corpus's H100 traces (40 traces, 1,106 synchronizes whose
// thread's next call, within 20 µs, was a kernel launch; the median launch call after each range of
// blocking beyond the trace's median launch call, against blocks under 30 µs): 0.7 µs longer after
// 30-100 µs, 1.4 after 0.1-0.3 ms, 2.5 after 0.3-1 ms, 5.8 after 1-3 ms, 15.7 after 3-10 ms. Each
// at its range's middle (log scale), log-linear in between, held beyond the last.
Ns launchAfterSleep(Ns slept);
// How much later a copy or memset call that blocked (synchronous, or with pageable memory) returns
// after its op ended when it waited `slept` for the work before that op than when it found that
// work almost done: the thread wakes slowly after a long wait. On the lab corpus's H100 traces
// (50 traces, the 253 DtoH copies of at most 64 KiB whose call blocked until its op ended, so
// that their own copy out of staging is short; the median return after the op ended, against
// waits under 0.3 ms): 1.4 µs later after 0.3-1 ms, 7.2 after 1-3 ms, 16.5 after 3-10 ms. Each at
// its range's middle (log scale), log-linear in between, held beyond the last. (The same measure
// of cudaDeviceSynchronize calls that returned to an idle device grows less, 1.0, 3.4 and 4.3 µs,
// and is not used: a synchronize's thread pays its long sleep in its next launch call.)
// That measure pooled processes of one host thread and of several, and the curve is theirs: a
// thread that wakes in a process whose other threads issue calls meanwhile returns later. Where
// every call of the view is one thread's (`one_thread`), the curve is its own, measured the same
// way on the one-thread programs of the six H100 corpora (1,444 copies): 1.2 µs later after 0.3-1 ms,
// 1.6 after 1-3 ms, 2.9 after 3-10 ms (several threads: 2.3, 4.4 and 11.9; scripts/
// lab_wake_times.py). docs/findings.md, blocking-sync-call's "a thread alone wakes sooner".
Ns copyReturnAfterSleep(Ns slept, bool one_thread = false);

// Blocks of `kernel` that fit on one SM at once; 0 when the device data is missing.
std::int64_t residentBlocksPerSm(const Device& device, const GpuOp& kernel);
// The fraction of the device's SMs a kernel occupies while it runs, in (0, 1]; 1 when unknown.
double smShare(const Device* device, const GpuOp& kernel);
// A kernel whose smShare is at least 1 less this fills the device (the shares are sums of doubles).
inline constexpr double kFillsSlack = 1e-6;
// Its grid over the blocks the device holds at once: above 1, the kernel runs in several waves;
// 1 when unknown.
double wavesOf(const Device* device, const GpuOp& kernel);
// When launch call `call` of an op that started at `op_start` submitted it: a cudaMemcpy or
// cudaMemset that blocked on its op submitted it at its start (then waited); one that returned
// before its op began (a memset of device memory, which returns at once) and an asynchronous call
// submitted it as they returned. A call held in the driver behind another thread's call returns
// late, and so submits after launches that began after it.
Ns submittedAt(const DeviceView& view, std::size_t call, Ns op_start);

// The copies the trace shows held behind another stream's copy on their engine (the edges every
// ScheduleModel of the view keeps; above span()), found once per view.
const std::vector<OrderEdge>& engineHolds(const DeviceView& view);

// When the trace submitted each op as the legacy barrier ordered it (legacy_barriers.h:
// barrierIssueTimes), per position of view.ops(): `key`, its launch call's submission pushed
// past its stream's previous op and the ops the recorded barrier ran before it; `own`, its own
// submission before that push; `pusher`, the position of the op that pushed its key last (-1:
// none). ScheduleModel::withBarrierIssueOrder takes it (`own` and `pusher` may be empty: no op
// follows the op that pushed it).
struct BarrierIssue {
  std::vector<Ns> key;
  std::vector<Ns> own;
  std::vector<std::int64_t> pusher;
};

class ScheduleModel {
 public:
  explicit ScheduleModel(const DeviceView& view);
  // With the host's blocking calls (an empty timeline: as without). `recorded`: the extra edges
  // the trace ran under (event waits, legacy-stream barriers), besides stream order: an op whose
  // launch call blocked until it ran (a synchronous or pageable copy) is released at its call's
  // start plus the startup it took after the last of its recorded constraints ended, so that a
  // what-if without some of them lets it start sooner.
  ScheduleModel(const DeviceView& view, const HostTimeline& host,
                const std::vector<OrderEdge>& recorded = {});
  // The same, with the ops at `submitted_late` (positions) released at their recorded start even
  // though their launch calls returned after they started: asynchronous calls that the driver
  // held (behind another thread's allocation or free) and that submitted their op as they were
  // let go, not calls that blocked until their op ran.
  ScheduleModel(const DeviceView& view, const HostTimeline& host, const std::vector<OrderEdge>& recorded,
                const std::vector<std::size_t>& submitted_late);

  // A copy engine takes the copies pushed to it in the order they were pushed, across the streams
  // that share its hardware queue (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default), so a copy pushed
  // behind another stream's copy that a stream wait still holds waits for it, though the engine
  // idles and the copy's own stream is ready. The trace shows it: copy X ready (launch call
  // returned, stream's previous op ended) at least 10 µs before the engine's previous copy P
  // began, the engine idle at least 10 µs in between, X starting within 5 µs of P's end, P of
  // another stream and launched first, neither on a legacy default stream (whose implicit barrier
  // orders such pairs, legacy_barriers.h). Every schedule keeps P -> X with its recorded gap, at
  // most the engine's turnaround (X is next in the queue the engine serves: no other queue's copy
  // takes the engine between them): where a fix moves P, X moves with it (g000040: a 6.4 MB
  // upload whose call returned at 524 µs started at 1069 as a copy a wait held ended; the
  // program without that wait ran it at 464).
  //
  // The simulated span with stream order, `edges` (any order), per position host time given
  // back (`earlier[p]` is subtracted from op p's release, also when that follows a blocking call;
  // empty = none), the ops of `faster` (any order) taking their shorter durations, and the
  // blocking calls of `changed` (any order; with a host timeline) behaving as they say.
  Ns span(const std::vector<OrderEdge>& edges, const std::vector<Ns>& earlier = {},
          const std::vector<FasterOp>& faster = {},
          const std::vector<CallChange>& changed = {}) const;

  // Saving of removing `removed` from the constraints `kept` + `removed`: never negative.
  Ns savingWithout(const std::vector<OrderEdge>& kept, const std::vector<OrderEdge>& removed) const;

  // The same model with op p on stream `lane[p]` (one entry per position): stream order then
  // chains the ops of each lane in position order (single-stream's split over streams).
  ScheduleModel withLanes(const std::vector<std::uint64_t>& lane) const;

  // The same model with the kernels at `positions` on streams of a higher priority
  // (device-saturating-kernel's what-if). The block scheduler places their blocks before those of
  // kernels of the default priority: one that is ready while such a kernel is still placing
  // blocks, before its last wave, takes the SMs its wave in progress leaves instead of waiting
  // for its last block, and that kernel ends later by what its displaced blocks waited for those
  // SMs (blocksEndWithSlotsHeld: the device is the same size at any priority). The kernels at
  // `ragged` end their blocks spread over the second half of each wave (the trace showed another
  // kernel placed in their last wave well before they ended): a higher-priority kernel passes
  // one of those once its share of the SMs has freed there, before the wave's end.
  ScheduleModel withPriority(const std::vector<std::size_t>& positions,
                             const std::vector<std::size_t>& ragged = {}) const;

  // The same model with ops launched as nodes of CUDA graphs: `graph[p]` names the graph launch op
  // p would be a node of (-1: none; one entry per position). A kernel that follows a kernel of its
  // own graph launch on its stream starts `node_handoff` after it ends instead of the stream's
  // kernel-to-kernel handoff (DeviceView::graphNodeHandoff), never later than that. A graph's
  // first kernel that follows another op on its stream (a kernel or copy launched on its own, or
  // another graph's node) starts the stream's handoff from that op plus `entry` after it ends: the
  // device enters a graph launch later than it starts a queued kernel. A device-wide barrier (an
  // allocation or free call) of another thread that waits for one of a graph's nodes waits for
  // the graph's later nodes on that stream too: its one launch call submitted them together.
  ScheduleModel withGraphNodes(const std::vector<std::int64_t>& graph, Ns node_handoff,
                               Ns entry = 0) const;


  // The same model with the ops of a stream that several host threads launched onto queued in
  // the order the what-if issues them, not the order they ran: each op is issued when its thread
  // gets to it (its release less how long after its call began that was) and follows the op of
  // its stream issued last before it. A thread a fix lets run ahead queues its work before work
  // another thread issues later, as the driver does. Streams that an edge of the schedule
  // orders (a legacy barrier, a stream wait) keep the recorded order. With a host timeline only.
  ScheduleModel withIssueOrder() const;
  // The same, with a free that waits for another thread's stream waiting also for that stream's
  // later ops, issued after the call began in the trace, that the what-if submits before it.
  ScheduleModel withWideWaits() const;

  // The same model with the legacy stream's implicit barriers decided as the what-if issues the
  // work, as CUDA decides them when a call submits its op: `barrier[p]` is -1 for an op on neither
  // the legacy stream nor a blocking stream, 2c for one on context c's legacy stream and 2c + 1
  // for one on a blocking stream of c (legacy_barriers.h: barrierClasses). The ops of those
  // streams are queued in the order the what-if issues them (each when its thread gets to it);
  // a legacy-stream op waits for the op of each blocking stream of its context issued last before
  // it, and a blocking-stream op for the legacy op issued last before it. Edges given to span
  // between a legacy and a blocking op of one context (legacyBarrierEdges: the recorded order)
  // are replaced by these, which take their lags (median per engine pair). A thread that a fix
  // lets submit its legacy-stream work sooner gets it ordered before another thread's work issued
  // later. `issued` (empty: the launch calls' start) is when the trace submitted each op
  // (BarrierIssue, in the order the recorded barrier ran them; with its `own` and `pusher`, an op
  // pushed past another follows that op as the what-if issues it);
  // the what-if issues an op that much sooner as it releases it sooner, so that ops whose release
  // did not move keep the recorded order. `reference` (per position; empty: the recorded
  // releases) is when a schedule of the recorded program released each op (issueReleases of the
  // model without the fix): an op is issued `issued` less how much sooner than there the what-if
  // releases it, so that the schedule's own error in reproducing the trace reorders nothing.
  // `lane` (per position, as withLanes'): the ops are queued per lane, not per recorded stream.
  // With a host timeline only.
  ScheduleModel withBarrierIssueOrder(const std::vector<std::int64_t>& barrier,
                                      const BarrierIssue& issued = {},
                                      const std::vector<Ns>& reference = {},
                                      const std::vector<std::uint64_t>& lane = {}) const;
  // When span(edges) releases each op of a stream queued in issue order (the minimum of Ns for
  // the others).
  std::vector<Ns> issueReleases(const std::vector<OrderEdge>& edges) const;

  // The same model with the ops of `issued` (position, time) issued at that time (a call held in
  // the driver that submitted its op as it was let go, later than it began): engines take them in
  // that order and an edge into one counts from ops issued before it. Each stream's later ops are
  // issued no sooner.
  ScheduleModel withIssuedAt(const std::vector<std::pair<std::size_t, Ns>>& issued) const;

  // The same model with the one-wave device-filling kernels at `positions` leaving their slots to
  // the kernels of `takers` (positions) queued behind them from `at` (a fraction) of their run,
  // where the trace saw no point of its own (slots_free_at_ 0): a kernel that ran with nothing
  // beside it could not show one. A kernel placed in those slots shares them as it would a
  // multi-wave kernel's drained last wave (ScheduleRun::shareTheDrain): where its blocks are long,
  // it ends in step with the last slots the filler frees (single-stream's split: aloneFillers).
  ScheduleModel withSlotsFreeingAt(const std::vector<std::size_t>& positions, float at,
                                   const std::vector<std::size_t>& takers = {}) const;

  // The same model with a kernel that the schedule starts in a multi-wave kernel's drained last
  // wave (ScheduleRun::shareTheDrain) slowed by that drain less what its recorded duration already
  // holds of the last wave it started in, in the trace (recorded_drain_cost_; it may end sooner):
  // device-saturating-kernel's waiting kernels started in such a wave, and a schedule that places
  // them there again must not charge it twice (g000025: 46 µs added to each of three kernels that
  // had lost 89-129 µs to it; the schedule of the recorded program ran 74 µs long).
  ScheduleModel withDrainCostRecorded(const DeviceView& view) const;

  std::size_t size() const { return duration_.size(); }
  // Op `position`'s release as recorded (before any time a what-if gives back).
  Ns release(std::size_t position) const { return release_[position]; }
  double share(std::size_t position) const { return share_[position]; }

  static constexpr std::uint8_t kSmEngine = 0;
  static constexpr std::uint8_t kHostEngine = 5;  // blocking calls: no queue, no capacity
  static_assert(kSmEngine == 0 && kHostEngine == kEngineSlots, "engine slots are engineSlot's");
  static constexpr std::uint8_t kEngines = 6;  // SMs, HtoD, DtoH, other copies, memsets, host

 private:
  friend class ScheduleRun;

  void addHost(const DeviceView& view, const HostTimeline& host);
  void releaseBlocked(const DeviceView& view, const std::vector<OrderEdge>& recorded);

  bool issue_order_ = false;
  bool wide_waits_ = false;  // withWideWaits
  std::vector<std::int64_t> barrier_class_;  // withBarrierIssueOrder's; empty = recorded barriers
  BarrierIssue issue_;                       // withBarrierIssueOrder's; key empty = issued_
  std::vector<Ns> reference_;                // per position: a reference release; empty = release_
  std::vector<std::int64_t> thread_prev_;    // per position: its thread's op launched before it, -1 none
  std::vector<std::uint32_t> stream_of_;   // per position: its stream, numbered from 0
  std::vector<std::uint8_t> shared_;       // per stream: ops of more than one host thread
  std::vector<Ns> issued_;                 // per position: when it was issued (the trace's order)
  Ns recorded_span_ = 0;
  Ns span_start_ = 0;
  std::vector<Ns> release_;
  // (position, launch call start) of the ops whose launch call returned after they started
  std::vector<std::pair<std::size_t, Ns>> blocked_call_start_;
  std::vector<Ns> duration_;
  std::vector<Ns> queued_floor_;  // per position: a small pinned HtoD copy's duration when queued (0 none)
  // per position: 1 where the trace released the op after its engine's previous op had ended (it ran
  // on an idle engine, so its recorded duration is not a queued one)
  std::vector<std::uint8_t> ran_idle_;
  std::vector<std::uint8_t> engine_;       // kSmEngine, or one copy/memset engine each
  std::vector<double> share_;
  std::vector<double> waves_;              // per kernel: wavesOf (1 for other ops)
  // per kernel: 1 where its grid has a block for every SM (grid >= SMs, where the device limits
  // are known; else a share of an eighth, 256-thread blocks on the H100): while it holds its slots
  // no SM is free to run the blocks of a kernel started short beside it
  std::vector<std::uint8_t> every_sm_;
  // per kernel: 1 where it started in the trace while a device-filling kernel still ran (its
  // measured duration holds what sharing the SMs with it cost)
  std::vector<std::uint8_t> began_beside_;
  // per kernel: what its recorded duration holds of the last wave of a multi-wave kernel it started
  // in (shareTheDrain's sharing, in the trace); empty unless withDrainCostRecorded
  std::vector<Ns> recorded_drain_cost_;
  // (position, where in its last wave, a fraction, it hands its SMs on) of the multi-wave kernels
  // whose trace shows the first slot freed past the wave's middle (observeDrainHandoff), by
  // position; every other op hands on at the middle (drainHandoff). Few: kept sparse, as models
  // are copied.
  std::vector<std::pair<std::size_t, float>> drain_handoff_;
  double drainHandoff(std::size_t position) const;
  // per kernel: the share of its SMs its recorded run had, averaged over it, in 127ths of its own
  // (0: unknown; recordRates)
  std::vector<std::uint8_t> recorded_rate_;
  // per one-wave device-filling kernel: where in its recorded run (a fraction) the trace first
  // started a one-wave device-filling kernel inside it, from where its blocks leave slots to the
  // kernels queued behind it (0: never seen; observeSlotsFreeing)
  std::vector<float> slots_free_at_;
  // per position: 1 where withSlotsFreeingAt set its point (a kernel in its slots shares the drain;
  // empty = none), and 1 where a kernel may take such a point's room
  std::vector<std::uint8_t> slots_drain_;
  std::vector<std::uint8_t> slots_taker_;
  // GPU page faults hold the ends of the device's other kernels (observeFaultService, ScheduleRun::
  // holdBesideFaults): per kernel whose recorded run the driver served faults in, (position, the
  // stretches of that service as offsets from the run's start, merged), by position; and the
  // kernels whose recorded run overlapped any such service (their durations hold what it cost), by
  // position. Both empty without page-fault records; few: kept sparse, as models are copied.
  std::vector<std::pair<std::size_t, std::vector<Interval>>> fault_service_;
  std::vector<std::size_t> beside_faults_;
  void observeFaultService(const DeviceView& view);
  const std::vector<Interval>* faultServiceOf(std::size_t position) const;
  bool ranBesideFaults(std::size_t position) const {
    return std::binary_search(beside_faults_.begin(), beside_faults_.end(), position);
  }
  std::vector<std::uint8_t> high_;         // per position: 1 on a higher-priority stream, 2 ragged; empty = none
  std::vector<std::int64_t> stream_prev_;  // previous position on the stream, -1 for none
  std::vector<std::int64_t> stream_next_;  // next position on the stream, -1 for none
  std::vector<std::size_t> rank_;          // issue rank (by launch call start) per position
  Ns turnaround_[kEngines] = {};           // per copy/memset slot: DeviceView::engineTurnaround
  Ns handoff_[kHostEngine][kHostEngine] = {};  // per (from, to) slot: DeviceView::streamHandoff
  std::vector<Ns> node_handoff_;  // per position: its handoff as a graph node, -1 none; empty = none
  std::vector<std::int64_t> graph_of_;  // per position: withGraphNodes' graph, -1 none; empty = none
  std::vector<std::int64_t> graph_run_end_;  // per graph op: the last op of its graph's run on its stream from it
  // Host nodes (host_timeline.h), numbered after the ops: node size() + b is barrier b.
  struct Barrier {
    std::size_t call = 0;
    Ns start = 0;             // absolute, for a thread's first barrier
    Ns own = 0;
    std::int64_t previous = -1;
    Ns after_previous = 0;    // start - the previous barrier's end
    Ns slept = -1;            // how long it blocked in the trace before its wait ended; -1 other
    std::int64_t own_op = -1;  // a blocking copy or memset: its own op (its wait ends as it starts)
    bool wide = false;         // an allocation or free call: waits for every stream's submitted work
  };
  std::vector<Barrier> barriers_;
  bool one_thread_ = false;  // every runtime call of the view is one host thread's (addHost)
  std::vector<OrderEdge> barrier_waits_;   // op -> barrier b as {position, b}
  // Per barrier_waits_ entry: the op was launched by another thread than the barrier's call, so
  // the barrier waits for it only where the what-if issues it before the barrier begins.
  std::vector<std::uint8_t> wait_issued_only_;
  std::vector<Ns> issue_lead_;             // per position: its release after its launch call began
                                           // (empty when no wait is another thread's)
  std::vector<std::int64_t> op_barrier_;   // per position: the barrier its release follows, -1
  std::vector<Ns> op_lag_;                 // per position: release - that barrier's end
  // Copies the trace shows held behind another stream's copy on their engine (engineHolds): an
  // edge each, in every schedule.
  std::vector<OrderEdge> engine_holds_;
  // Pageable HtoD copies whose call blocked until they ran (the driver stages them through pinned
  // buffers): per position, how much of it the host can stage ahead while the op waits to start
  // (bytes), how fast it stages (bytes per ns: the copy's recorded rate), what each byte staged
  // ahead saves (ns: its recorded time per byte beyond the pinned rate's) and its recorded start
  // (it had staged ahead from its release to then). Empty when the view has none.
  struct Prestage {
    double cap = 0.0;
    double rate = 0.0;
    double gain = 0.0;
    Ns start = 0;  // its recorded start
  };
  std::vector<Prestage> prestage_;
  void addPrestage(const DeviceView& view);
};

}  // namespace cuoverlap::diagnosis
