// `cuoverlap_kineto_compare TRACE...`: the figures HolisticTraceAnalysis reports, computed from
// cuoverlap's model (readTrace, any format) with HTA's definitions, beside our own device
// metrics, for the side-by-side table in docs/BENCHMARKS.md ("Side by side with HTA").
//
// HTA's definitions (hta/analyzers/breakdown_analysis.py, communication_analysis.py), per rank,
// over every GPU event with a stream (kernels, copies, memsets, on all devices of the rank):
//   kernel_time  last end - first start
//   idle         kernel_time - |union of all|
//   compute      |union of kernels whose name is not NCCL/Memcpy/Memset/*Sync|
//   non_compute  |union of all| - compute
//   comm overlap |union(NCCL kernels) ∩ union(compute kernels)| / |union(NCCL kernels)|
// Ours (docs/metrics.md), per device: span, busy (= union of all), idle = span - busy, and the
// compute engine = union of all kernels, NCCL included.
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "cuoverlap/intervals.h"
#include "cuoverlap/metrics.h"
#include "cuoverlap/reader.h"
#include "cuoverlap/report.h"

using namespace cuoverlap;

namespace {

double ms(Ns ns) { return static_cast<double>(ns) / 1e6; }

void compare(const std::string& path) {
  const Trace trace = readTrace(path);
  // HTA's regular expressions, applied with Python's re.match (anchored at the start only).
  static const std::regex nccl(R"(^nccl.*Kernel)");
  static const std::regex not_compute(R"((^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync))");
  auto matchAtStart = [](const std::string& text, const std::regex& re) {
    return std::regex_search(text, re, std::regex_constants::match_continuous);
  };
  std::vector<Interval> all, compute, comm;
  for (const GpuOp& op : trace.ops) {
    all.push_back({op.start, op.end});
    if (op.kind != OpKind::kKernel) continue;
    const std::string name(trace.str(op.name));
    if (matchAtStart(name, nccl)) comm.push_back({op.start, op.end});
    if (!matchAtStart(name, not_compute)) compute.push_back({op.start, op.end});
  }
  const auto all_u = unionOf(all), compute_u = unionOf(compute), comm_u = unionOf(comm);
  const Ns span = all_u.empty() ? 0 : all_u.back().end - all_u.front().start;
  const Ns busy = totalLength(all_u);
  const Ns comm_len = totalLength(comm_u);
  const Ns overlap = totalLength(intersectionOf(comm_u, compute_u));
  std::printf("%s\n  HTA definitions on our model: kernel_time %.3f ms, idle %.3f ms, compute %.3f ms, "
              "non-compute %.3f ms, comm overlap %s\n",
              path.c_str(), ms(span), ms(span - busy), ms(totalLength(compute_u)),
              ms(busy - totalLength(compute_u)),
              comm_len > 0 ? std::to_string(100.0 * static_cast<double>(overlap) / static_cast<double>(comm_len)).c_str()
                           : "n/a (no NCCL kernels)");
  for (std::uint16_t device : devicesInScope(trace, Scope{})) {
    const DeviceMetrics m = computeDeviceMetrics(trace, Scope{}, device);
    std::printf("  ours, device %u: span %.3f ms, busy %.3f ms, idle %.3f ms, compute engine %.3f ms, "
                "kernels %llu, memcpys %llu, memsets %llu\n",
                device, ms(m.span_ns), ms(m.busy_ns), ms(m.idle_ns), ms(m.engines[0].busy_ns),
                static_cast<unsigned long long>(m.kernels), static_cast<unsigned long long>(m.memcpys),
                static_cast<unsigned long long>(m.memsets));
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) compare(argv[i]);
  return argc > 1 ? 0 : 2;
}
