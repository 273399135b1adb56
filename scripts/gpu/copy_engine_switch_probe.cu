// How the host-to-device copy engine shares itself between streams: whether a copy issued to one
// stream waits for another stream's long queue of copies, or the engine switches to it.
//
//   copy_engine_switch_probe [REPS [SIZE ...]]   (run under `cuoverlap record`; the trace answers)
//
// Per scenario, REPS times (default 5) after a warm-up, the device synchronized between them:
// stream A (non-blocking) gets QUEUE pinned host-to-device copies of SIZE bytes, issued in a tight
// loop; stream B (non-blocking) gets 4 such copies, issued once A's 32nd call has returned, by a
// second host thread ("threads") or by the same thread after A's loop ("one thread": B's calls
// come after all of A's). Sizes in bytes (default 4 KiB, 16 KiB, 64 KiB and 256 KiB); QUEUE 200,
// and 204 copies a rep in the trace, in order. The trace's HtoD
// copies tell, per rep, how many of A's copies ran after B's first call returned and before B's
// first copy: the queue it waited behind (docs/findings.md, "Forty-ninth session", the replay's
// sticky copy engine). Exit 0; 1 on a CUDA error.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

bool check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "copy_engine_switch_probe: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

constexpr int kQueue = 200;
constexpr int kOther = 4;
constexpr int kAfter = 32;

// One rep: A's queue, B's copies from another thread once A's kAfter-th call returned, or from
// this thread after A's loop.
bool rep(cudaStream_t a, cudaStream_t b, char* host_a, char* host_b, char* device, size_t size, bool threads) {
  std::atomic<int> issued{0};
  bool ok = true;
  std::thread other;
  if (threads) {
    other = std::thread([&] {
      while (issued.load() < kAfter) {
      }
      for (int k = 0; k < kOther; ++k) {
        ok = check(cudaMemcpyAsync(device + (kQueue + k) * size, host_b + k * size, size, cudaMemcpyHostToDevice, b),
                   "B copy") && ok;
      }
    });
  }
  for (int k = 0; k < kQueue; ++k) {
    ok = check(cudaMemcpyAsync(device + k * size, host_a + k * size, size, cudaMemcpyHostToDevice, a), "A copy") && ok;
    issued.store(k + 1);
  }
  if (threads) {
    other.join();
  } else {
    for (int k = 0; k < kOther; ++k) {
      ok = check(cudaMemcpyAsync(device + (kQueue + k) * size, host_b + k * size, size, cudaMemcpyHostToDevice, b),
                 "B copy") && ok;
    }
  }
  return check(cudaDeviceSynchronize(), "synchronize") && ok;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  std::vector<size_t> sizes;
  for (int k = 2; k < argc; ++k) sizes.push_back(static_cast<size_t>(std::atoll(argv[k])));
  if (sizes.empty()) sizes = {4096, 16384, 65536, 262144};
  if (reps < 1 || std::find(sizes.begin(), sizes.end(), size_t{0}) != sizes.end()) {
    std::fprintf(stderr, "usage: copy_engine_switch_probe [REPS [SIZE ...]]\n");
    return 1;
  }
  const size_t largest = *std::max_element(sizes.begin(), sizes.end());
  cudaStream_t a, b;
  char *host_a, *host_b, *device;
  if (!check(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), "stream A") ||
      !check(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), "stream B") ||
      !check(cudaMallocHost(&host_a, kQueue * largest), "host A") ||
      !check(cudaMallocHost(&host_b, kOther * largest), "host B") ||
      !check(cudaMalloc(&device, (kQueue + kOther) * largest), "device")) {
    return 1;
  }
  bool ok = rep(a, b, host_a, host_b, device, sizes[0], true);  // warm-up
  for (const bool threads : {true, false}) {
    for (const size_t size : sizes) {
      std::printf("scenario %s size %zu: %d reps\n", threads ? "threads" : "one-thread", size, reps);
      for (int r = 0; r < reps; ++r) ok = rep(a, b, host_a, host_b, device, size, threads) && ok;
    }
  }
  return ok ? 0 : 1;
}
