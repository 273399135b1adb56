#include "buffer_pool.h"

#include <cstdlib>
#include <cstring>
#include <iterator>

namespace cuoverlap::collector {

// CUPTI requires 8-byte aligned buffers; the memory is never freed because CUPTI may still hold a
// buffer when the process exits.
std::uint8_t* BufferPool::allocateZeroedLocked(std::size_t bytes) {
  void* memory = std::aligned_alloc(64, bytes);
  if (memory == nullptr) return nullptr;
  std::memset(memory, 0, bytes);  // touches the pages now, not while CUPTI writes records
  auto* buffer = static_cast<std::uint8_t*>(memory);
  sizes_.emplace(buffer, bytes);
  allocated_bytes_ += bytes;
  return buffer;
}

BufferPool::BufferPool(std::size_t smallest_bytes, std::size_t largest_bytes, std::size_t preallocated,
                       std::size_t max_bytes)
    : smallest_bytes_(smallest_bytes < largest_bytes ? smallest_bytes : largest_bytes),
      largest_bytes_(largest_bytes),
      max_bytes_(max_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::size_t i = 0; i < preallocated && allocated_bytes_ + largest_bytes_ <= max_bytes_; ++i) {
    std::uint8_t* buffer = allocateZeroedLocked(largest_bytes_);
    if (buffer == nullptr) break;
    free_.emplace(largest_bytes_, buffer);
  }
}

std::size_t BufferPool::sizeForRequest(unsigned earlier_requests) const {
  std::size_t size = smallest_bytes_;
  for (unsigned i = 0; i < earlier_requests && size < largest_bytes_; ++i) size *= 2;
  return size < largest_bytes_ ? size : largest_bytes_;
}

std::uint8_t* BufferPool::takeFreeLocked(std::multimap<std::size_t, std::uint8_t*>::iterator it,
                                         std::size_t& size) {
  size = it->first;
  std::uint8_t* buffer = it->second;
  free_.erase(it);
  return buffer;
}

std::uint8_t* BufferPool::acquire(std::size_t wanted, std::size_t& size) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto fitting = free_.lower_bound(wanted);
  if (fitting != free_.end() && fitting->first == wanted) return takeFreeLocked(fitting, size);
  if (allocated_bytes_ + wanted <= max_bytes_) {
    if (std::uint8_t* buffer = allocateZeroedLocked(wanted)) {
      size = wanted;
      return buffer;
    }
  }
  if (fitting != free_.end()) return takeFreeLocked(fitting, size);
  if (!free_.empty()) return takeFreeLocked(std::prev(free_.end()), size);
  ++refused_;
  size = 0;
  return nullptr;
}

void BufferPool::release(std::uint8_t* buffer, std::size_t used_bytes) {
  if (buffer == nullptr) return;
  std::size_t size = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto known = sizes_.find(buffer);
    if (known == sizes_.end()) return;  // not ours
    size = known->second;
  }
  std::memset(buffer, 0, used_bytes < size ? used_bytes : size);
  std::lock_guard<std::mutex> lock(mutex_);
  free_.emplace(size, buffer);
}

std::size_t BufferPool::allocatedBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocated_bytes_;
}

std::size_t BufferPool::refusedRequests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refused_;
}

}  // namespace cuoverlap::collector
