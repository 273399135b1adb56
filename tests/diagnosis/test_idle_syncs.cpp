// Synchronizes that find nothing in flight (needed_syncs.h, blocking-sync-call): one that waits
// for no work still holds its thread for its own host time, which removing it gives back; and one
// right after an asynchronous DtoH copy into pageable memory, which that call already waited for,
// is what the program relies on to read the copy's result, so it is kept.
#include <catch2/catch.hpp>

#include "diagnosis/device_view.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/needed_syncs.h"
#include "findings_test_util.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::TraceBuilder;
using test::kUs;

// Four iterations, 150 µs apart, of: a 20 µs kernel on stream 13, 100 µs of host work, then a
// 15 µs synchronize of stream 13, long after the kernel ended (the last one, followed by no work,
// is no barrier of the host timeline).
TraceBuilder syncsAfterHostWork() {
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) {
    const double t = 150.0 * i;
    b.launch(13, t, t + 3, t + 5, t + 25);
    b.streamSynchronize(13, t + 110, t + 125);
  }
  return b;
}

// The same loop with a 1 MiB DtoH cudaMemcpyAsync into `host` memory after each kernel: into
// pageable memory the call returns only once the copy is done; the synchronize follows.
TraceBuilder syncsAfterDownload(MemKind host) {
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) {
    const double t = 150.0 * i;
    b.launch(13, t, t + 3, t + 5, t + 25);
    const bool pageable = host == MemKind::kPageable;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t + 4, pageable ? t + 46 : t + 6, t + 26, t + 45,
               CopyKind::kDtoH, host);
    b.streamSynchronize(13, t + 110, t + 125);
  }
  return b;
}

std::vector<diagnosis::SyncNeed> needsOf(const Trace& trace) {
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
  std::vector<diagnosis::SyncNeed> syncs;
  const std::vector<diagnosis::SyncNeed> needs = diagnosis::syncNeeds(view, host);
  for (const diagnosis::SyncNeed need : needs) {
    if (need != diagnosis::SyncNeed::kNotASync) syncs.push_back(need);
  }
  return syncs;
}

}  // namespace

TEST_CASE("blocking-sync-call: synchronizes that find nothing in flight cost their host time") {
  const Trace trace = syncsAfterHostWork().build();
  const auto needs = needsOf(trace);
  REQUIRE(needs.size() == 3);
  for (const diagnosis::SyncNeed need : needs) CHECK(need == diagnosis::SyncNeed::kRemovable);
  const auto findings = test::findingsOf(trace);
  const Finding* f = test::findingById(findings, "blocking-sync-call");
  REQUIRE(f != nullptr);
  CHECK(f->count == 3);
  // Nothing was in flight: information, not a warning.
  CHECK(f->severity == Severity::kInfo);
  // Each synchronize delays the next kernel's launch by its 15 µs. Span 470 µs -> 425 µs.
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(45 * kUs)).margin(2 * kUs));
}

TEST_CASE("blocking-sync-call: a synchronize after a pageable DtoH copy protects its read") {
  SECTION("pageable: the copy call already waited, the synchronize orders the host's read") {
    const Trace trace = syncsAfterDownload(MemKind::kPageable).build();
    const auto needs = needsOf(trace);
    REQUIRE(needs.size() == 3);
    for (const diagnosis::SyncNeed need : needs) CHECK(need == diagnosis::SyncNeed::kKept);
    CHECK(test::findingById(test::findingsOf(trace), "blocking-sync-call") == nullptr);
  }
  SECTION("pinned: the synchronize is the copy's own wait, not kept as a pageable one's") {
    const auto needs = needsOf(syncsAfterDownload(MemKind::kPinned).build());
    REQUIRE(needs.size() == 3);
    for (const diagnosis::SyncNeed need : needs) CHECK(need == diagnosis::SyncNeed::kDeferrable);
  }
}

}  // namespace cuoverlap
