// Exit 0 when a CUDA device is usable, 1 otherwise: lets GPU tests report "skipped" without one.
#include <cuda_runtime_api.h>

int main() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0 ? 0 : 1;
}
