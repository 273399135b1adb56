// Host threads' copy calls contending in the driver: how long one thread's single asynchronous
// copy call takes while other threads issue copy calls in tight loops.
//
//   legacy_lock_probe [ROUNDS]
//
// Three host threads, started together through a barrier, all copies pinned (4 KiB host buffers
// of their own, cudaMemcpyAsync host to device):
//   A: 128 copies, one after another, to STREAM_A;
//   B: 128 copies to STREAM_B;
//   C: waits 20 µs, then one copy to STREAM_C, timed.
// Scenarios (the streams of A, B and C; "-" leaves the thread out; legacy = stream 0, blocking =
// cudaStreamCreate, nonblocking = cudaStreamCreateWithFlags(cudaStreamNonBlocking)) run ROUNDS
// times each (default 20) after a warm-up; per scenario the table gives the medians over the
// rounds of: C's call, A's and B's median call, and A's and B's loop. The lab's g000360 (docs/
// findings.md, "Forty-seventh session") showed a third thread's legacy copy call waiting 808 µs
// while two others issued copies; this asks when that happens. Exit 0; 1 on a CUDA error.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

enum class Kind { kNone, kLegacy, kBlocking, kNonBlocking };

const char* name(Kind k) {
  switch (k) {
    case Kind::kNone: return "-";
    case Kind::kLegacy: return "legacy";
    case Kind::kBlocking: return "blocking";
    case Kind::kNonBlocking: return "nonblocking";
  }
  return "?";
}

bool check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::fprintf(stderr, "legacy_lock_probe: %s: %s\n", what, cudaGetErrorString(status));
  return false;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

struct Scenario {
  Kind a, b, c;
};

struct Round {
  double c_call = 0, a_call = 0, b_call = 0, a_loop = 0, b_loop = 0;
};

constexpr int kCopies = 128;
constexpr std::size_t kBytes = 4096;

bool makeStream(Kind k, cudaStream_t* s) {
  *s = nullptr;
  if (k == Kind::kBlocking) return check(cudaStreamCreate(s), "cudaStreamCreate");
  if (k == Kind::kNonBlocking) return check(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return true;
}

bool runRound(const Scenario& sc, void* host[3], void* dev[3], Round& out) {
  cudaStream_t s[3];
  const Kind kinds[3] = {sc.a, sc.b, sc.c};
  for (int t = 0; t < 3; ++t) {
    if (!makeStream(kinds[t], &s[t])) return false;
  }
  if (!check(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) return false;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<bool> ok{true};
  std::vector<double> calls[3];
  double loops[3] = {0, 0, 0};
  auto body = [&](int t) {
    if (!check(cudaSetDevice(0), "cudaSetDevice")) ok = false;
    ready.fetch_add(1);
    while (!go.load()) {
    }
    if (kinds[t] == Kind::kNone) return;
    if (t == 2) {
      const auto until = Clock::now() + std::chrono::microseconds(20);
      while (Clock::now() < until) {
      }
    }
    const int n = t == 2 ? 1 : kCopies;
    const auto loop_start = Clock::now();
    for (int i = 0; i < n; ++i) {
      const auto a = Clock::now();
      if (!check(cudaMemcpyAsync(dev[t], host[t], kBytes, cudaMemcpyHostToDevice, s[t]), "cudaMemcpyAsync")) ok = false;
      calls[t].push_back(us(a, Clock::now()));
    }
    loops[t] = us(loop_start, Clock::now());
  };
  std::thread threads[3] = {std::thread(body, 0), std::thread(body, 1), std::thread(body, 2)};
  while (ready.load() < 3) {
  }
  go = true;
  for (std::thread& t : threads) t.join();
  if (!ok || !check(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) return false;
  for (int t = 0; t < 3; ++t) {
    if (s[t] != nullptr && !check(cudaStreamDestroy(s[t]), "cudaStreamDestroy")) return false;
  }
  out.c_call = calls[2].empty() ? 0 : calls[2][0];
  out.a_call = median(calls[0]);
  out.b_call = median(calls[1]);
  out.a_loop = loops[0];
  out.b_loop = loops[1];
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  if (rounds < 1) {
    std::fprintf(stderr, "legacy_lock_probe: ROUNDS must be a positive count\n");
    return 1;
  }
  void* host[3];
  void* dev[3];
  for (int t = 0; t < 3; ++t) {
    if (!check(cudaMallocHost(&host[t], kBytes), "cudaMallocHost") || !check(cudaMalloc(&dev[t], kBytes), "cudaMalloc")) {
      return 1;
    }
  }
  const Kind L = Kind::kLegacy, B = Kind::kBlocking, N = Kind::kNonBlocking, X = Kind::kNone;
  const std::vector<Scenario> scenarios = {
      {X, X, L}, {L, X, L}, {L, L, L}, {L, B, L}, {L, N, L}, {B, B, L}, {N, N, L},
      {L, B, B}, {L, B, N}, {N, N, N}, {B, B, B},
  };
  Round warm;
  if (!runRound({L, B, L}, host, dev, warm)) return 1;
  std::printf("%-12s %-12s %-12s %10s %10s %10s %10s %10s\n", "A", "B", "C", "C call", "A call", "B call",
              "A loop", "B loop");
  for (const Scenario& sc : scenarios) {
    std::vector<double> c, a, b, al, bl;
    for (int r = 0; r < rounds; ++r) {
      Round round;
      if (!runRound(sc, host, dev, round)) return 1;
      c.push_back(round.c_call);
      a.push_back(round.a_call);
      b.push_back(round.b_call);
      al.push_back(round.a_loop);
      bl.push_back(round.b_loop);
    }
    std::sort(c.begin(), c.end());
    std::printf("%-12s %-12s %-12s %10.1f %10.1f %10.1f %10.1f %10.1f   C max %.1f\n", name(sc.a), name(sc.b),
                name(sc.c), median(c), median(a), median(b), median(al), median(bl), c.back());
  }
  return 0;
}
