// Overlap metrics of one device. Definitions (also in docs/metrics.md):
//
// Ops are kernel, memcpy and memset rows with start > 0 and end >= start, on the device, of the
// scope's process (all processes when none is given), intersecting the scope's window (clipped to
// it). All times are integer nanoseconds.
//   kernels, memcpys, memsets  op counts
//   span_ns        last end - first start
//   busy_ns        length of the union of all ops;   idle_ns = span_ns - busy_ns
//   sum_ns         sum of op durations
//   overlap_ratio  1 - busy/sum (0 when sum is 0): 0 means nothing ran concurrently
//   copy_hidden_fraction  |U(copies) ∩ U(kernels)| / |U(copies)| (0 without copies): the share of
//                  transfer time hidden under compute. Memsets are not copies.
//                  All kernels count as compute here, communication kernels included.
//   engines        per engine (compute, h2d, d2h, d2d, other_copy, memset, comm): union busy time
//                  and its share of the span; compute holds the kernels that are not communication
//                  (communication.h has the rule), comm the communication kernels
//   concurrency_ns [k] = time within the span with exactly k ops active, k = 0..max
//   ideal_ns       max(|U(compute)|, |U(comm)|, |U(h2d)|, |U(d2h)|, |U(d2d ∪ other copies)|): the
//                  time the same work would take with perfect overlap; pipeline_efficiency =
//                  ideal/span
//   communication  kernels (count of communication kernels), busy_ns = |U(comm)|, hidden_ns =
//                  |U(comm) ∩ U(other kernels)|, exposed_ns = busy - hidden, hidden_fraction =
//                  hidden/busy (0 without communication)
//
// Cost: one pass over the ops (sorted by start), O(1) state per union (|A∩B| = |A|+|B|-|A∪B|)
// and a heap of the active ends for the sweep; no per-op allocation.
#include "cuoverlap/metrics.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <limits>

#include "cuoverlap/communication.h"
#include "cuoverlap/error.h"
#include "cuoverlap/intervals.h"

