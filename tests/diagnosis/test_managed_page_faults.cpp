// managed-page-faults on hand-built traces: a kernel that faults its managed memory in on demand,
// costed at its fault-free runs plus a prefetch at the link rate (or, without fault-free runs, at
// its duration less the faults' service time, never below the highest floor its shape's faulting
// runs set, which also rejects clean runs that did other work; or the duration its runs with one
// fault group show at no service, where their durations grow less than their service), and what
// must not fire (a prefetched run, faults on another device).
#include <optional>

#include <catch2/catch.hpp>

#include "diagnosis/pinned_rate.h"
#include "findings_test_util.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::TraceBuilder;
using test::kUs;

constexpr std::uint64_t kMigrated = 64ull << 20;

void faultGroup(TraceBuilder& b, double start_us, double end_us, std::uint32_t faults,
                schema::UmAccessType access = schema::UmAccessType::kRead, std::uint16_t device = 0) {
  UmPageFaultGroup f;
  f.start = TraceBuilder::ns(start_us);
  f.end = TraceBuilder::ns(end_us);
  f.faults = faults;
  f.pid = 4242;
  f.device_id = device;
  f.access = access;
  b.trace().unified_memory.gpu_faults.push_back(f);
}

void migration(TraceBuilder& b, double start_us, double end_us, std::uint64_t bytes,
               schema::UmMigrationCause cause = schema::UmMigrationCause::kCoherence) {
  UmMigration m;
  m.start = TraceBuilder::ns(start_us);
  m.end = TraceBuilder::ns(end_us);
  m.bytes = bytes;
  m.pid = 4242;
  m.direction = CopyKind::kUvmHtoD;
  m.cause = cause;
  b.trace().unified_memory.migrations.push_back(m);
}

// The host reading `page` back: a CPU fault at `fault_us`, and `turnaround_us` later the 2 µs DtoH
// migration of the 64 KiB there.
void hostRead(TraceBuilder& b, double fault_us, double turnaround_us, std::uint64_t page) {
  b.trace().unified_memory.cpu_faults.push_back({TraceBuilder::ns(fault_us), page + 8, 4242});
  UmMigration back;
  back.start = TraceBuilder::ns(fault_us + turnaround_us);
  back.end = back.start + 2 * kUs;
  back.bytes = 64 << 10;
  back.address = page;
  back.pid = 4242;
  back.direction = CopyKind::kUvmDtoH;
  back.cause = schema::UmMigrationCause::kCoherence;
  b.trace().unified_memory.migrations.push_back(back);
}

// A trace on a PCIe Gen5 x16 link. With `leading`, a 2 µs memset on another stream opens the
// window, so that the faulting kernels after it pay their prefetch inside the span (the window's
// first op pays none: its prefetch and launch come before the span).
TraceBuilder linked(bool leading = true) {
  TraceBuilder b;
  b.trace().devices[0].pcie_generation = 5;
  b.trace().devices[0].pcie_width = 16;
  if (leading) b.memset(14, 1, 3);
  return b;
}

// The time a prefetch of `bytes` takes at the PCIe Gen5 x16 pinned rate (about 52.3 GB/s).
Ns prefetchNs(std::uint64_t bytes) {
  const double rate = diagnosis::pcieRawBytesPerNs(5, 16) * diagnosis::kPinnedLinkEfficiency;
  return diagnosis::kPinnedCopyLatencyNs + static_cast<Ns>(static_cast<double>(bytes) / rate);
}

// A 1 ms faulting run (300 µs of faults, 64 KiB migrated) and a 100 µs run of the same shape;
// `leading`: after a memset, so that the faulting run is not the window's first op.
std::optional<Finding> sameShapeRuns(bool leading = true) {
  TraceBuilder b = linked(leading);
  b.launch(13, 0, 5, 10, 1'010);
  b.launch(13, 6, 8, 1'010, 1'110);
  faultGroup(b, 100, 400, 20);
  migration(b, 150, 390, 64 << 10);
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "managed-page-faults");
  return f != nullptr ? std::optional<Finding>(*f) : std::nullopt;
}

}  // namespace

