// The legacy default stream's implicit barrier as what-if edges: an op on the legacy (null)
// stream waits for the earlier work of every blocking stream of its context, and their later work
// waits for it. The recorded schedule honoured these orderings; a what-if that lets a host thread
// run ahead (a synchronize removed) must keep them, or it lets blocking-stream work overtake
// another thread's legacy-stream work that it could never overtake; a what-if that moves ops to
// other streams (a synchronous copy made asynchronous on its consumer's stream) has the barriers
// of the streams they run on after the fix.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_set>
#include <vector>

#include "diagnosis/api_names.h"
#include "diagnosis/device_view.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {

// For each legacy-stream op X with a launch call: the last op of each other blocking stream
// (flag "default") of X's context launched before X precedes X, and X precedes the first one
// launched after X, in the order their calls submitted them (submittedAt); where X and the ops
// run on their recorded streams and their recorded times disagree with that order (a call held in
// the driver submits later than it began), in the order they ran, which the barrier imposed.
// O(legacy ops x blocking streams).
std::vector<OrderEdge> legacyBarrierEdges(const DeviceView& view);
// The same with op p on the stream of key `lane[p]` (DeviceView::streamKey of some op of the
// view; one entry per position): an op is on the legacy stream, or on a blocking stream, when the
// stream its lane names is. A lane that names no op's stream is neither, except those of
// `created_blocking` (a what-if's created blocking streams: cudaStreamCreate's default flag).
// `moved_kernels_in_order`: an op the what-if moved to another lane from a stream the barrier
// ordered in the trace keeps the order its recorded times show, as an op on its recorded stream
// does, where its call is unchanged (the split's: a kernel's launch, an asynchronous copy or memset
// of pinned or device memory, whose thread's calls still wait as they did); a moved copy or memset
// whose call the what-if changes (synchronous or pageable: the split pins and issues it
// asynchronously) keeps its call's order.
std::vector<OrderEdge> legacyBarrierEdges(const DeviceView& view, const std::vector<std::uint64_t>& lane,
                                          const std::unordered_set<std::uint64_t>& created_blocking = {},
                                          bool moved_kernels_in_order = false);

// Per position, the class ScheduleModel::withBarrierIssueOrder takes: 2c for an op (with a
// launch call) on the legacy stream of context c, 2c + 1 for one on a blocking stream of c, -1 for
// others; with `lane` (one entry per position), by the stream its lane names, as
// legacyBarrierEdges' (`created_blocking`: a what-if's created blocking streams).
std::vector<std::int64_t> barrierClasses(const DeviceView& view, const std::vector<std::uint64_t>& lane = {},
                                         const std::unordered_set<std::uint64_t>& created_blocking = {});

// Whether a what-if that lets a thread run ahead decides the legacy stream's implicit barrier as
// it issues the work (ScheduleModel::withBarrierIssueOrder) rather than in the recorded order:
// where more than one host thread submits work the barrier orders (`classes`: barrierClasses', of
// the recorded program or of a fix's lanes: the legacy stream and the blocking streams of its
// context), every legacy-stream op was submitted by a call that returns at once, and no free is in
// the window. CUDA orders a legacy-stream op after the blocking streams' work submitted before it,
// and their later work after it, so a thread that submits its next steps sooner gets them ahead of
// another thread's legacy work (lab g000237: a worker's kernels on a blocking stream ran before the
// main thread's legacy copies in blocking-sync-call's fixed program, which waited for them; lab
// g000315: the main thread, freed of its 5.9 MiB cudaMemcpy calls by sync-memcpy's fix, submits
// its memset and its copies and kernels at 0.59-1.81 ms, and the worker's next legacy upload and
// 1 ms kernel, which the recorded barrier ran at 0.70-1.75 ms before them, wait for all of it). A
// call that blocks on its op (a pageable copy, a synchronous cudaMemcpy or cudaMemset the fix keeps:
// all but those of kind `converted`, which the fix makes asynchronous) or a free holds other
// threads' submissions in the driver while it blocks (lab g000198's fixed program: a worker's
// kernel launches begun during the main thread's pageable cudaMemcpy returned 0.5 ms later, as it
// did; the nineteenth session's frees), so the order the threads submit in is not the one they
// issue in: the recorded order is kept there. In one thread the order is the program's.
// `pinned`: the fix pins the pageable host memory (pageable-memcpy's), so a pageable asynchronous
// copy returns at once there; a pageable cudaMemcpy still blocks on its copy.
// `device_memsets`: a synchronous cudaMemset into device memory counts as a call that returns at
// once (CUDA makes it asynchronous with respect to the host for device memory; lab g000180's
// worker: its cudaMemset calls returned in 16 µs, and in defer-read's fixed program in 25 µs with
// their op run 690 µs later, behind the blocking streams' work the barrier ordered before it;
// c7 g005011's in 6-46 µs, ops up to 810 µs later). early-result-wait's: there
// the deferred thread issues such a memset sooner, ahead of another thread's blocking-stream work
// that then waits for it (g000180's fixed program: the main thread's DtoH copy waited 190 µs for
// the worker's memset and the worker's kernels before it, where the recorded order had the copy
// first). Not for the other fixes' what-ifs: there it moves c7 g005011's sync-memcpy the wrong way
// (2091 -> 301 µs claimed for 1926), for a reason not yet found.
bool barrierFollowsIssueOrder(const DeviceView& view, const std::vector<std::int64_t>& classes,
                              std::optional<ApiKind> converted = std::nullopt, bool pinned = false,
                              bool device_memsets = false);

