#include "event_timer.h"

#include <algorithm>

#include "cuda_check.h"

namespace cuoverlap {

EventTimer::EventTimer() {
  CUOVERLAP_CUDA_CHECK(cudaEventCreate(&start_));
  CUOVERLAP_CUDA_CHECK(cudaEventCreate(&stop_));
}

EventTimer::~EventTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

void EventTimer::start(cudaStream_t stream) { CUOVERLAP_CUDA_CHECK(cudaEventRecord(start_, stream)); }

void EventTimer::stop(cudaStream_t stream) { CUOVERLAP_CUDA_CHECK(cudaEventRecord(stop_, stream)); }

float EventTimer::elapsedMs() const { return cuoverlap::elapsedMs(start_, stop_); }

float elapsedMs(cudaEvent_t from, cudaEvent_t to) {
  CUOVERLAP_CUDA_CHECK(cudaEventSynchronize(to));
  float ms = 0.0f;
  CUOVERLAP_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
  return ms;
}

double median(std::vector<double> values) {
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2.0;
}

}  // namespace cuoverlap
