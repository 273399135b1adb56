// A program that is its own CUPTI tool: it subscribes to CUPTI in main() before any CUDA call,
// then does some CUDA work and returns 7. Under the collector, CUPTI (13.0) allows one
// subscriber, so the collector must step aside: one warning, the program untouched.
// Exits 4 when its own subscription fails, 1 on a wrong result, 77 without a GPU.
#include <cuda_runtime.h>
#include <cupti.h>

#include <cstdio>
#include <vector>

namespace {

void CUPTIAPI onCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

bool copyRoundTrip() {
  constexpr std::size_t kCount = 1 << 16;
  int* device = nullptr;
  if (cudaMalloc(&device, kCount * sizeof(int)) != cudaSuccess) return false;
  std::vector<int> host(kCount, 1);
  bool ok = cudaMemset(device, 0, kCount * sizeof(int)) == cudaSuccess &&
            cudaMemcpy(host.data(), device, kCount * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess &&
            host[0] == 0 && host[kCount - 1] == 0;
  cudaFree(device);
  return ok;
}

}  // namespace

int main() {
  CUpti_SubscriberHandle subscriber = nullptr;
  CUptiResult result = cuptiSubscribe(&subscriber, onCallback, nullptr);
  if (result != CUPTI_SUCCESS) {
    const char* message = "";
    cuptiGetResultString(result, &message);
    std::printf("own subscriber failed: %s\n", message);
    return 4;
  }
  std::printf("own subscriber attached\n");
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 77;
  bool ok = copyRoundTrip();
  cuptiUnsubscribe(subscriber);
  return ok ? 7 : 1;
}
