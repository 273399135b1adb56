// module-load: the device idled while the thread that issued the next op was loading, JIT-compiling
// or linking GPU code (the module-load parts of the idle gaps, docs/gaps.md): cuModuleLoad*,
// cuLibraryLoad*, cudaLibraryLoad*, cuLink* calls, and lazy first launches (the first launch of a
// kernel taking at least 10x the median launch and 50 µs more: CUDA_MODULE_LOADING=LAZY loads
// the kernel's module inside it). Each call's module-load time inside one gap, when at least
// 10 µs, is an instance.
// Cost: those parts' total length.
// Fires when the cost reaches 1% of the device span. Severity by share of the span: info below
// 5%, warning from 5%, error from 25%.
// Needs: runtime calls.
#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/idle_gaps.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr double kWarningShareOfSpan = 0.05;
// One-off host time below this share of the span (the lazy load of the first kernel, a short
// pause) is not worth a finding; the gap parts still show it.
constexpr double kMinimumShareOfSpan = 0.01;

struct Load {
  Interval time;
  std::size_t call = 0;
  bool lazy_launch = false;
};

std::string describeLoad(const DeviceView& view, const Load& load) {
  const std::string took = units::formatDuration(load.time.length());
  if (!load.lazy_launch) return fmt::format("loaded, compiled or linked GPU code for {} while the device idled", took);
  return fmt::format("first launch of this kernel spent {} loading its module (lazy loading) "
                     "while the device idled; the launch call took {}",
                     took, units::formatDuration(view.call(load.call).end - view.call(load.call).start));
}

}  // namespace

std::optional<Finding> findModuleLoad(const DeviceView& view) {
  std::vector<Load> loads;
  Ns total = 0;
  forEachGapHostPart(view, [&](const Interval&, const HostPart& part, std::size_t launch) {
    if (part.activity != HostActivity::kModuleLoad || !part.call) return;
    if (part.end - part.start < kMinimumCostNs) return;
    loads.push_back({{part.start, part.end}, *part.call, *part.call == launch &&
                                                             view.callKind(launch) == ApiKind::kLaunch});
    total += part.end - part.start;
  });
  const double span = static_cast<double>(view.spanLength());
  if (loads.empty() || static_cast<double>(total) < kMinimumShareOfSpan * span) return std::nullopt;
  const bool warn = static_cast<double>(total) >= kWarningShareOfSpan * span;
  FindingBuilder builder(view, "module-load", warn ? Severity::kWarning : Severity::kInfo);
  for (const Load& load : loads) {
    Evidence evidence = evidenceForCall(view, load.call, 0, describeLoad(view, load));
    evidence.time = load.time.start;
    builder.add(load.time, std::move(evidence));
  }
  return builder.build(
      fmt::format("the device idled {} while the host loaded or JIT-compiled GPU code ({} times)",
                  units::formatDuration(total), builder.count()),
      "Warm up before the measured region (run each kernel once), load modules eagerly with "
      "CUDA_MODULE_LOADING=EAGER, and keep JIT results cached (CUDA_CACHE_PATH, a framework's "
      "compilation cache) or compile ahead of time for the GPU's architecture");
}

}  // namespace cuoverlap::diagnosis
