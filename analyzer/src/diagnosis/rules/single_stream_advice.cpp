#include "diagnosis/rules/single_stream_advice.h"

#include <optional>
#include <unordered_map>

#include "diagnosis/api_names.h"
#include "diagnosis/pinned_rate.h"
#include "diagnosis/rules/legacy_threads.h"

namespace cuoverlap::diagnosis {
namespace {

bool synchronousCopyCall(const DeviceView& view, const GpuOp& op) {
  if (op.kind != OpKind::kMemcpy && op.kind != OpKind::kMemset) return false;
  const auto launch = view.launchCall(op);
  if (!launch) return false;
  const ApiKind kind = view.callKind(*launch);
  return kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync;
}

}  // namespace

std::vector<std::uint64_t> workStreams(const DeviceView& view) {
  const auto& ops = view.ops();
  std::vector<std::uint64_t> keys(ops.size());
  std::vector<std::size_t> moved;  // positions of synchronous copies on the legacy stream
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    keys[pos] = DeviceView::streamKey(op);
    if (view.onLegacyDefaultStreamAt(pos) && synchronousCopyCall(view, op)) moved.push_back(pos);
  }
  if (moved.empty()) return keys;
  const auto threadOf = [&](std::size_t pos) -> std::optional<std::uint64_t> {
    const auto launch = view.launchCall(view.op(ops[pos]));
    if (!launch) return std::nullopt;
    return threadKey(view.call(*launch));
  };
  // Per moved copy: its thread's kernel stream before it and after it, in one pass each way
  // (memory O(moved copies + threads)).
  std::vector<std::optional<std::uint64_t>> before(moved.size()), after(moved.size());
  std::unordered_map<std::uint64_t, std::uint64_t> kernel_stream;  // thread -> its last kernel's
  const auto follow = [&](std::size_t pos, std::optional<std::uint64_t>* seen) {
    const bool kernel = view.op(ops[pos]).kind == OpKind::kKernel;
    if (!kernel && !seen) return;
    const auto thread = threadOf(pos);
    if (!thread) return;
    if (kernel) {
      kernel_stream[*thread] = keys[pos];
    } else if (const auto it = kernel_stream.find(*thread); it != kernel_stream.end()) {
      *seen = it->second;
    }
  };
  for (std::size_t pos = 0, m = 0; pos < ops.size(); ++pos) {
    const bool is_moved = m < moved.size() && moved[m] == pos;
    follow(pos, is_moved ? &before[m++] : nullptr);
  }
  kernel_stream.clear();
  for (std::size_t pos = ops.size(), m = moved.size(); pos-- > 0;) {
    const bool is_moved = m > 0 && moved[m - 1] == pos;
    follow(pos, is_moved ? &after[--m] : nullptr);
  }
  for (std::size_t m = 0; m < moved.size(); ++m) {
    const bool feeds = engineOf(view.op(ops[moved[m]])) == Engine::kH2D;
    const auto& first = feeds ? after[m] : before[m];
    const auto& second = feeds ? before[m] : after[m];
    if (first) keys[moved[m]] = *first;
    else if (second) keys[moved[m]] = *second;
  }
  return keys;
}

PinnedCopies pinnedCopies(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                          std::uint64_t stream, bool inputs_only) {
  PinnedCopies pinned;
  std::optional<PinnedRate> rate[2];  // HtoD, DtoH: measured once, at the first pageable copy
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    const ScopedOp& scoped = view.ops()[pos];
    const GpuOp& op = view.op(scoped);
    const Engine engine = engineOf(op);
    if (keys[pos] != stream || op.kind != OpKind::kMemcpy ||
        (engine != Engine::kH2D && (inputs_only || engine != Engine::kD2H)) ||
        (op.src_kind != MemKind::kPageable && op.dst_kind != MemKind::kPageable)) {
      continue;
    }
    const int d = engine == Engine::kH2D ? 0 : 1;
    if (!rate[d]) rate[d] = pinnedRate(view, engine);
    if (const Ns at_rate = pinnedDuration(*rate[d], op.bytes); at_rate > 0) pinned.faster.push_back({pos, at_rate});
    if (const auto launch = view.launchCall(op)) {
      pinned.calls.insert(*launch);
      const RuntimeCall& call = view.call(*launch);
      pinned.call_ns[*launch] = pinnedCopyCall(view.callKind(*launch) == ApiKind::kMemcpyAsync,
                                               engine == Engine::kH2D, call.end - call.start, op.bytes);
      const Ns lead = scoped.start - view.call(*launch).start - kAsyncCopyCallNs;
      if (lead > 0) {
        pinned.earlier.resize(view.ops().size(), 0);
        pinned.earlier[pos] = lead;
      }
    }
  }
  const std::vector<std::size_t> calls(pinned.calls.begin(), pinned.calls.end());
  for (const auto& [call, turn] : callsTakingTurns(view, calls)) pinned.call_ns[call] = turn;
  return pinned;
}

std::unordered_set<std::size_t> resultsReadMidChunk(const DeviceView& view,
                                                    const std::vector<std::uint64_t>& keys,
                                                    std::uint64_t stream) {
  std::unordered_set<std::size_t> calls;
  // Per thread: the call of its previous op on the stream, when a copy to the host.
  std::unordered_map<std::uint64_t, std::size_t> copy_out;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (keys[pos] != stream) continue;
    const GpuOp& op = view.op(view.ops()[pos]);
    const auto launch = view.launchCall(op);
    if (!launch || op.kind == OpKind::kMemset) continue;  // a memset fills a buffer for either
    const std::uint64_t thread = threadKey(view.call(*launch));
    const auto previous = copy_out.find(thread);
    if (previous != copy_out.end()) {
      // The thread's next op on the stream: a copy-in starts its next step (chunkLanes' cut).
      const bool next_step = op.kind == OpKind::kMemcpy && engineOf(op) == Engine::kH2D;
      if (!next_step) calls.insert(previous->second);
      copy_out.erase(previous);
    }
    if (op.kind == OpKind::kMemcpy && engineOf(op) == Engine::kD2H) copy_out[thread] = *launch;
  }
  return calls;
}

}  // namespace cuoverlap::diagnosis
