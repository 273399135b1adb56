// Idle gaps and their causes.
//
// A gap is a maximal interval inside the device's span (first op start to last op end, within the
// scope) in which no op of the device is active. Each gap is attributed to exactly one cause, the
// first that matches in this order:
//   sync-wait        a host-blocking call (device/stream/event synchronize, synchronous memcpy or
//                    memset) was in progress during the gap and returned no later than the next
//                    op's launch call began: the host waited for the device to drain first;
//   allocation       an allocation, free, host allocation or host registration call was in progress
//                    during the gap (these synchronize the device implicitly);
//   pageable-staging the next op is a memcpy from/to pageable host memory (staged by the driver);
//   host-launch      the next op's launch call had not returned when the gap began: the host was
//                    late submitting it;
//   dependency       the next op was launched before the gap began but did not start: it waited on
//                    an event, another stream or an earlier op;
//   unknown          no runtime call data for the next op.
// "Had not returned" (rather than "began after the gap began") makes a launch that straddles the
// gap's start count as late: the op could not start before its submission completed.
#include "diagnosis/idle_gaps.h"

#include <algorithm>

namespace cuoverlap::diagnosis {
namespace {

// Host-blocking and allocation calls sorted by start, with a running maximum of their ends, so
// that the calls in progress during a gap are found without scanning every call.
class BlockingCalls {
 public:
  explicit BlockingCalls(const DeviceView& view) : view_(view) {
    for (std::size_t index : view.calls()) {
      const ApiKind kind = view.callKind(index);
      if (!isHostBlocking(kind) && kind != ApiKind::kAllocation) continue;
      calls_.push_back(index);
      const Ns end = view.call(index).end;
      max_end_.push_back(max_end_.empty() ? end : std::max(max_end_.back(), end));
    }
  }

  // The call of the wanted class overlapping [start, end) that returned last, excluding `skip`;
  // host-blocking calls must also have returned by `returned_by`.
  std::optional<std::size_t> find(Ns start, Ns end, bool host_blocking, Ns returned_by,
                                  std::optional<std::size_t> skip) const {
    auto upper = std::lower_bound(calls_.begin(), calls_.end(), end, [&](std::size_t i, Ns t) {
      return view_.call(i).start < t;
    });
    std::optional<std::size_t> best;
    for (auto k = upper - calls_.begin(); k > 0 && max_end_[k - 1] > start; --k) {
      const std::size_t index = calls_[k - 1];
      const RuntimeCall& call = view_.call(index);
      const ApiKind kind = view_.callKind(index);
      if (call.end <= start || index == skip) continue;
      if (host_blocking ? (!isHostBlocking(kind) || call.end > returned_by)
                        : kind != ApiKind::kAllocation) {
        continue;
      }
      if (!best || call.end > view_.call(*best).end) best = index;
    }
    return best;
  }

 private:
  const DeviceView& view_;
  std::vector<std::size_t> calls_;
  std::vector<Ns> max_end_;
};

bool isPageableCopy(const GpuOp& op) {
  return op.kind == OpKind::kMemcpy &&
         (op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable);
}

void attributeCause(const DeviceView& view, const BlockingCalls& blocking, IdleGap& gap) {
  const GpuOp& next = view.trace().ops[*gap.next_op];
  const std::optional<std::size_t> launch = view.launchCall(next);
  const Ns launch_start = launch ? view.call(*launch).start : gap.end;
  if (auto call = blocking.find(gap.start, gap.end, true, launch_start, launch)) {
    gap.cause = GapCause::kSyncWait;
    gap.call = call;
  } else if (auto alloc = blocking.find(gap.start, gap.end, false, gap.end, launch)) {
    gap.cause = GapCause::kAllocation;
    gap.call = alloc;
  } else if (isPageableCopy(next)) {
    gap.cause = GapCause::kPageableStaging;
    gap.call = launch;
  } else if (launch) {
    gap.cause = view.call(*launch).end > gap.start ? GapCause::kHostLaunch : GapCause::kDependency;
    gap.call = launch;
  } else {
    gap.cause = GapCause::kUnknown;
  }
}

}  // namespace

std::vector<IdleGap> attributeGaps(const DeviceView& view, Ns min_ns) {
  const BlockingCalls blocking(view);
  std::vector<IdleGap> gaps;
  std::optional<std::size_t> last_ender;  // the op whose end is the latest so far
  Ns covered_until = view.spanStart();
  for (const ScopedOp& op : view.ops()) {
    if (op.start > covered_until && op.start - covered_until >= min_ns) {
      IdleGap gap;
      gap.start = covered_until;
      gap.end = op.start;
      gap.prev_op = last_ender;
      gap.next_op = op.index;
      attributeCause(view, blocking, gap);
      gaps.push_back(gap);
    }
    if (!last_ender || op.end >= covered_until) {
      covered_until = op.end;
      last_ender = op.index;
    }
  }
  return gaps;
}

}  // namespace cuoverlap::diagnosis
