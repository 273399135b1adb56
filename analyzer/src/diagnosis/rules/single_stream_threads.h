// single-stream in programs whose host threads each issue their own loop (single_stream.cpp;
// docs/findings.md, single-stream, "Threads' own streams"):
//   - threadsOwnWork: the legacy default stream's work cut per thread where several threads
//     share it, so that each thread's loop there is a stream of work of its own (the fix splits
//     one thread's loop; the other threads' work stays on the legacy stream);
//   - splitBarriers: the legacy stream's implicit barriers in the split's what-if, both schedules;
//   - giveBackOnce: the host time the split's holds freed other threads' calls of, given back once;
//   - tookTurnsByLegacyBarrier: a loop that alternated with other threads' blocking-stream work
//     because its copies ran on the legacy stream;
//   - heldBySplitCopies: other threads' calls, and the starts of their blocking copies, that the
//     split stream's staged copies held, which the split (its copies pinned and asynchronous) no
//     longer holds.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/host_time_given.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {

// `keys` (workStreams') with each op of a legacy default stream that several threads issued to,
// each synchronizing on its own (an explicit synchronize call: independent producers, as
// legacy-default-stream counts them; or a copy to the host whose call returned only once it had
// ended, which waited for its stream's earlier work), keyed by its stream and its thread: one thread's loop on the
// shared stream is what its split moves to created streams. Where a thread of the stream never
// synchronizes (PyTorch's autograd thread, driven by the main thread), the stream's work stays one
// loop. Keys of other streams are unchanged. nullopt where no stream is so shared: `keys` hold.
std::optional<std::vector<std::uint64_t>> threadsOwnWork(const DeviceView& view,
                                                         const std::vector<std::uint64_t>& keys);

// Per key of `keys` (threadsOwnWork's), the key of `stream_keys` (workStreams') its ops have: the
// stream a thread's work ran on.
std::unordered_map<std::uint64_t, std::uint64_t> streamOfWork(const std::vector<std::uint64_t>& keys,
                                                              const std::vector<std::uint64_t>& stream_keys);

// The thread (its tid) whose loop `work` is, where threadsOwnWork cut a shared stream's work per
// thread (`ran_on`: streamOfWork's); nullopt for a stream's work kept whole.
std::optional<std::uint32_t> workThread(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                        const std::unordered_map<std::uint64_t, std::uint64_t>& ran_on,
                                        std::uint64_t work);

// The legacy stream's barriers in the schedule before the split (`lanes` empty: each op on its
// stream) or after it (op p on lane `lanes[p]`): an op on the legacy stream waits for the earlier
// work of every blocking stream of its context, and their later work waits for it. The split's
// lanes of a blocking or legacy stream's work are created blocking streams (the lab's multi-stream
// keeps the barriers: cudaStreamCreate), those of a non-blocking or per-thread stream's work are
// not. `split_blocking`: the split stream is legacy or blocking. The loop's kernels, and its
// asynchronous copies and memsets of pinned or device memory, keep the order against the legacy
// stream's ops that their recorded times show (their calls are as they were: legacyBarrierEdges'
// moved_kernels_in_order); its synchronous or pageable copies and memsets, which the split issues
// asynchronously from pinned buffers, their calls' order.
std::vector<OrderEdge> splitBarriers(const DeviceView& view, const std::vector<std::uint64_t>& lanes,
                                     bool split_blocking);

// Whether the loop `work` (a key of `keys`) took turns with other work by the legacy stream's
// implicit barrier over `extent` (its first op's start to its last op's end): most of its copies
// ran on the legacy default stream (its thread's `cudaMemcpy` calls, or its own legacy-stream
// work), and the other work beside it there was more of blocking streams' (created with
// `cudaStreamCreate`, or per-thread default streams) than of the legacy stream's. Each of its
// legacy ops waited for every blocking stream's earlier work and held their later work: turns that
// the split, which moves the loop to created streams, takes away. Beside other legacy-stream work
// the turns are one queue's order; beside non-blocking streams there is no barrier.
// The same turns seen from a loop on a per-thread default stream (where the trace tells,
// `Stream::origin`): such a stream is blocking towards the legacy default stream, so beside mostly
// legacy-stream work each of its ops waited for the legacy ops issued before it and held the later
// ones; the split gives its lanes non-blocking streams (as `blockingWork` says), off the barrier.
// Beside mostly other threads' blocking-stream work (which the barrier orders against it only
// through the legacy ops between) it took them too where its ops waited, ready, behind legacy ops
// longer than they ran (g000078: worker0's loop, 1.7 ms of ops, 6.1 ms waited on the barrier).
bool perThreadTookTurnsByLegacyBarrier(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                       std::uint64_t work, Interval extent);

