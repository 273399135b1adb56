#include "buffer_pool.h"

#include <cstdlib>
#include <cstring>

namespace cuoverlap::collector {

// CUPTI requires 8-byte aligned buffers; the memory is never freed because CUPTI may still hold a
// buffer when the process exits.
std::uint8_t* BufferPool::allocateZeroed() const {
  void* memory = std::aligned_alloc(64, buffer_bytes_);
  if (memory == nullptr) return nullptr;
  std::memset(memory, 0, buffer_bytes_);  // touches the pages now, not on the app's thread later
  return static_cast<std::uint8_t*>(memory);
}

BufferPool::BufferPool(std::size_t buffer_bytes, std::size_t preallocated, std::size_t max_buffers)
    : buffer_bytes_(buffer_bytes), max_buffers_(max_buffers) {
  free_.reserve(max_buffers);
  for (std::size_t i = 0; i < preallocated && i < max_buffers; ++i) {
    std::uint8_t* buffer = allocateZeroed();
    if (buffer == nullptr) break;
    free_.push_back(buffer);
    ++allocated_;
  }
}

std::uint8_t* BufferPool::acquire() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!free_.empty()) {
    std::uint8_t* buffer = free_.back();
    free_.pop_back();
    return buffer;
  }
  if (allocated_ >= max_buffers_) {
    ++refused_;
    return nullptr;
  }
  std::uint8_t* buffer = allocateZeroed();
  if (buffer != nullptr) ++allocated_;
  return buffer;
}

void BufferPool::release(std::uint8_t* buffer, std::size_t used_bytes) {
  if (buffer == nullptr) return;
  std::memset(buffer, 0, used_bytes < buffer_bytes_ ? used_bytes : buffer_bytes_);
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(buffer);
}

std::size_t BufferPool::allocatedBuffers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocated_;
}

std::size_t BufferPool::refusedRequests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refused_;
}

}  // namespace cuoverlap::collector