// When the trace submitted each op as the legacy barrier ordered it (schedule_estimate.h:
// BarrierIssue): its launch call's submission (submittedAt), never after the op started, never
// before its stream's previous op's, and after the ops the recorded barrier ran before it
// (legacyBarrierEdges); an op without a launch call, its start. `released` (per position; empty:
// none): an asynchronous call that returned after its op began and was held in the driver behind
// another thread's call that the fix makes return at once; it is keyed at its call's start (the
// fixed program no longer holds it).
BarrierIssue barrierIssueTimes(const DeviceView& view, const std::vector<bool>& released = {});

// The barrier hands off between streams the way an event wait does: the GPU's front end sees the
// op waited for end and only then releases the op behind it, microseconds later (g000145: a
// legacy memset began 6.6 µs after the blocking stream's copy it waited for ended, the next
// blocking stream's copy 4.0 µs after the memset). Gives each edge (ops on their recorded
// streams) the trace's median of that lag for its (from, to) engine pair, or over every pair
// where its pair has none, sampled where the barrier is what released the op:
// its launch call had returned and its stream's previous op ended by the time the op it waited
// for ended, and no other op ended in between. None sampled: the edges stay as they are.
// legacyBarrierEdges sets it (sampled on the edges between ops on their recorded streams; an
// edge of a moved op takes the median of those edges' lags).
void setBarrierLags(const DeviceView& view, std::vector<OrderEdge>& edges);

// How long the legacy barrier takes to release a queued op on another stream where the trace
// shows no such release to sample (setBarrierLags leaves every edge at 0 there: a program whose
// host issued each legacy-stream op only after the work it waits for had ended). A what-if whose
// thread runs ahead queues those ops (early-result-wait's deferral, blocking-sync-call's removal:
// a cudaMemset between steps, now issued while the step still runs), and the GPU's front end
// releases each some microseconds after the op it waits for ends, as it does an event wait's
// (g000145: a legacy memset 6.6 µs after a blocking stream's copy, that stream's next copy 4.0 µs
// after the memset; event waits on the lab's H100 traces, kernel -> kernel 2.5-5.7 µs): the
// H100's handoff between engines, 5 µs (DeviceView::streamHandoff's between a host-link copy and
// another engine).
constexpr Ns kUnsampledBarrierLagNs = 5'000;

// The order the program as written imposes besides stream order: its recorded stream waits
// (stream_waits.h) and the legacy stream's implicit barriers. A what-if that only changes when
// the host issues work (a synchronize removed or deferred, an allocation hoisted) keeps both: the
// thread runs ahead, but its work still waits where the program makes it wait. Where the trace
// samples no barrier lag (every legacy edge's lag 0), each legacy edge takes
// `unsampled_barrier_lag` (early-result-wait's deferral queues ops the trace never showed queued).
std::vector<OrderEdge> programOrderEdges(const DeviceView& view, Ns unsampled_barrier_lag = 0);

}  // namespace cuoverlap::diagnosis
