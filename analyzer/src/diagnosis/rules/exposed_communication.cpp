// exposed-communication: communication kernels (docs/metrics.md, "Communication") ran while no
// other kernel of the device ran, for at least 5% of the device span. Each exposed stretch of a
// collective (a maximal part of its interval outside the union of the device's other kernels) is
// one instance; the evidence is the largest stretches, each naming its collective (type and dtype
// from the kernel name) and the NVTX ranges open on the launching thread when it was launched.
// Cost: what hiding the exposed time E = |U(comm)| - |U(comm) ∩ U(compute)| (the device's
// communication.exposed_ns, the union of the stretches) would save. Communication kernels beside
// compute slow it (they take SMs and memory bandwidth), so when the trace shows how much
// (CommunicationOps::measuredOverlapEfficiency: compute kernels that ran both beside
// communication and alone) the cost is E × that efficiency — each stretch counted for its first
// `efficiency` share; otherwise E, an upper bound, and the summary says so. On a rank of a job,
// the job analysis then leaves out the rank's wait for later ranks at the start of collectives
// (skew, job/peer_wait.h). Fix: what fits the collectives exposed (adviceFor).
// Needs: kernel names (nothing else; NVTX and launch calls only enrich the evidence).
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "cuoverlap/communication.h"
#include "cuoverlap/units.h"
#include "diagnosis/communication_ops.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {
namespace {

struct ExposedStretch {
  Interval piece;
  std::size_t position = 0;  // in view.ops()
};

std::vector<ExposedStretch> exposedStretches(const DeviceView& view, const CommunicationOps& comm) {
  std::vector<ExposedStretch> stretches;
  for (std::size_t pos : comm.positions()) {
    const ScopedOp scoped = view.ops()[pos];
    for (const Interval& piece : comm.exposedPieces(scoped.start, scoped.end)) {
      stretches.push_back({piece, pos});
    }
  }
  return stretches;
}

// How many communication kernels the stretches belong to (stretches come in position order).
std::size_t collectivesIn(const std::vector<ExposedStretch>& stretches) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < stretches.size(); ++i) {
    if (i == 0 || stretches[i].position != stretches[i - 1].position) ++count;
  }
  return count;
}

std::string savingNote(const std::optional<CommunicationOps::OverlapEfficiency>& measured,
                       Ns saving) {
  if (!measured) {
    return fmt::format("hiding it would save at most {} (no compute kernel of this trace ran both "
                       "beside communication and alone, so how much overlap slows compute is "
                       "unknown; on one NVLink node it can take back most of the gain)",
                       units::formatDuration(saving));
  }
  return fmt::format("hiding it would save about {}: here, compute kernels beside communication "
                     "ran {} longer over {} under it ({} kernels measured), so overlap gained {} of "
                     "its length",
                     units::formatDuration(saving), units::formatDuration(measured->extra_ns),
                     units::formatDuration(measured->under_ns), measured->kernels,
                     units::formatPercent(measured->efficiency));
}

// The advice that fits the collectives whose time was exposed, the most exposed kind first: DDP's
// gradient buckets only for all-reduces, FSDP/ZeRO prefetching for all-gathers and
// reduce-scatters, a chunked exchange for all-to-all and send/receive (expert and pipeline
// parallelism, where bucket sizes mean nothing), then what holds for any collective.
std::string adviceFor(const std::vector<std::pair<std::string, Ns>>& exposed_by_type) {
  std::vector<std::pair<Ns, std::string>> parts;  // (exposed time, advice), one per kind
  const auto add = [&parts](Ns time, const std::string& advice) {
    for (auto& part : parts) {
      if (part.second == advice) return void(part.first += time);
    }
    parts.emplace_back(time, advice);
  };
  for (const auto& [type, time] : exposed_by_type) {
    if (type == "AllReduce") {
      add(time, "all-reduces (PyTorch DDP): smaller gradient buckets "
                "(DistributedDataParallel(bucket_cap_mb=...)) so that all-reduces start during "
                "backward, gradient_as_bucket_view=True, no torch.cuda.synchronize() or .item() "
                "between backward and the optimizer");
    } else if (type == "AllGather" || type == "ReduceScatter") {
      add(time, "all-gathers and reduce-scatters (FSDP, ZeRO): forward_prefetch=True and "
                "backward_prefetch=BackwardPrefetch.BACKWARD_PRE (FSDP2: "
                "set_modules_to_forward_prefetch / set_modules_to_backward_prefetch; DeepSpeed "
                "ZeRO-3: overlap_comm=True)");
    } else if (type == "SendRecv" || type.rfind("AllToAll", 0) == 0) {
      add(time, "all-to-all and send/receive (expert parallelism's token dispatch and combine, "
                "pipeline parallelism's activations): split the exchange into chunks and overlap "
                "each chunk's transfer with the compute of the one before (overlapped MoE "
                "dispatch/combine; an interleaved 1F1B pipeline schedule)");
    }
  }
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string advice = "Overlap communication with compute. ";
  for (const auto& part : parts) {
    std::string text = part.second;
    text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
    advice += text + ". ";
  }
  return advice + "Any collective: issue it on a separate high-priority stream "
                  "(torch.cuda.Stream(priority=-1)) as soon as its inputs are ready, and overlap "
                  "the optimizer step with the last collectives (per-parameter optimizer hooks, "
                  "ZeRO-style overlap)";
}

}  // namespace