TEST_CASE("managed-page-faults: a faulting kernel costs its time beyond fault-free runs + prefetch") {
  TraceBuilder b = linked();
  // The first run faults 64 MiB in (10 ms); the next two find the data resident (500 µs each).
  b.launch(13, 0, 5, 10, 10'010);
  b.launch(13, 6, 8, 10'010, 10'510);
  b.launch(13, 9, 11, 10'510, 11'010);
  for (int i = 0; i < 32; ++i) faultGroup(b, 20 + 300.0 * i, 300 + 300.0 * i, 16);
  for (int i = 0; i < 32; ++i) migration(b, 30 + 300.0 * i, 60 + 300.0 * i, kMigrated / 32);
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "managed-page-faults");
  REQUIRE(f != nullptr);
  CHECK(f->count == 1);
  // Span 11.0 ms -> the first run at 500 µs + its 64 MiB prefetch, which ends as each fault group
  // did, 240 µs after its last migration (the driver's remap): all of it lowers the ideal (the
  // kernels are the busiest engine).
  const Ns fixed = 500 * kUs + prefetchNs(kMigrated) + 240 * kUs;
  CHECK(f->time_ns == Approx(static_cast<double>(10'000 * kUs - fixed)).margin(1000));
  CHECK(f->ideal_reduction_ns == f->time_ns);
  REQUIRE(!f->evidence.empty());
  CHECK(f->evidence[0].detail.find("512 GPU page faults (32 groups)") != std::string::npos);
  CHECK(f->evidence[0].detail.find("64.0 MiB") != std::string::npos);
  CHECK(f->evidence[0].detail.find("its runs without faults") != std::string::npos);
  CHECK(f->summary.find("from the same kernels' runs without faults") != std::string::npos);
}

TEST_CASE("managed-page-faults: the window's first kernel's prefetch comes before the span") {
  // As the "same-shape" case below (1 ms run, 700 µs without its faults, 64 KiB in), but the
  // faulting kernel is the window's first op: the span begins with it, and its prefetch and launch
  // with the fix come before it, so prefetched it costs the span its 700 µs alone.
  const auto first = [](bool leading) {
    const std::optional<Finding> f = sameShapeRuns(leading);
    REQUIRE(f.has_value());
    return f->time_ns;
  };
  CHECK(first(false) == Approx(static_cast<double>(300 * kUs)).margin(1000));
  const Ns fixed = 700 * kUs + prefetchNs(64 << 10) + 10 * kUs;  // the group's remap
  CHECK(first(true) == Approx(static_cast<double>(1'000 * kUs - fixed)).margin(1000));
}

TEST_CASE("managed-page-faults: without fault-free runs, the run less the faults' service time") {
  TraceBuilder b = linked();
  b.launch(13, 0, 5, 10, 10'010);
  faultGroup(b, 100, 5'000, 300);
  faultGroup(b, 4'000, 9'600, 200);  // overlaps the first: the union is 9.5 ms
  migration(b, 200, 9'000, kMigrated);
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "managed-page-faults");
  REQUIRE(f != nullptr);
  const Ns fixed = 500 * kUs + prefetchNs(kMigrated);
  CHECK(f->time_ns == Approx(static_cast<double>(10'000 * kUs - fixed)).margin(1000));
  CHECK(f->summary.find("less the time their faults were serviced") != std::string::npos);
}

TEST_CASE("managed-page-faults: a same-shape run shorter than a faulting run less its faults did other work") {
  // The faulting run takes 1 ms, 300 µs of it servicing faults: without them it would still take
  // 700 µs, so the 100 µs run of the same name and launch shape ran other work.
  const std::optional<Finding> f = sameShapeRuns();
  REQUIRE(f.has_value());
  const Ns fixed = 700 * kUs + prefetchNs(64 << 10) + 10 * kUs;  // the group's remap
  CHECK(f->time_ns == Approx(static_cast<double>(1'000 * kUs - fixed)).margin(1000));
  CHECK(f->summary.find("less the time their faults were serviced") != std::string::npos);
}

TEST_CASE("managed-page-faults: with op buffers, a same-shape run over a buffer of another size did other work") {
  // A 1 ms faulting run, 900 µs of it servicing faults, and a 600 µs fault-free run of the same
  // name and launch shape. Without op buffers the clean run is the fault-free time. Where the trace
  // records the faulting run handed a 256 KiB managed buffer and the clean one a 4 MiB device
  // buffer, they ran other work (the lab's one kernel over other buffers: f9 g009183's 16-block
  // kernel ran 8.8 µs prefetched, its runs over a 3.4 MB buffer 54 µs): the run less its service.
  // Handed buffers of one size, the clean run stands.
  const auto cost = [](std::uint64_t faulting_bytes, std::uint64_t clean_bytes) {
    TraceBuilder b = linked();
    b.launch(13, 0, 5, 10, 1'010);
    b.launch(13, 6, 8, 1'010, 1'610);
    faultGroup(b, 60, 960, 20);
    migration(b, 100, 950, 256 << 10);
    if (faulting_bytes > 0) {
      const std::vector<GpuOp> ops = b.trace().ops;
      b.touches(ops[1], 0x7f0000000000ull, faulting_bytes);
      b.touches(ops[2], 0x7f1000000000ull, clean_bytes);
    }
    const auto findings = test::findingsOf(b.build());
    const Finding* f = test::findingById(findings, "managed-page-faults");
    REQUIRE(f != nullptr);
    return f->time_ns;
  };
  const Ns unrecorded = cost(0, 0);
  const Ns other_size = cost(256 << 10, 4 << 20);
  const Ns same_size = cost(256 << 10, 256 << 10);
  INFO("unrecorded " << unrecorded << " other size " << other_size << " same size " << same_size);
  CHECK(same_size == unrecorded);
  CHECK(other_size > unrecorded + 400 * kUs);
}

TEST_CASE("managed-page-faults: a shape's faulting runs share the highest floor on its fault-free time") {
  TraceBuilder b = linked();
  // Run A: 500 µs, 100 µs of faults -> at least 400 µs without them. Run B: 900 µs with 850 µs of
  // fault groups that overlapped its other warps' work: it too takes 400 µs, not 50 µs. (B's two
  // groups held different blocks at different times: no line of duration on service is drawn.)
  b.launch(13, 0, 5, 10, 510);
  b.launch(13, 6, 8, 510, 1'410);
  faultGroup(b, 20, 120, 20);
  migration(b, 30, 110, 64 << 10);
  faultGroup(b, 520, 900, 200);
  faultGroup(b, 900, 1'370, 200);
  migration(b, 530, 1'360, 64 << 10);
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "managed-page-faults");
  REQUIRE(f != nullptr);
  CHECK(f->count == 2);
  const Ns fixed = 2 * (400 * kUs + prefetchNs(64 << 10) + 10 * kUs);
  CHECK(f->time_ns == Approx(static_cast<double>(1'400 * kUs - fixed)).margin(1000));
}

namespace {

// Three runs of one kernel shape, back to back from 10 µs, lasting `duration_us`; run i's one fault
// group starts 10 µs in and is served for 100, 200 and 300 µs, its 64 KiB migration ending 10 µs
// before the group does (the driver's remap).
TraceBuilder runsServedFor(const double (&duration_us)[3], std::uint32_t grid_blocks = 64) {
  TraceBuilder b = linked();
  double start = 10;
  for (int i = 0; i < 3; ++i) {
    const double stall = 100.0 * (i + 1);
    b.launch(13, 3 * i, 3 * i + 2, start, start + duration_us[i]).grid_blocks = grid_blocks;
    faultGroup(b, start + 10, start + 10 + stall, 16);
    migration(b, start + stall - 10, start + stall, 64 << 10);
    start += duration_us[i];
  }
  return b;
}

}  // namespace

TEST_CASE("managed-page-faults: runs that last as long however long their faults were served hid them") {
  // A multi-wave grid whose few faulting blocks resume while the others still work: the runs take
  // 1 ms whether the driver served their faults for 100 or 300 µs, so prefetched they take 1 ms
  // too (the run less its faults, 700-900 µs, would claim 100-300 µs each).
  const auto findings = test::findingsOf(runsServedFor({1'000, 1'000, 1'000}).build());
  CHECK(test::findingById(findings, "managed-page-faults") == nullptr);
}

TEST_CASE("managed-page-faults: a run's fault-free duration is its shape's duration at no service") {
  // The runs grow half as fast as their faults' service (1000, 1050, 1100 µs for 100, 200, 300
  // µs): the line through them gives 950 µs without any, above the highest run less its faults
  // (900 µs), which each run takes prefetched, plus the prefetch and the driver's 10 µs remap.
  const auto findings = test::findingsOf(runsServedFor({1'000, 1'050, 1'100}).build());
  const Finding* f = test::findingById(findings, "managed-page-faults");
  REQUIRE(f != nullptr);
  CHECK(f->count == 3);
  const Ns fixed = 950 * kUs + prefetchNs(64 << 10) + 10 * kUs;
  CHECK(f->time_ns == Approx(static_cast<double>(3'150 * kUs - 3 * fixed)).margin(1000));

  // Growing one for one (700 + service), the faulted blocks end each run: each takes its run
  // less its faults prefetched (the shape's highest such floor, 700 µs).
  const auto critical = test::findingsOf(runsServedFor({800, 900, 1'000}).build());
  const Finding* g = test::findingById(critical, "managed-page-faults");
  REQUIRE(g != nullptr);
  const Ns fixed_critical = 700 * kUs + prefetchNs(64 << 10) + 10 * kUs;
  CHECK(g->time_ns == Approx(static_cast<double>(2'700 * kUs - 3 * fixed_critical)).margin(1000));
}

TEST_CASE("managed-page-faults: a sub-wave grid whose runs grow with their service ignores other work") {
  // A 64-block grid (below a wave) runs all its blocks from its start; its faulting runs grow one
  // for one with their service (700 + service), so its faulted blocks ended each run and 700 µs is
  // its fault-free duration. A fault-free run of the same shape that took 750 µs ran other work
  // (one kernel, other arguments): each faulting run still takes 700 µs prefetched.
  TraceBuilder b = runsServedFor({800, 900, 1'000});
  b.launch(13, 9, 11, 2'710, 3'460).grid_blocks = 64;
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "managed-page-faults");
  REQUIRE(f != nullptr);
  const Ns fixed = 700 * kUs + prefetchNs(64 << 10) + 10 * kUs;
  CHECK(f->time_ns == Approx(static_cast<double>(2'700 * kUs - 3 * fixed)).margin(1000));
}

TEST_CASE("managed-page-faults: a full-wave grid whose faulted blocks end every run lies between bounds") {
  // The runs grow one for one with their service (700 + service), as above, but the grid fills a
  // wave by the device's limits (1056 blocks of 256 threads on 132 SMs, 8 each): how many rounds
  // the rest of the grid ran is not in the trace, only that it took at least the faulted blocks'
  // 700 µs and at most the shortest run's 800. Each run takes the geometric mean, 748 µs.
  const auto findings = test::findingsOf(runsServedFor({800, 900, 1'000}, 1056).build());
  const Finding* f = test::findingById(findings, "managed-page-faults");
  REQUIRE(f != nullptr);
  CHECK(f->summary.find("geometric mean") != std::string::npos);
  const Ns fixed = 748'331 + prefetchNs(64 << 10) + 10 * kUs;
  CHECK(f->time_ns == Approx(static_cast<double>(2'700 * kUs - 3 * fixed)).margin(1000));
}

TEST_CASE("managed-page-faults: a run whose faults ended early shows its shape's fault-free duration") {
  // Served for 200 and 300 µs, the runs end 800 µs after their service (1000 and 1100 µs): their
  // faulted blocks end them. Served for 100 µs, the run ends at 1000 µs, not 900: the rest of the
  // grid ended it, and prefetched every run takes those 1000 µs (the line through the three says
  // 933 µs, 67 µs less for each).
  const auto findings = test::findingsOf(runsServedFor({1'000, 1'000, 1'100}).build());
  const Finding* f = test::findingById(findings, "managed-page-faults");
  REQUIRE(f != nullptr);
  const Ns fixed = 1'000 * kUs + prefetchNs(64 << 10) + 10 * kUs;
  CHECK(f->time_ns == Approx(static_cast<double>(1'100 * kUs - fixed)).margin(1000));

  // A run with a longer time after its service than a run served less (850 µs at 200 µs, 800 at
  // 100) is no such run: the durations grow with service throughout, and each run takes its
  // shape's highest duration less service (850 µs) prefetched.
  const auto growing = test::findingsOf(runsServedFor({900, 1'050, 1'100}).build());
  const Finding* g = test::findingById(growing, "managed-page-faults");
  REQUIRE(g != nullptr);
  const Ns fixed_growing = 850 * kUs + prefetchNs(64 << 10) + 10 * kUs;
  CHECK(g->time_ns ==
        Approx(static_cast<double>(3'050 * kUs - 3 * fixed_growing)).margin(1000));
}

TEST_CASE("managed-page-faults: a prefetch also costs the driver's turnaround its CPU faults show") {
  TraceBuilder b = linked();
  // As the "same-shape" case above (1 ms run, 700 µs without its faults, 64 KiB in), then the host
  // reads the buffer back: three CPU page faults, each followed by the DtoH migration of its page
  // 30, 34 and 60 µs later (another page's migration in between does not answer a fault). The
  // prefetch asks the driver for the same move the other way, the window's first move of these
  // pages: it takes as long as the window's first CPU fault waited, 30 µs (not the median, 34),
  // beside its copy.
  constexpr std::uint64_t kPage = 0x7f0000000000ull;
  b.launch(13, 0, 5, 10, 1'010);
  b.launch(13, 6, 8, 1'010, 1'110);
  faultGroup(b, 100, 400, 20);
  migration(b, 150, 390, 64 << 10);
  const double read_us[] = {1'200, 1'400, 1'600};
  const double turnaround_us[] = {30, 34, 60};
  for (int i = 0; i < 3; ++i) {
    const std::uint64_t page = kPage + (static_cast<std::uint64_t>(i) << 16);
    b.trace().unified_memory.cpu_faults.push_back({TraceBuilder::ns(read_us[i]), page + 8, 4242});
    UmMigration other;
    other.start = TraceBuilder::ns(read_us[i] + 5);
    other.end = TraceBuilder::ns(read_us[i] + 7);
    other.bytes = 4096;
    other.address = kPage + (9ull << 16);
    other.pid = 4242;
    other.direction = CopyKind::kUvmDtoH;
    other.cause = schema::UmMigrationCause::kCoherence;
    b.trace().unified_memory.migrations.push_back(other);
    UmMigration back = other;
    back.start = TraceBuilder::ns(read_us[i] + turnaround_us[i]);
    back.end = back.start + 2 * kUs;
    back.bytes = 64 << 10;
    back.address = page;
    b.trace().unified_memory.migrations.push_back(back);
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "managed-page-faults");
  REQUIRE(f != nullptr);
  const Ns fixed = 700 * kUs + 30 * kUs + prefetchNs(64 << 10) + 10 * kUs;
  CHECK(f->time_ns == Approx(static_cast<double>(1'000 * kUs - fixed)).margin(1000));
}

namespace {

constexpr std::uint64_t kReadPage = 0x7f0000000000ull;

// A faulting kernel (1 ms, 700 µs without its faults: one group of 20 faults served 100-400 µs)
// that moved `moved_bytes` at kReadPage, and the synchronize after it (returning at 1012 µs).
TraceBuilder faultedThenSynchronized(std::uint64_t moved_bytes) {
  TraceBuilder b = linked();
  b.launch(13, 0, 5, 10, 1'010);
  faultGroup(b, 100, 400, 20);
  migration(b, 150, 390, moved_bytes);
  b.trace().unified_memory.migrations.back().address = kReadPage;
  b.streamSynchronize(13, 6, 1'012);
  return b;
}

// The trace's managed-page-faults finding (required).
Finding managedFinding(TraceBuilder& b) {
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "managed-page-faults");
  REQUIRE(f != nullptr);
  return *f;
}

// A faulting kernel (1 ms, 700 µs without its faults, 64 KiB moved at 0x7f0000000000), a
// synchronize, the host's read of the buffer (a CPU fault at 1020 µs whose DtoH migration starts
// `first_turnaround_us` later), a read of memory no kernel moved (a CPU fault at 1220 µs, 20 µs
// turnaround) and, with `launch_after`, a kernel of another shape launched at 1400 µs.
Finding readAfterFirstMove(double first_turnaround_us, bool launch_after) {
  TraceBuilder b = faultedThenSynchronized(64 << 10);
  const double read_us[] = {1'020, 1'220};
  const double turnaround_us[] = {first_turnaround_us, 20};
  const std::uint64_t page[] = {kReadPage, kReadPage + (1ull << 30)};
  for (int i = 0; i < 2; ++i) hostRead(b, read_us[i], turnaround_us[i], page[i]);
  if (launch_after) b.launch(13, 1'400, 1'405, 1'410, 1'510).grid_blocks = 32;
  return managedFinding(b);
}

}  // namespace

TEST_CASE("managed-page-faults: the first move of a range waits longer, with or without the fix") {
  // The window's first CPU fault waited 60 µs where the later one waited 20: the driver's first
  // move of a range is slow to start. With the fix the prefetch makes that move (its kernel waits
  // 60 µs, not 20, beside the copy) and the host's read waits 20 µs like the later faults.
  const Finding cold_trailing = readAfterFirstMove(60, false);
  const Finding warm_trailing = readAfterFirstMove(20, false);
  // The read after the last kernel: only the prefetch's slower start shows in the span.
  CHECK(warm_trailing.time_ns - cold_trailing.time_ns ==
        Approx(static_cast<double>(40 * kUs)).margin(1000));
  CHECK(cold_trailing.summary.find("60.0 µs for its first move of a range") != std::string::npos);
  // A read the next launch waits for: the host's 40 µs back cancel the prefetch's 40 µs.
  const Finding cold = readAfterFirstMove(60, true);
  const Finding warm = readAfterFirstMove(20, true);
  CHECK(cold.time_ns == Approx(static_cast<double>(warm.time_ns)).margin(1000));
}

namespace {

// As readAfterFirstMove (256 KiB moved) with a kernel launched after the reads (at 1700 µs): the
// host reads three of the moved pages back (CPU faults at 1020, 1060 and 1100 µs; the last waits `last_turnaround_us`, the
// others 20 µs), and with `thrashed` the driver recorded the last page's region thrashing at 1090 µs.
Finding readOfThrashedPage(double last_turnaround_us, bool thrashed) {
  TraceBuilder b = faultedThenSynchronized(256 << 10);
  const double read_us[] = {1'020, 1'060, 1'100};
  const double turnaround_us[] = {20, 20, last_turnaround_us};
  for (int i = 0; i < 3; ++i) {
    hostRead(b, read_us[i], turnaround_us[i], kReadPage + (static_cast<std::uint64_t>(i) << 16));
  }
  if (thrashed) {
    UmThrashing t;
    t.time = TraceBuilder::ns(1'090);
    t.address = kReadPage + (2ull << 16);
    t.bytes = 64ull << 10;
    t.pid = 4242;
    b.trace().unified_memory.thrashing.push_back(t);
  }
  b.launch(13, 1'700, 1'705, 1'710, 1'810).grid_blocks = 32;
  return managedFinding(b);
}

}  // namespace

TEST_CASE("managed-page-faults: a CPU fault on a thrashing page waits for the driver's throttle") {
  // The last read waited 400 µs, 20 typical turnarounds, on a page the driver had seen thrash:
  // the driver held the page (its throttle), which the prefetched buffer does not meet, so the fix
  // gives back its 380 µs beyond the typical turnaround (the next launch waits for the host).
  const Finding throttled = readOfThrashedPage(400, true);
  const Finding quick = readOfThrashedPage(20, true);
  CHECK(throttled.time_ns - quick.time_ns == Approx(static_cast<double>(380 * kUs)).margin(2000));
  // Without a thrashing record a long wait is not the throttle's, and no wait of at most 8 typical
  // turnarounds is (the fix would not change it).
  CHECK(readOfThrashedPage(400, false).time_ns == Approx(static_cast<double>(quick.time_ns)).margin(2000));
  CHECK(readOfThrashedPage(150, true).time_ns == Approx(static_cast<double>(quick.time_ns)).margin(2000));
}

TEST_CASE("managed-page-faults: a prefetch ends with the driver's remap its fault groups show") {
  TraceBuilder b = linked();
  // As the "same-shape" case above (1 ms run, 700 µs without its faults, 64 KiB in), but the fault
  // group goes on 120 µs after its migration ended: the driver mapping the pages on the device.
  // A prefetch does the same before its call returns (cudaMemPrefetchAsync holds its thread until
  // then), so the kernel behind it starts that much later too.
  b.launch(13, 0, 5, 10, 1'010);
  b.launch(13, 6, 8, 1'010, 1'110);
  faultGroup(b, 100, 400, 20);
  migration(b, 270, 280, 64 << 10);
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "managed-page-faults");
  REQUIRE(f != nullptr);
  const Ns fixed = 700 * kUs + prefetchNs(64 << 10) + 120 * kUs;
  CHECK(f->time_ns == Approx(static_cast<double>(1'000 * kUs - fixed)).margin(1000));
}

TEST_CASE("managed-page-faults: the window's first prefetch takes the window's first remap") {
  TraceBuilder b = linked();
  // Three runs of one kernel, 1 ms each, 700 µs without their faults, 64 KiB in each. The window's
  // first fault group maps its pages 40 µs after its migration, the later ones 10 µs (the
  // median): the driver's first mapping of a range is slower, and with the fix the first prefetch
  // makes it.
  const double remap_us[] = {40, 10, 10};
  for (int i = 0; i < 3; ++i) {
    const double at = 1'000.0 * i;
    b.launch(13, 3 * i, 3 * i + 2, 10 + at, 1'010 + at);
    faultGroup(b, 100 + at, 400 + at, 20);
    migration(b, 150 + at, 400 + at - remap_us[i], 64 << 10);
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "managed-page-faults");
  REQUIRE(f != nullptr);
  const Ns fixed = 3 * (700 * kUs + prefetchNs(64 << 10)) + (40 + 10 + 10) * kUs;
  CHECK(f->time_ns == Approx(static_cast<double>(3'000 * kUs - fixed)).margin(1000));
}

namespace {

// A faulting kernel (1 ms, 700 µs without its faults) that moved 256 KiB at kBuffer and 64 KiB at
// kBuffer + 512 KiB to the device, a synchronize, the host reading the buffer back (a CPU fault at
// 1020 µs on kBuffer and one at 1090 µs on `second`, each followed 20 µs later by the 2 µs DtoH
// migration of its 64 KiB), and a clean kernel of another shape launched at 1150 µs.
constexpr std::uint64_t kBuffer = 0x7f0000000000ull;

Finding hostReadAfterFaults(std::uint64_t second) {
  TraceBuilder b = linked();
  b.launch(13, 0, 5, 10, 1'010);
  faultGroup(b, 100, 400, 20);
  migration(b, 150, 300, 256 << 10);
  b.trace().unified_memory.migrations.back().address = kBuffer;
  migration(b, 300, 390, 64 << 10);
  b.trace().unified_memory.migrations.back().address = kBuffer + (512 << 10);
  b.streamSynchronize(13, 6, 1'012);
  const double read_us[] = {1'020, 1'090};
  const std::uint64_t page[] = {kBuffer, second};
  for (int i = 0; i < 2; ++i) hostRead(b, read_us[i], 20, page[i]);
  b.launch(13, 1'150, 1'155, 1'160, 1'260).grid_blocks = 32;
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "managed-page-faults");
  REQUIRE(f != nullptr);
  return *f;
}

}  // namespace

TEST_CASE("managed-page-faults: the host's reads fault once per prefetched range") {
  // After a prefetch, the host's first fault brings the range around its page back whole: the
  // second fault, 128 KiB from the first, is gone, and the thread launches the next kernel as
  // much sooner as that fault took (from the first fault's migration's end to its own: 70 µs).
  const Finding near = hostReadAfterFaults(kBuffer + (128 << 10));
  // 512 KiB away: another range, faulted back on its own with the fix too.
  const Finding far = hostReadAfterFaults(kBuffer + (512 << 10));
  // On a page the kernel never moved to the device: not memory the prefetch moves.
  const Finding elsewhere = hostReadAfterFaults(kBuffer + (2048 << 10));
  CHECK(near.time_ns - far.time_ns == Approx(static_cast<double>(70 * kUs)).margin(1000));
  CHECK(far.time_ns == elsewhere.time_ns);
  CHECK(near.summary.find("would take 1 CPU page faults fewer") != std::string::npos);
  CHECK(far.summary.find("CPU page faults fewer") == std::string::npos);
  // The kernel's own part is as without the host's reads: 1 ms -> 700 µs + its prefetch.
  const Ns fixed = 700 * kUs + 20 * kUs + prefetchNs(320 << 10) + 10 * kUs;
  CHECK(far.time_ns == Approx(static_cast<double>(1'000 * kUs - fixed)).margin(2000));
}

TEST_CASE("managed-page-faults: prefetched runs and other devices' faults do not fire") {
  TraceBuilder prefetched = linked();
  // cudaMemPrefetchAsync before the kernel: a user migration and prefetch-type fault records.
  migration(prefetched, 2, 1'300, kMigrated, schema::UmMigrationCause::kUser);
  faultGroup(prefetched, 1'400, 1'420, 4, schema::UmAccessType::kPrefetch);
  prefetched.launch(13, 0, 5, 1'400, 1'900);
  CHECK(test::findingById(test::findingsOf(prefetched.build()), "managed-page-faults") == nullptr);

  TraceBuilder elsewhere = linked();
  elsewhere.launch(13, 0, 5, 10, 10'010);
  faultGroup(elsewhere, 100, 9'000, 300, schema::UmAccessType::kRead, 1);
  CHECK(test::findingById(test::findingsOf(elsewhere.build()), "managed-page-faults") == nullptr);

  TraceBuilder clean = linked();
  clean.launch(13, 0, 5, 10, 510);
  CHECK(test::findingById(test::findingsOf(clean.build()), "managed-page-faults") == nullptr);
}

}  // namespace cuoverlap
