// Activity buffers handed to CUPTI. CUPTI asks for a buffer on the application's thread, so the
// pool hands out preallocated, already-zeroed memory (CUPTI is told buffers come zeroed and skips
// zeroing them itself). The writer thread zeroes the used part of a buffer before it goes back.
// New memory is allocated only when every buffer is in flight, up to a limit; past the limit CUPTI
// gets no buffer and counts the records it drops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace cuoverlap::collector {

class BufferPool {
 public:
  BufferPool(std::size_t buffer_bytes, std::size_t preallocated, std::size_t max_buffers);
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A zeroed buffer of bufferBytes(), or nullptr when max_buffers are all in flight.
  std::uint8_t* acquire();
  // Returns a buffer of which the first `used_bytes` may be non-zero.
  void release(std::uint8_t* buffer, std::size_t used_bytes);

  std::size_t bufferBytes() const { return buffer_bytes_; }
  std::size_t allocatedBuffers() const;
  std::size_t refusedRequests() const;

 private:
  std::uint8_t* allocateZeroed() const;

  const std::size_t buffer_bytes_;
  const std::size_t max_buffers_;
  mutable std::mutex mutex_;
  std::vector<std::uint8_t*> free_;
  std::size_t allocated_ = 0;
  std::size_t refused_ = 0;
};

}  // namespace cuoverlap::collector
