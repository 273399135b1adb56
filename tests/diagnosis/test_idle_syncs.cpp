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
// pageable memory the call returns only once the copy is done; the synchronize follows. With
// `legacy_memset`, a synchronous 5 µs cudaMemset on the legacy stream follows each synchronize.
TraceBuilder syncsAfterDownload(MemKind host, bool legacy_memset = false) {
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) {
    const double t = 150.0 * i;
    b.launch(13, t, t + 3, t + 5, t + 25);
    const bool pageable = host == MemKind::kPageable;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t + 4, pageable ? t + 46 : t + 6, t + 26, t + 45,
               CopyKind::kDtoH, host);
    b.streamSynchronize(13, t + 110, t + 125);
    if (legacy_memset) b.memset(test::kNullStream, t + 130, t + 135, b.call("cudaMemset_v3020", t + 127, t + 137));
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
    // Not removable; it brings the copy's result back, so it is deferrable (early-result-wait's
    // double buffer waits for the previous step's copy instead), with that copy as its result.
    const Trace trace = syncsAfterDownload(MemKind::kPageable).build();
    const auto needs = needsOf(trace);
    REQUIRE(needs.size() == 3);
    for (const diagnosis::SyncNeed need : needs) CHECK(need == diagnosis::SyncNeed::kDeferrable);
    CHECK(test::findingById(test::findingsOf(trace), "blocking-sync-call") == nullptr);
    const diagnosis::DeviceView view(trace, Scope{}, 0);
    const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
    std::vector<std::int64_t> read_copies;
    const std::vector<diagnosis::SyncNeed> all = diagnosis::syncNeeds(view, host, &read_copies);
    for (std::size_t b = 0; b < all.size(); ++b) {
      if (all[b] != diagnosis::SyncNeed::kDeferrable) continue;
      REQUIRE(read_copies[b] >= 0);
      const GpuOp& copy = view.op(view.ops()[static_cast<std::size_t>(read_copies[b])]);
      CHECK(copy.kind == OpKind::kMemcpy);
      CHECK(copy.dst_kind == MemKind::kPageable);
    }
  }
  SECTION("pageable, then a synchronous call on the legacy stream: kept (its barrier orders the next work)") {
    const Trace trace = syncsAfterDownload(MemKind::kPageable, /*legacy_memset=*/true).build();
    const auto needs = needsOf(trace);
    REQUIRE(needs.size() >= 3);
    std::size_t kept = 0;
    for (const diagnosis::SyncNeed need : needs) {
      CHECK(need != diagnosis::SyncNeed::kDeferrable);
      CHECK(need != diagnosis::SyncNeed::kRemovable);
      kept += need == diagnosis::SyncNeed::kKept ? 1 : 0;
    }
    CHECK(kept >= 3);
  }
  SECTION("pinned: the synchronize is the copy's own wait, not kept as a pageable one's") {
    const auto needs = needsOf(syncsAfterDownload(MemKind::kPinned).build());
    REQUIRE(needs.size() == 3);
    for (const diagnosis::SyncNeed need : needs) CHECK(need == diagnosis::SyncNeed::kDeferrable);
  }
}

}  // namespace cuoverlap
