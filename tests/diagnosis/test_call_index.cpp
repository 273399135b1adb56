// The per-trace call index (call_index.h) and what a device view takes from it: the calls of its
// processes inside its host range (first launch call to last op end), launch lookups within the
// op's own process, and one process on many devices staying linear.
#include <catch2/catch.hpp>

#include <algorithm>

#include "cuoverlap/analysis.h"
#include "diagnosis/call_index.h"
#include "diagnosis/device_view.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using diagnosis::DeviceView;
using test::TraceBuilder;

// Device 1: a copy of device 0's description.
void addDevice(Trace& trace, std::uint16_t id) {
  Device device = trace.devices.front();
  device.device_id = id;
  trace.devices.push_back(device);
}

std::vector<std::string> callNames(const DeviceView& view) {
  std::vector<std::string> names;
  for (std::size_t call : view.calls()) names.emplace_back(view.callName(call));
  return names;
}

TEST_CASE("a device view holds its processes' calls from its first launch to its last op's end") {
  TraceBuilder b;
  b.call("cudaMalloc_v3020", 1, 5);                  // before any launch: set-up
  b.launch(13, 10, 12, 20, 40);                       // device 0
  b.call("cudaStreamSynchronize_v3020", 30, 41);      // overlaps device 0's last op
  GpuOp& later = b.launch(14, 50, 52, 60, 80);        // device 1, after device 0 is done
  later.device_id = 1;
  b.call("cudaDeviceSynchronize_v3020", 70, 81);
  b.call("cudaFree_v3020", 90, 95);                   // after both devices' work
  Trace trace = b.build();
  addDevice(trace, 1);

  const DeviceView first(trace, Scope{}, 0);
  CHECK(callNames(first) ==
        std::vector<std::string>{"cudaLaunchKernel", "cudaStreamSynchronize"});
  const DeviceView second(trace, Scope{}, 1);
  CHECK(callNames(second) ==
        std::vector<std::string>{"cudaLaunchKernel", "cudaDeviceSynchronize"});

  // A window clips the range: only calls overlapping [25 us, 45 us) of device 0's.
  Scope window;
  window.window_start = TraceBuilder::ns(25);
  window.window_end = TraceBuilder::ns(45);
  const DeviceView clipped(trace, window, 0);
  CHECK(callNames(clipped) == std::vector<std::string>{"cudaStreamSynchronize"});
  REQUIRE(clipped.ops().size() == 1);
  CHECK(clipped.launchCall(clipped.op(clipped.ops()[0])).has_value());  // found outside the window
}

TEST_CASE("launch lookups stay within the op's process when correlation ids repeat") {
  TraceBuilder b;
  const std::uint32_t corr = b.launch(13, 10, 12, 20, 30).correlation_id;
  Trace trace = b.build();
  // A second process with the same correlation id: its own launch call, its own kernel.
  RuntimeCall other = trace.runtime_calls.front();
  other.pid = 777;
  other.start = TraceBuilder::ns(14);
  other.end = TraceBuilder::ns(16);
  trace.runtime_calls.push_back(other);
  GpuOp op = trace.ops.front();
  op.pid = 777;
  op.start = TraceBuilder::ns(32);
  op.end = TraceBuilder::ns(40);
  trace.ops.push_back(op);
  REQUIRE(op.correlation_id == corr);

  const DeviceView view(trace, Scope{}, 0);
  REQUIRE(view.ops().size() == 2);
  for (const diagnosis::ScopedOp scoped : view.ops()) {
    const GpuOp& launched = view.op(scoped);
    const auto call = view.launchCall(launched);
    REQUIRE(call.has_value());
    CHECK(view.call(*call).pid == launched.pid);
  }
  CHECK(view.calls().size() == 2);
}

TEST_CASE("one process on many devices: each view holds its own device's calls only") {
  TraceBuilder b;
  constexpr int kDevices = 2000;
  for (int d = 0; d < kDevices; ++d) {
    const double t = 10.0 * d;
    GpuOp& op = b.launch(13, t + 1, t + 2, t + 3, t + 8);
    op.device_id = static_cast<std::uint16_t>(d);
  }
  Trace trace = b.build();
  for (int d = 1; d < kDevices; ++d) addDevice(trace, static_cast<std::uint16_t>(d));
  std::size_t held = 0;
  for (int d = 0; d < kDevices; d += 97) {
    const DeviceView view(trace, Scope{}, static_cast<std::uint16_t>(d));
    REQUIRE(view.ops().size() == 1);
    held += view.calls().size();
    CHECK(view.readyTime(0).has_value());
  }
  CHECK(held == (kDevices + 96) / 97);  // one launch call each, not every call of the process
  // The call index is built once per trace and answers kinds for any call.
  const diagnosis::CallIndex& index = diagnosis::callIndex(trace);
  CHECK(&index == &diagnosis::callIndex(trace));
  CHECK(index.kind(0) == diagnosis::ApiKind::kLaunch);
}

}  // namespace
}  // namespace cuoverlap
