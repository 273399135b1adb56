// Idle gaps and their causes.
//
// A gap is a maximal interval inside the device's span (first op start to last op end, within the
// scope) in which no op of the device is active. Each gap is split into parts by what the thread
// that issued the gap's next op (the thread of its launch call) was doing, from the host-state
// model (host_state.h). Let the launch call run from L0 to L1:
//   before L0, by the thread's state:
//     pageable-staging in the call of a copy from or to pageable memory (the driver stages it
//                      through a pinned buffer, and copies it out after a DtoH DMA ended);
//     sync-wait        in a host-blocking call (synchronize, synchronous memcpy/memset);
//     allocation       in an allocation, free, host allocation or registration;
//     module-load      loading, JIT-compiling or linking modules, or a lazy first launch;
//     host-launch      in any other CUDA call (launching other work, event records, queries);
//     host-busy        in no CUDA call at all: the thread ran its own code;
//   from L0 to L1 (the next op's own launch call):
//     pageable-staging when the next op copies from or to pageable host memory (the driver
//                      stages it through a pinned buffer inside the call);
//     module-load      the lazy-loading head of a first launch;
//     host-launch      otherwise;
//   after L1: host-launch when the call returned inside the gap (the submission latency), and
//     dependency for the whole gap when it returned before the gap began: the op was queued and
//     waited for an event, another stream or device, or a host callback;
//   unknown          the whole gap, when the next op has no launch call (no runtime data).
// The parts add up to the gap exactly; the gap's cause is its largest part (ties: enum order).
// The call named with a gap is the one of its largest part (none for host-busy).
#include "diagnosis/idle_gaps.h"

#include <algorithm>
#include <array>

#include "diagnosis/host_state.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr std::size_t kCauseCount = static_cast<std::size_t>(GapCause::kUnknown) + 1;

bool isPageableCopy(const GpuOp& op) {
  return op.kind == OpKind::kMemcpy &&
         (op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable);
}

GapCause causeOf(HostActivity activity) {
  switch (activity) {
    case HostActivity::kCpu: return GapCause::kHostBusy;
    case HostActivity::kBlocking: return GapCause::kSyncWait;
    case HostActivity::kAllocation: return GapCause::kAllocation;
    case HostActivity::kModuleLoad: return GapCause::kModuleLoad;
    case HostActivity::kPageableCopy: return GapCause::kPageableStaging;
    case HostActivity::kApi: break;
  }
  return GapCause::kHostLaunch;
}

// Time per cause within one gap, and for each cause the call of its longest piece.
class GapParts {
 public:
  void add(GapCause cause, Ns ns, std::optional<std::size_t> call) {
    if (ns <= 0) return;
    const auto c = static_cast<std::size_t>(cause);
    ns_[c] += ns;
    if (ns > longest_[c]) {
      longest_[c] = ns;
      call_[c] = call;
    }
  }

  void writeTo(IdleGap& gap) const {
    gap.causes.clear();
    for (std::size_t c = 0; c < kCauseCount; ++c) {
      if (ns_[c] > 0) gap.causes.push_back({static_cast<GapCause>(c), ns_[c]});
    }
    std::stable_sort(gap.causes.begin(), gap.causes.end(),
                     [](const GapCausePart& a, const GapCausePart& b) { return a.ns > b.ns; });
    if (gap.causes.empty()) return;
    gap.cause = gap.causes.front().cause;
    gap.call = call_[static_cast<std::size_t>(gap.cause)];
  }

 private:
  std::array<Ns, kCauseCount> ns_{};
  std::array<Ns, kCauseCount> longest_{};
  std::array<std::optional<std::size_t>, kCauseCount> call_{};
};

void attributeCause(const DeviceView& view, IdleGap& gap) {
  const GpuOp& next = view.trace().ops[*gap.next_op];
  const std::optional<std::size_t> launch = view.launchCall(next);
  GapParts parts;
  if (!launch) {
    parts.add(GapCause::kUnknown, gap.duration(), std::nullopt);
  } else if (view.call(*launch).end <= gap.start) {
    parts.add(GapCause::kDependency, gap.duration(), launch);
  } else {
    Ns covered = gap.start;  // what the host parts do not cover is the launch call and after it
    for (const HostPart& part : hostPartsOfGap(view, {gap.start, gap.end}, *launch)) {
      parts.add(causeOf(part.activity), part.end - part.start, part.call);
      covered = part.end;
    }
    const Ns launch_to = std::clamp(view.call(*launch).end, covered, gap.end);
    parts.add(isPageableCopy(next) ? GapCause::kPageableStaging : GapCause::kHostLaunch,
              launch_to - covered, launch);
    parts.add(GapCause::kHostLaunch, gap.end - launch_to, launch);
  }
  parts.writeTo(gap);
}

}  // namespace

std::vector<HostPart> hostPartsOfGap(const DeviceView& view, Interval gap, std::size_t launch) {
  const RuntimeCall& call = view.call(launch);
  if (call.end <= gap.start) return {};
  const HostState& host = view.hostState();
  const Ns launch_from = std::clamp(call.start, gap.start, gap.end);
  std::vector<HostPart> parts;
  if (const auto thread = host.threadOf(call)) {
    parts = host.partsWithin(*thread, gap.start, launch_from);
  } else if (launch_from > gap.start) {
    parts.push_back({gap.start, launch_from, HostActivity::kCpu, std::nullopt});
  }
  const Ns lazy_end = std::clamp(call.start + host.moduleLoadWithin(launch), launch_from,
                                 std::clamp(call.end, gap.start, gap.end));
  if (lazy_end > launch_from) {
    parts.push_back({launch_from, lazy_end, HostActivity::kModuleLoad, launch});
  }
  return parts;
}

std::vector<IdleGap> attributeGaps(const DeviceView& view, Ns min_ns) {
  std::vector<IdleGap> gaps;
  // The gaps are the view's idle intervals of min_ns or more: without one, no pass over the ops
  // for their neighbours (a busy device's usual case).
  const std::vector<Interval>& idle = view.idle();
  if (std::none_of(idle.begin(), idle.end(), [&](const Interval& i) { return i.length() >= min_ns; })) {
    return gaps;
  }
  std::optional<std::size_t> last_ender;  // the op whose end is the latest so far
  Ns covered_until = view.spanStart();
  for (const ScopedOp& op : view.ops()) {
    if (op.start > covered_until && op.start - covered_until >= min_ns) {
      IdleGap gap;
      gap.start = covered_until;
      gap.end = op.start;
      gap.prev_op = last_ender;
      gap.next_op = op.index;
      attributeCause(view, gap);
      gaps.push_back(std::move(gap));
    }
    if (!last_ender || op.end >= covered_until) {
      covered_until = op.end;
      last_ender = op.index;
    }
  }
  return gaps;
}

}  // namespace cuoverlap::diagnosis