bool tookTurnsByLegacyBarrier(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                              std::uint64_t work, Interval extent);

// The split pins the stream's pageable copies and issues them asynchronously: their calls
// (`pinned_calls`, indices into Trace::runtime_calls) no longer stage. While one staged, it held
// other threads' calls (pageable copies of two threads take turns, legacy_threads.h); those get
// back what the holds covered beyond their typical time (timeHeldByStaging, as pageable-memcpy's
// what-if): blocking calls of `host` as changes merged into `changed`, the others as host time
// given back, added per op position to `earlier` (resized to the view's ops). It also held the
// start of another thread's blocking copy (a pageable copy waits for the staging before its op
// starts, after what it waited for on its stream ended): the part of that wait the staging (from
// the staged copy's start to its call's return) covered is added to the op's `earlier`, and a
// blocking call whose own time held it returns that much sooner (a change merged into `changed`
// by mergeShorter, or appended to `held_calls` where not null: to be merged once the split's other
// holds are given back, so that it shortens their changes rather than standing in for them).
// `given`: where not null, the other threads' host time is appended there instead (to be given
// back once with the split's other holds, giveBackOnce).
void heldBySplitCopies(const DeviceView& view, const HostTimeline& host,
                       const std::unordered_set<std::size_t>& pinned_calls,
                       std::vector<CallChange>& changed, std::vector<Ns>& earlier,
                       std::vector<HostTimeGiven>* given = nullptr,
                       std::vector<CallChange>* held_calls = nullptr);

// Merges `shorter` into `changed`: a call already changed keeps the shorter own time.
void mergeShorter(const std::vector<CallChange>& shorter, std::vector<CallChange>& changed);

// The split moves the stream's ops off the legacy default stream (a thread's loop there, to
// created streams): other threads' calls no longer wait behind its calls there (the driver holds
// the context while a call orders its op after every blocking stream: legacy_threads.h,
// contendedTime, of the ops that leave), except those that also overlapped a call of the legacy
// ops that stay. The split thread's own asynchronous calls there that took longer beside other
// threads' launches to other streams get their excess back too (off the legacy stream they take
// their stream's lock, not the context's), except those a staying legacy call held and as many as
// the staying legacy calls over the loop's extent (turns they still take). What they waited is
// given back: blocking calls of `host` as changes merged into
// `changed`, launches per op position added to `earlier` (resized to the view's ops). Nothing
// where none of the stream's ops ran on the legacy stream.
// `given`: as heldBySplitCopies'.
void heldBySplitLegacyCalls(const DeviceView& view, const HostTimeline& host,
                            const std::vector<std::uint64_t>& keys, std::uint64_t stream,
                            std::vector<CallChange>& changed, std::vector<Ns>& earlier,
                            std::vector<HostTimeGiven>* given = nullptr);

// Gives back the host time the split's holds freed (`given`: heldBySplitCopies' and
// heldBySplitLegacyCalls', which may name one call twice: a staged legacy copy held another
// thread's call both by its staging and by the context its legacy call held) in one pass: a call
// named twice gets back the larger of its two amounts (the wait it was freed from is one wait,
// not two), and each thread's blocking calls begin sooner by all its calls freed since its
// previous blocking call, whichever hold freed them (barriersGivenBack given twice would keep only
// the second hold's amounts: freeing more would give back less). Blocking calls of `host` as
// changes merged into `changed`, launches per op position added to `earlier` (resized).
void giveBackOnce(const DeviceView& view, const HostTimeline& host, std::vector<HostTimeGiven> given,
                  std::vector<CallChange>& changed, std::vector<Ns>& earlier);

// Whether the ops of `stream` (by `keys`) ran on the legacy stream or a blocking created one. A
// per-thread default stream flags 1 as a created blocking stream does; where the trace tells it
// apart (Stream::origin kPerThread) it is not blocking work: the fix gives its loop non-blocking
// lanes (docs/findings.md, single-stream, lab28-ssu).
bool blockingWork(const DeviceView& view, const std::vector<std::uint64_t>& keys, std::uint64_t stream);

}  // namespace cuoverlap::diagnosis
