// Timing with CUDA events, so that times are the GPU's, not the host's view of them.
#pragma once

#include <vector>

#include <cuda_runtime_api.h>

namespace cuoverlap {

// A pair of events recorded on one stream; elapsedMs() waits for the stop event.
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void start(cudaStream_t stream);
  void stop(cudaStream_t stream);
  float elapsedMs() const;

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

// Milliseconds between two recorded events; waits for `to`.
float elapsedMs(cudaEvent_t from, cudaEvent_t to);

// Median of a non-empty sample; the sample is reordered.
double median(std::vector<double> values);

}  // namespace cuoverlap
