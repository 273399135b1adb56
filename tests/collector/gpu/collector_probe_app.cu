// A CUDA program with a known amount of work, recorded by the collector's GPU test.
// Usage: collector_probe_app MODE [ARG]; exits 77 when no GPU is usable, 1 on a wrong result.
// Modes and what they do (record_gpu_test.cpp checks the trace against these numbers):
//   probe          nothing (only checks for a GPU)
//   basic          6 addOne kernels (3 on a blocking stream, 2 on a non-blocking one, 1 on the
//                  legacy default stream), 4 copies (pageable and pinned, HtoD and DtoH),
//                  2 memsets, 2 stream syncs, 1 device sync, NVTX ranges and a mark, then
//                  cudaDeviceReset
//   spin FILE      launches 1 ms kernels until killed; writes its pid to FILE after 100 of them
//   spin_handler FILE before|after
//                  as spin, with its own SIGTERM handler installed before the first CUDA call
//                  (the collector chains to it) or after (it replaces the collector's); the
//                  handler asks the loop to stop, and the program then returns 3
//   fork           2 kernels, fork (child exits without CUDA), 2 more kernels
//   fork_many N    1 kernel, then N forks one after another (each child exits through exit()
//                  without CUDA) while the collector still reads the devices; 1 if a child did
//                  not exit within 20 s (it is killed)
//   threads        8 threads, each 100 kernels on its own stream, started together
//   graph          a captured graph of 3 kernels and 1 memset, launched 4 times
//   exit_thread    100 kernels, then exit(5) from a second thread while main waits
//   kernels N      N addOne kernels on the default stream, synchronized (a child's work)
//   fork_cuda      forks before any CUDA call (fork without exec); the parent then runs 3 kernels,
//                  the child 5 (and exits through exit()); the parent waits for the child
//   subprocess     2 kernels, then runs `collector_probe_app kernels 3` (fork + exec) and waits
//   multi N        starts N `collector_probe_app kernels 50` at once, 1 kernel itself, waits
//   quick_exit     500 20-us kernels launched without waiting, then quick_exit(5)
//   abort          100 kernels, synchronized, then abort()
//   segv           100 kernels, synchronized, then a write through a null pointer
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#define CHECK_CUDA(call)                                                                \
  do {                                                                                  \
    cudaError_t err_ = (call);                                                          \
    if (err_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_));         \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