std::optional<Finding> findExposedCommunication(const DeviceView& view) {
  const CommunicationOps comm(view);
  if (comm.empty()) return std::nullopt;
  const std::vector<ExposedStretch> stretches = exposedStretches(view, comm);
  const Ns exposed = comm.exposedTotal();
  if (exposed < kMinimumCostNs ||
      static_cast<double>(exposed) < kExposedCommunicationMinShare * static_cast<double>(view.spanLength())) {
    return std::nullopt;
  }
  // Only the largest stretches become evidence: describe those in full (NVTX lookups), the rest
  // by name.
  std::vector<std::size_t> order(stretches.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return stretches[a].piece.length() > stretches[b].piece.length();
  });
  std::vector<bool> described(stretches.size(), false);
  for (std::size_t i = 0; i < order.size() && i < kMaxEvidence; ++i) described[order[i]] = true;
  const auto measured = comm.measuredOverlapEfficiency();
  const double efficiency = measured ? measured->efficiency : 1.0;
  FindingBuilder builder(view, "exposed-communication", Severity::kWarning);
  std::vector<std::pair<std::string, Ns>> exposed_by_type;
  for (std::size_t i = 0; i < stretches.size(); ++i) {
    const ScopedOp scoped = view.ops()[stretches[i].position];
    const GpuOp& op = view.op(scoped);
    const std::string type = parseCollectiveName(view.trace().str(op.name)).type;
    auto known = std::find_if(exposed_by_type.begin(), exposed_by_type.end(),
                              [&](const auto& e) { return e.first == type; });
    if (known == exposed_by_type.end()) known = exposed_by_type.insert(known, {type, 0});
    known->second += stretches[i].piece.length();
    const std::string what = described[i] ? describeCollectiveInContext(view, op)
                                          : describeCollective(view.trace().str(op.name));
    // The evidence's time is the collective's start; the stretch is placed from there, so that
    // the detail carries no time base of its own (reports count from the trace's first GPU op).
    const Ns into = stretches[i].piece.start - op.start;
    Evidence evidence = evidenceForOp(
        view, op,
        fmt::format("{}: {} of its {} with no compute kernel running{}", what,
                    units::formatDuration(stretches[i].piece.length()),
                    units::formatDuration(scoped.end - scoped.start),
                    into > 0 ? ", from " + units::formatDuration(into) + " into it" : std::string()));
    const Interval piece = stretches[i].piece;
    const Ns saved = static_cast<Ns>(efficiency * static_cast<double>(piece.length()));
    builder.add(Interval{piece.start, piece.start + saved}, std::move(evidence));
  }
  return builder.build(
      fmt::format("{} of communication ({} of the span) ran with no compute kernel beside it, in {} "
                  "of {} communication kernels; {}",
                  units::formatDuration(exposed),
                  units::formatPercent(static_cast<double>(exposed) / view.spanLength()),
                  collectivesIn(stretches), comm.positions().size(), savingNote(measured, builder.time())),
      adviceFor(exposed_by_type));
}

}  // namespace cuoverlap::diagnosis
