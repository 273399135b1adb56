// waitingThreads (diagnosis/waiting_threads.h): the host threads that each issue GPU work and wait
// for it side by side, where the reports say the savings are rough.
#include <catch2/catch.hpp>

#include "diagnosis/device_view.h"
#include "diagnosis/waiting_threads.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using diagnosis::DeviceView;
using test::TraceBuilder;

// A kernel on `stream` launched by thread `tid` at `call_us`, then that thread's stream synchronize
// (where `waits`) until the kernel's end.
void step(TraceBuilder& b, std::uint32_t tid, std::uint32_t stream, double call_us, double kernel_us, bool waits) {
  b.launch(stream, call_us, call_us + 2, call_us + 5, call_us + 5 + kernel_us);
  b.trace().runtime_calls.back().tid = tid;
  if (!waits) return;
  b.call("cudaStreamSynchronize_v3020", call_us + 3, call_us + 6 + kernel_us);
  b.trace().runtime_calls.back().tid = tid;
}

std::uint32_t waitingThreadsOf(TraceBuilder& b) {
  const Trace trace = b.build();
  return diagnosis::waitingThreads(DeviceView(trace, Scope{}, 0));
}

TEST_CASE("waiting threads: two threads each issuing and waiting side by side are counted") {
  TraceBuilder b;
  for (int k = 0; k < 3; ++k) {
    step(b, 1, 13, 100.0 * k, 40, true);
    step(b, 2, 14, 100.0 * k + 10, 40, true);
  }
  CHECK(waitingThreadsOf(b) == 2);
}

TEST_CASE("waiting threads: one thread, or a second that never waits (a handed-over queue), is none") {
  TraceBuilder one;
  for (int k = 0; k < 3; ++k) step(one, 1, 13, 100.0 * k, 40, true);
  CHECK(waitingThreadsOf(one) == 0);
  // PyTorch's autograd thread launches the backward pass and never synchronizes: the main thread
  // drives it, and the two hand their work over in order.
  TraceBuilder handed_over;
  for (int k = 0; k < 3; ++k) {
    step(handed_over, 1, 13, 100.0 * k, 40, true);
    step(handed_over, 2, 13, 100.0 * k + 10, 40, false);
  }
  CHECK(waitingThreadsOf(handed_over) == 0);
}

TEST_CASE("waiting threads: threads that wait one after the other are none; a third beside two counts") {
  TraceBuilder sequential;
  for (int k = 0; k < 3; ++k) step(sequential, 1, 13, 100.0 * k, 40, true);
  for (int k = 0; k < 3; ++k) step(sequential, 2, 14, 1000.0 + 100.0 * k, 40, true);
  CHECK(waitingThreadsOf(sequential) == 0);
  TraceBuilder three;
  for (int k = 0; k < 3; ++k) step(three, 1, 13, 100.0 * k, 40, true);
  for (int k = 0; k < 3; ++k) step(three, 2, 14, 1000.0 + 100.0 * k, 40, true);
  for (int k = 0; k < 3; ++k) step(three, 3, 15, 1050.0 + 100.0 * k, 40, true);
  CHECK(waitingThreadsOf(three) == 2);  // threads 2 and 3; thread 1 ran before them
}

}  // namespace
}  // namespace cuoverlap