__global__ void addOne(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

__global__ void sleepKernel(unsigned nanoseconds) { __nanosleep(nanoseconds); }

namespace {

constexpr int kN = 1 << 16;
volatile sig_atomic_t g_stop_requested = 0;

void onStopSignal(int) { g_stop_requested = 1; }

void installStopHandler() {
  struct sigaction action {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
}
constexpr size_t kBytes = kN * sizeof(int);

void launchAddOne(int* d, cudaStream_t stream) {
  addOne<<<(kN + 255) / 256, 256, 0, stream>>>(d, kN);
  CHECK_CUDA(cudaGetLastError());
}

int runBasic() {
  nvtxRangePushA("basic");
  cudaStream_t blocking, nonblocking;
  CHECK_CUDA(cudaStreamCreate(&blocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking));
  std::vector<int> pageable(kN, 1);
  int *pinned, *d, *d2, *d3;
  CHECK_CUDA(cudaMallocHost(&pinned, kBytes));
  CHECK_CUDA(cudaMalloc(&d, kBytes));
  CHECK_CUDA(cudaMalloc(&d2, kBytes));
  CHECK_CUDA(cudaMalloc(&d3, kBytes));
  for (int i = 0; i < kN; ++i) pinned[i] = 10;
  nvtxRangeId_t async_range = nvtxRangeStartA("async-range");
  CHECK_CUDA(cudaMemcpy(d3, pageable.data(), kBytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpyAsync(d, pinned, kBytes, cudaMemcpyHostToDevice, blocking));
  for (int i = 0; i < 3; ++i) launchAddOne(d, blocking);
  CHECK_CUDA(cudaMemsetAsync(d2, 0, kBytes, nonblocking));
  for (int i = 0; i < 2; ++i) launchAddOne(d2, nonblocking);
  CHECK_CUDA(cudaMemcpyAsync(pinned, d, kBytes, cudaMemcpyDeviceToHost, blocking));
  CHECK_CUDA(cudaStreamSynchronize(blocking));
  CHECK_CUDA(cudaStreamSynchronize(nonblocking));
  nvtxMarkA("synced");
  CHECK_CUDA(cudaMemset(d, 0, kBytes));
  launchAddOne(d2, 0);
  CHECK_CUDA(cudaMemcpy(pageable.data(), d2, kBytes, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaDeviceSynchronize());
  nvtxRangeEnd(async_range);
  nvtxRangePop();
  bool ok = pinned[0] == 13 && pinned[kN - 1] == 13 && pageable[0] == 3 && pageable[kN - 1] == 3;
  CHECK_CUDA(cudaDeviceReset());
  return ok ? 0 : 1;
}

int runSpin(const char* ready_file) {
  for (int i = 0; !g_stop_requested; ++i) {
    sleepKernel<<<1, 1>>>(1000000);
    CHECK_CUDA(cudaDeviceSynchronize());
    if (i == 100) {
      FILE* f = std::fopen(ready_file, "w");
      std::fprintf(f, "%d\n", static_cast<int>(getpid()));
      std::fclose(f);
    }
    if (i > 60000) return 4;  // about a minute: the test never waits that long
  }
  std::printf("stop handler ran\n");
  return 3;
}

int runFork() {
  int* d;
  CHECK_CUDA(cudaMalloc(&d, kBytes));
  launchAddOne(d, 0);
  launchAddOne(d, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  pid_t child = fork();
  if (child == 0) {
    volatile long sum = 0;
    for (long i = 0; i < 1000000; ++i) sum = sum + i;
    std::exit(0);  // runs the collector's atexit hook in the child
  }
  int status = 0;
  waitpid(child, &status, 0);
  launchAddOne(d, 0);
  launchAddOne(d, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

// Forks right after the first CUDA work, when the collector's writer reads the devices (and
// loads NVML for the host link): a fork during that library's unload used to leave the child
// waiting forever in exit().
int runForkMany(int forks) {
  int* d;
  CHECK_CUDA(cudaMalloc(&d, kBytes));
  launchAddOne(d, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  int stuck = 0;
  for (int i = 0; i < forks; ++i) {
    std::fflush(nullptr);
    pid_t child = fork();
    if (child == 0) std::exit(0);
    int status = 0, waited_ms = 0;
    while (waitpid(child, &status, WNOHANG) == 0) {
      if (++waited_ms > 20000) {
        ++stuck;
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        break;
      }
      usleep(1000);
    }
  }
  if (stuck > 0) std::fprintf(stderr, "%d of %d children did not exit\n", stuck, forks);
  return stuck == 0 ? 0 : 1;
}

int runThreads() {
  int* d;
  CHECK_CUDA(cudaMalloc(&d, 8 * kBytes));
  std::mutex mutex;
  std::condition_variable go;
  bool started = false;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      cudaStream_t stream;
      CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      std::unique_lock<std::mutex> lock(mutex);
      go.wait(lock, [&] { return started; });
      lock.unlock();
      for (int i = 0; i < 100; ++i) launchAddOne(d + t * kN, stream);
      CHECK_CUDA(cudaStreamSynchronize(stream));
    });
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    started = true;
  }
  go.notify_all();
  for (auto& thread : threads) thread.join();
  std::vector<int> host(8 * kN);
  CHECK_CUDA(cudaMemcpy(host.data(), d, 8 * kBytes, cudaMemcpyDeviceToHost));
  return host[0] == 100 && host[8 * kN - 1] == 100 ? 0 : 1;
}

// `count` short-lived threads, `alive` at a time, each launching one kernel on its per-thread
// stream and waiting for it: with per-thread activity buffers each one holds a buffer of its own
// until the collector's next flush (the pool must not run dry, buffer_pool.h).
int runShortThreads(int count, int alive) {
  int* d;
  CHECK_CUDA(cudaMalloc(&d, alive * kBytes));
  CHECK_CUDA(cudaMemset(d, 0, alive * kBytes));
  for (int started = 0; started < count; started += alive) {
    std::vector<std::thread> threads;
    for (int t = 0; t < alive && started + t < count; ++t) {
      threads.emplace_back([d, t] {
        launchAddOne(d + t * kN, cudaStreamPerThread);
        CHECK_CUDA(cudaStreamSynchronize(cudaStreamPerThread));
      });
    }
    for (auto& thread : threads) thread.join();
  }
  std::vector<int> host(alive * kN);
  CHECK_CUDA(cudaMemcpy(host.data(), d, alive * kBytes, cudaMemcpyDeviceToHost));
  return host[0] == (count + alive - 1) / alive ? 0 : 1;
}

int runGraph() {
  int* d;
  CHECK_CUDA(cudaMalloc(&d, kBytes));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  CHECK_CUDA(cudaMemsetAsync(d, 0, kBytes, stream));
  for (int i = 0; i < 3; ++i) launchAddOne(d, stream);
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 4; ++i) CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  int first = 0;
  CHECK_CUDA(cudaMemcpy(&first, d, sizeof first, cudaMemcpyDeviceToHost));
  return first == 3 ? 0 : 1;
}

int runKernels(int n) {
  int* d;
  CHECK_CUDA(cudaMalloc(&d, kBytes));
  for (int i = 0; i < n; ++i) launchAddOne(d, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  return 0;
}

// Before any CUDA call: a child forked after the parent initialized CUDA could not use it.
int runForkThenCuda() {
  pid_t child = fork();
  if (child == 0) std::exit(runKernels(5));
  int status = 0;
  int rc = runKernels(3);
  waitpid(child, &status, 0);
  return rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

pid_t startSelf(const char* self, const char* mode, const char* arg) {
  pid_t child = fork();
  if (child == 0) {
    execl(self, self, mode, arg, static_cast<char*>(nullptr));
    _exit(127);
  }
  return child;
}

int waitAll(const std::vector<pid_t>& children) {
  int failures = 0;
  for (pid_t child : children) {
    int status = 0;
    waitpid(child, &status, 0);
    failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failures == 0 ? 0 : 1;
}

int runSubprocess(const char* self) {
  runKernels(2);
  return waitAll({startSelf(self, "kernels", "3")});
}

int runMulti(const char* self, int n) {
  std::vector<pid_t> children;
  for (int i = 0; i < n; ++i) children.push_back(startSelf(self, "kernels", "50"));
  runKernels(1);
  return waitAll(children);
}

int runQuickExit() {
  for (int i = 0; i < 500; ++i) sleepKernel<<<1, 1>>>(20000);
  CHECK_CUDA(cudaGetLastError());
  std::quick_exit(5);
}

int runFatal(bool segv) {
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // a CUDA process's core file is large and slow to write
  runKernels(100);
  if (!segv) std::abort();
  volatile int* nowhere = nullptr;
  *nowhere = 1;
  return 0;
}

int runExitFromThread() {
  int* d;
  CHECK_CUDA(cudaMalloc(&d, kBytes));
  for (int i = 0; i < 100; ++i) launchAddOne(d, 0);
  CHECK_CUDA(cudaDeviceSynchronize());
  std::thread([] { std::exit(5); }).detach();
  for (;;) pause();
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "probe";
  if (!std::strcmp(mode, "fork_cuda")) return runForkThenCuda();
  bool own_handler = !std::strcmp(mode, "spin_handler") && argc > 3;
  if (own_handler && !std::strcmp(argv[3], "before")) installStopHandler();
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 77;
  if (own_handler && !std::strcmp(argv[3], "after")) installStopHandler();
  if (own_handler) return runSpin(argv[2]);
  if (!std::strcmp(mode, "probe")) return 0;
  if (!std::strcmp(mode, "basic")) return runBasic();
  if (!std::strcmp(mode, "spin") && argc > 2) return runSpin(argv[2]);
  if (!std::strcmp(mode, "fork")) return runFork();
  if (!std::strcmp(mode, "fork_many") && argc > 2) return runForkMany(std::atoi(argv[2]));
  if (!std::strcmp(mode, "threads")) return runThreads();
  if (!std::strcmp(mode, "short_threads") && argc > 3) return runShortThreads(std::atoi(argv[2]), std::atoi(argv[3]));
  if (!std::strcmp(mode, "graph")) return runGraph();
  if (!std::strcmp(mode, "exit_thread")) return runExitFromThread();
  if (!std::strcmp(mode, "kernels") && argc > 2) return runKernels(std::atoi(argv[2]));
  if (!std::strcmp(mode, "subprocess")) return runSubprocess(argv[0]);
  if (!std::strcmp(mode, "multi") && argc > 2) return runMulti(argv[0], std::atoi(argv[2]));
  if (!std::strcmp(mode, "quick_exit")) return runQuickExit();
  if (!std::strcmp(mode, "abort")) return runFatal(false);
  if (!std::strcmp(mode, "segv")) return runFatal(true);
  std::fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