namespace cuoverlap {

namespace {

constexpr std::size_t kEngineCount = static_cast<std::size_t>(Engine::kComm) + 1;

struct Accumulators {
  UnionLength all;
  UnionLength copies;
  UnionLength kernels;  // compute and communication kernels
  UnionLength copies_or_kernels;
  UnionLength d2d_or_other;
  std::array<UnionLength, kEngineCount> engines;
  ConcurrencySweep sweep;
};

// Durations are below 2^63 (the reader bounds timestamps), but their sum over many overlapping
// ops of a corrupt trace is not: saturate instead of overflowing.
Ns saturatingAdd(Ns a, Ns b) {
  return a > std::numeric_limits<Ns>::max() - b ? std::numeric_limits<Ns>::max() : a + b;
}

double ratio(Ns numerator, Ns denominator) {
  return denominator > 0 ? static_cast<double>(numerator) / static_cast<double>(denominator) : 0.0;
}

void countOp(const GpuOp& op, DeviceMetrics& m) {
  switch (op.kind) {
    case OpKind::kKernel: ++m.kernels; break;
    case OpKind::kMemcpy: ++m.memcpys; break;
    case OpKind::kMemset: ++m.memsets; break;
  }
}

void accumulate(Ns start, Ns end, Engine engine, Accumulators& acc) {
  acc.all.add(start, end);
  acc.engines[static_cast<std::size_t>(engine)].add(start, end);
  const bool kernel = engine == Engine::kCompute || engine == Engine::kComm;
  const bool copy = !kernel && engine != Engine::kMemset;
  if (copy) acc.copies.add(start, end);
  if (kernel) acc.kernels.add(start, end);
  if (copy || kernel) acc.copies_or_kernels.add(start, end);
  if (engine == Engine::kD2D || engine == Engine::kOtherCopy) acc.d2d_or_other.add(start, end);
  acc.sweep.add(start, end);
}

void finishMetrics(Accumulators& acc, DeviceMetrics& m) {
  m.span_ns = m.last_end - m.first_start;
  m.busy_ns = acc.all.length();
  m.idle_ns = m.span_ns - m.busy_ns;
  m.overlap_ratio = m.sum_ns > 0 ? 1.0 - ratio(m.busy_ns, m.sum_ns) : 0.0;
  const Ns copies = acc.copies.length();
  const Ns kernels = acc.kernels.length();
  const Ns hidden = copies + kernels - acc.copies_or_kernels.length();
  m.copy_hidden_fraction = ratio(hidden, copies);
  m.engines.clear();
  for (std::size_t i = 0; i < kEngineCount; ++i) {
    Ns busy = acc.engines[i].length();
    m.engines.push_back({static_cast<Engine>(i), busy, ratio(busy, m.span_ns)});
  }
  m.concurrency_ns = acc.sweep.finish();
  const auto busy = [&](Engine e) { return acc.engines[static_cast<std::size_t>(e)].length(); };
  m.ideal_ns = std::max({busy(Engine::kCompute), busy(Engine::kComm), busy(Engine::kH2D),
                         busy(Engine::kD2H), acc.d2d_or_other.length()});
  m.pipeline_efficiency = ratio(m.ideal_ns, m.span_ns);
  CommunicationMetrics& c = m.communication;
  c.busy_ns = busy(Engine::kComm);
  // |U(comm) ∩ U(compute)| = |U(comm)| + |U(compute)| - |U(comm) ∪ U(compute)|.
  c.hidden_ns = c.busy_ns + busy(Engine::kCompute) - kernels;
  c.exposed_ns = c.busy_ns - c.hidden_ns;
  c.hidden_fraction = ratio(c.hidden_ns, c.busy_ns);
}

}  // namespace

std::vector<std::uint16_t> devicesInScope(const Trace& trace, const Scope& scope) {
  if (scope.device) {
    bool known = std::any_of(trace.devices.begin(), trace.devices.end(),
                             [&](const Device& d) { return d.device_id == *scope.device; }) ||
                 !opsOnDevice(trace, *scope.device).empty();
    if (!known) throw UserError(fmt::format("{}: no device {} in this trace", trace.path, *scope.device));
    return {*scope.device};
  }
  // Each device from the device index, kept at its first op in scope: O(ops) at worst, and no
  // pass over all 65536 possible ids per call (a third of a fuzz input's time).
  std::vector<std::uint16_t> ids;
  for (std::uint16_t id : devicesWithOps(trace)) {
    const std::vector<std::uint32_t>& ops = opsOnDevice(trace, id);
    if (std::any_of(ops.begin(), ops.end(),
                    [&](std::uint32_t i) { return opInScope(trace.ops[i], scope); })) {
      ids.push_back(id);
    }
  }
  return ids;
}

namespace {

// The metrics of the ops for which `visit(add)` calls add(op), in start order.
template <typename Visit>
DeviceMetrics metricsOf(const Trace& trace, const Scope& scope, std::uint16_t device_id, Visit visit) {
  DeviceMetrics m;
  m.device_id = device_id;
  // Trace::devices is sorted by id (the reader's order); a test-built trace may not be, and then
  // the binary search may miss and the scan finds it.
  const auto by_id = [](const Device& d, std::uint16_t id) { return d.device_id < id; };
  auto device = std::lower_bound(trace.devices.begin(), trace.devices.end(), device_id, by_id);
  if (device == trace.devices.end() || device->device_id != device_id) {
    device = std::find_if(trace.devices.begin(), trace.devices.end(),
                          [&](const Device& d) { return d.device_id == device_id; });
  }
  if (device != trace.devices.end() && device->device_id == device_id) m.name = device->name;
  const CommunicationKernels communication(trace);
  Accumulators acc;
  bool any = false;
  visit([&](const GpuOp& op) {
    Ns start = clippedStart(op, scope);
    Ns end = clippedEnd(op, scope);
    if (!any) m.first_start = start;
    any = true;
    m.last_end = std::max(m.last_end, end);
    m.sum_ns = saturatingAdd(m.sum_ns, end - start);
    countOp(op, m);
    const Engine engine = communication.engineOf(op);
    if (engine == Engine::kComm) ++m.communication.kernels;
    accumulate(start, end, engine, acc);
  });
  finishMetrics(acc, m);
  return m;
}

}  // namespace

DeviceMetrics computeDeviceMetrics(const Trace& trace, const Scope& scope, std::uint16_t device_id) {
  return metricsOf(trace, scope, device_id, [&](auto add) {
    for (std::uint32_t i : opsOnDevice(trace, device_id)) {
      if (opInScope(trace.ops[i], scope)) add(trace.ops[i]);
    }
  });
}

DeviceMetrics computeDeviceMetrics(const Trace& trace, const Scope& scope, std::uint16_t device_id,
                                   const std::vector<std::uint32_t>& op_indices) {
  return metricsOf(trace, scope, device_id, [&](auto add) {
    for (std::uint32_t i : op_indices) add(trace.ops[i]);
  });
}

}  // namespace cuoverlap
