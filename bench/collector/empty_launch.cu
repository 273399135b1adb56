// N launches of an empty 1x32 kernel on one stream; prints the launch loop's time (host clock,
// first launch to the final synchronize) so that CUDA and tracer start-up are not counted.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void emptyKernel() {}

int main(int argc, char** argv) {
  long launches = argc > 1 ? std::atol(argv[1]) : 200000;
  cudaStream_t stream;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return 77;
  emptyKernel<<<1, 32, 0, stream>>>();  // module load and first-launch costs stay outside
  cudaStreamSynchronize(stream);
  auto begin = std::chrono::steady_clock::now();
  for (long i = 0; i < launches; ++i) emptyKernel<<<1, 32, 0, stream>>>();
  cudaError_t status = cudaStreamSynchronize(stream);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  if (status != cudaSuccess) return 1;
  std::printf("launches %ld loop_s %.6f per_launch_us %.3f\n", launches, seconds, seconds * 1e6 / launches);
  return 0;
}
