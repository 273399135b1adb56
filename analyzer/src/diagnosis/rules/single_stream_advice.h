// What single-stream's advice does beside splitting a stream's chunks over streams (pinned host
// buffers, every copy and memset of the loop issued asynchronously on the stream), as its what-if
// needs it (single_stream.cpp; docs/findings.md, single-stream, "The whole advice"):
//   - workStreams: which stream's loop each op belongs to, a thread's synchronous copies (run on
//     the legacy stream) counted with the stream of its kernels;
//   - pinnedCopies: the stream's pageable copies as pinned ones would run (pageable-memcpy's
//     model, pinned_rate.h);
//   - resultsReadMidChunk: the synchronous copies to the host whose result the thread read before
//     going on with its step, which the advice still waits for.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {

// The stream whose work each op is (per position in view.ops()): its own stream, except a
// synchronous copy or memset call (cudaMemcpy, cudaMemset: they run on the legacy default stream)
// of a thread that launches its kernels on another stream. That copy is a step of the thread's
// loop on the kernels' stream, ordered with them by the host's wait (or the legacy barrier), and
// the advice issues it asynchronously on that stream: an HtoD copy is the work of the stream of
// its thread's next kernel (the kernel it feeds; the last kernel where none follows), any other
// copy of the stream of its thread's last kernel before it (the next where none came before).
// Values are DeviceView::streamKey's. O(n) time; memory O(n) for the keys only.
std::vector<std::uint64_t> workStreams(const DeviceView& view);

// The advice's pinned buffers in the split, priced as pageable-memcpy's fix pins them: each
// pageable host<->device copy of `stream` (by `keys`) takes the pinned rate of its direction plus
// a pinned copy's fixed cost (`faster`, even where its staged op ran shorter: a small staged
// upload's DMA reads the driver's staging buffer, and g000013's 11.6 KiB uploads ran 1.3 µs
// staged, 2.7 µs pinned in both its fixed programs, pin-host and multi-stream), and starts a few
// µs after its call began instead of after the host staged its first bytes (`earlier`, per
// position; empty = none); their calls (`calls`, indices into Trace::runtime_calls) take what a
// pinned call takes (`call_ns`: pinnedCopyCall, or the recorded turn of one that took turns with
// another thread's legacy-stream call, callsTakingTurns) instead of staging: g000013's pinned
// calls took 3.1 µs, where the part of its staged calls the host did not wait was 2.6.
// `inputs_only`: its host-to-device copies alone (the copy-ahead pins the input buffers).
struct PinnedCopies {
  std::vector<FasterOp> faster;
  std::vector<Ns> earlier;
  std::unordered_set<std::size_t> calls;
  std::unordered_map<std::size_t, Ns> call_ns;  // per call of `calls`
};
PinnedCopies pinnedCopies(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                          std::uint64_t stream, bool inputs_only = false);

// The calls of `stream`'s copies to the host that their thread read before going on with the
// step: a device-to-host copy after which the thread's next copy or kernel on the stream is no
// host-to-device copy (that would start its next step, as single-stream's chunks are cut; memsets
// fill buffers for either and don't count) but more of the step's work, issued after the copy's
// call returned. The advice synchronizes the chunk's stream before that read, so the call still
// waits for its copy, now on its lane; a copy-out that ends its step returns at once (its result
// read later, where the host synchronizes, as sync-memcpy's what-if has it: a trace does not show
// the read).
std::unordered_set<std::size_t> resultsReadMidChunk(const DeviceView& view,
                                                    const std::vector<std::uint64_t>& keys,
                                                    std::uint64_t stream);

}  // namespace cuoverlap::diagnosis
