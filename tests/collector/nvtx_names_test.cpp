// NVTX range assembly, kernel short names and output-name expansion.
#include <catch2/catch.hpp>

#include "collector_env.h"
#include "kernel_names.h"
#include "nvtx_assembler.h"
#include "trace_schema.h"

using namespace cuoverlap::collector;
using cuoverlap::schema::NvtxEventType;

namespace {

MarkerRow marker(MarkerPhase phase, std::uint32_t id, std::uint64_t ts, bool thread_scoped,
                 const char* name = nullptr, const char* domain = nullptr) {
  MarkerRow row;
  row.phase = phase, row.id = id, row.timestamp = ts, row.thread_scoped = thread_scoped;
  row.process_id = 100, row.thread_id = thread_scoped ? 7 : 0, row.name = name, row.domain = domain;
  return row;
}

}  // namespace

TEST_CASE("NVTX start and end markers pair into ranges with their colour") {
  NvtxAssembler nvtx;
  std::vector<NvtxEvent> out;
  nvtx.onMarker(marker(MarkerPhase::kStart, 1, 10, true, "outer"), out);
  nvtx.onMarker(marker(MarkerPhase::kStart, 2, 20, false, "async", "io"), out);
  nvtx.onMarkerData({1, 0xFF0000FF, 0, true});
  REQUIRE(out.size() == 1);  // the DomainCreate of "io"
  CHECK(out[0].event_type == static_cast<int>(NvtxEventType::kDomainCreate));
  CHECK(out[0].text == "io");
  CHECK(out[0].domain_id == 1);
  nvtx.onMarker(marker(MarkerPhase::kEnd, 1, 30, true), out);
  nvtx.onMarker(marker(MarkerPhase::kEnd, 2, 40, true), out);
  nvtx.onMarker(marker(MarkerPhase::kEnd, 9, 50, true), out);  // start never seen
  REQUIRE(out.size() == 3);
  CHECK(out[1].event_type == static_cast<int>(NvtxEventType::kPushPopRange));
  CHECK(out[1].text == "outer");
  CHECK(out[1].start == 10);
  CHECK(out[1].end == 30u);
  CHECK(out[1].color == 0xFF0000FFu);
  CHECK(out[1].global_tid == cuoverlap::schema::encodeGlobalTid(100, 7));
  CHECK(out[1].domain_id == 0);
  CHECK(out[2].event_type == static_cast<int>(NvtxEventType::kStartEndRange));
  CHECK(out[2].domain_id == 1);
  CHECK_FALSE(out[2].color.has_value());
  CHECK(nvtx.unmatchedEnds() == 1);
  CHECK(nvtx.openRanges() == 0);
}

TEST_CASE("NVTX marks wait for their marker data until the end of the buffer") {
  NvtxAssembler nvtx;
  std::vector<NvtxEvent> out;
  nvtx.onMarker(marker(MarkerPhase::kInstant, 5, 15, true, "tick"), out);
  CHECK(out.empty());
  nvtx.onMarkerData({5, 0xFF00FF00, 3, true});
  nvtx.endOfBuffer(out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].event_type == static_cast<int>(NvtxEventType::kMark));
  CHECK_FALSE(out[0].end.has_value());
  CHECK(out[0].color == 0xFF00FF00u);
  CHECK(out[0].category == 3u);
}

TEST_CASE("kernel names: demangled, short and mangled") {
  KernelNames names = kernelNames("_Z4scanPii");
  CHECK(names.mangled == "_Z4scanPii");
  CHECK(names.demangled == "scan(int*, int)");
  CHECK(names.short_name == "scan");
  KernelNames plain = kernelNames("emptyKernel");
  CHECK(plain.demangled == "emptyKernel");
  CHECK(plain.short_name == "emptyKernel");
  CHECK(shortKernelName("void ns::blelloch<int, 4>(int*, int const*, unsigned long)") == "blelloch");
  CHECK(shortKernelName("void cub::DeviceScanKernel<Policy, (bool)1>(int*)") == "DeviceScanKernel");
}

TEST_CASE("output names expand %p, %h and %%") {
  using cuoverlap::schema::expandOutputPattern;
  CHECK(expandOutputPattern("run-%p.sqlite", 123, "gpu1") == "run-123.sqlite");
  CHECK(expandOutputPattern("%h/%p-%%.sqlite", 9, "gpu1") == "gpu1/9-%.sqlite");
  CHECK(expandOutputPattern("plain%", 9, "h") == "plain%");
  CHECK(expandOutputPattern("a%xb", 9, "h") == "a%xb");
}

TEST_CASE("ranges reported as nvtxRangeStart ids are start/end ranges even when thread-scoped") {
  NvtxAssembler nvtx;
  nvtx.setStartEndQuery([](std::uint32_t id) { return id == 2; });
  std::vector<NvtxEvent> out;
  nvtx.onMarker(marker(MarkerPhase::kStart, 1, 10, true, "pushed"), out);
  nvtx.onMarker(marker(MarkerPhase::kStart, 2, 20, true, "started"), out);
  nvtx.onMarker(marker(MarkerPhase::kEnd, 2, 30, true), out);
  nvtx.onMarker(marker(MarkerPhase::kEnd, 1, 40, true), out);
  REQUIRE(out.size() == 2);
  CHECK(out[0].text == "started");
  CHECK(out[0].event_type == static_cast<int>(NvtxEventType::kStartEndRange));
  CHECK(out[1].text == "pushed");
  CHECK(out[1].event_type == static_cast<int>(NvtxEventType::kPushPopRange));
}
