// How the driver's device allocator serves a loop's cudaMalloc/cudaFree pair beside buffers
// allocated at setup: whether the pair maps and unmaps memory of its own each time, or is carved
// out of memory a live allocation keeps mapped. The lab's single-stream split allocates a device
// buffer per lane at setup, and in three programs (c1's g000310 and g000301, study5's g013303)
// that made the loop's cudaMalloc 7-20 times faster (docs/findings.md, "Fifty-ninth session").
// Prints, per case, the median and minimum time of 9 such pairs' calls.
//   nvcc -O2 -o /tmp/ap scripts/gpu/device_alloc_probe.cu && /tmp/ap
// Seen on nvidia-h200 (NVIDIA H200, driver 580.159.04, CUDA 13.0), 2026-11-30, two runs alike:
// the allocator carves allocations under 2 MiB out of 2 MiB chunks it keeps mapped while any
// allocation in them lives; a pair that fits a live chunk's room takes about 2 µs a call, one that
// does not maps a chunk (cudaMalloc 47-51 µs) and unmaps it (cudaFree 38-43 µs); an allocation of
// 2 MiB or more has a mapping of its own, which leaves no room for others.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <string>
using Clock = std::chrono::steady_clock;
static double us(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }
static void probe(const char* name, std::vector<size_t> setup, size_t loop, int reps = 9) {
  std::vector<void*> keep;
  for (size_t s : setup) { void* p; cudaMalloc(&p, s); keep.push_back(p); }
  cudaDeviceSynchronize();
  std::vector<double> m, f;
  for (int i = 0; i < reps; ++i) {
    void* t; auto a = Clock::now(); cudaMalloc(&t, loop); auto b = Clock::now();
    cudaFree(t); auto c = Clock::now();
    m.push_back(us(a, b)); f.push_back(us(b, c));
  }
  std::sort(m.begin(), m.end()); std::sort(f.begin(), f.end());
  size_t total = 0; for (size_t s : setup) total += s;
  printf("%-34s setup %8.0f KiB (%zu bufs) loop %7.0f KiB  malloc med %7.1f min %7.1f  free med %7.1f min %7.1f\n", name,
         total / 1024.0, setup.size(), loop / 1024.0, m[reps / 2], m[0], f[reps / 2], f[0]);
  for (void* p : keep) cudaFree(p);
  cudaDeviceSynchronize();
}
int main() {
  cudaFree(0);
  const size_t K = 1024;
  // g000310: baseline setup d0 213K, d1 1.15M, d2 659K; loop 1.15M; the split adds two 213K lane buffers.
  probe("g000310 baseline", {212992, 1150976, 659456}, 1150976);
  probe("g000310 split", {212992, 1150976, 659456, 212992, 212992}, 1150976);
  // g013303: setup d0 573K d1 139K d2 123K d3 713K; loop 573K.
  probe("g013303 baseline", {573440, 139264, 122880, 712704}, 573440);
  probe("g013303 +2x123K", {573440, 139264, 122880, 712704, 122880, 122880}, 573440);
  probe("g013303 +2x713K", {573440, 139264, 122880, 712704, 712704, 712704}, 573440);
  // Sweep: one setup buffer of S, loop L.
  for (size_t L : {64 * K, 256 * K, 1024 * K, 1536 * K, 3072 * K}) {
    for (size_t S : {size_t(0), 64 * K, 512 * K, 1024 * K, 1536 * K, 1984 * K, 2048 * K, 2560 * K, 4096 * K}) {
      std::vector<size_t> setup; if (S) setup.push_back(S);
      probe(("sweep S=" + std::to_string(S / K) + "K").c_str(), setup, L);
    }
  }
  // Two setup buffers whose sum passes 2 MiB.
  for (size_t L : {256 * K, 1024 * K}) {
    probe("pair 1536K+512K", {1536 * K, 512 * K}, L);
    probe("pair 1536K+768K", {1536 * K, 768 * K}, L);
    probe("pair 1900K+200K", {1900 * K, 200 * K}, L);
  }
  return 0;
}
