// Activity buffers handed to CUPTI. CUPTI asks for a buffer on the application's thread, so the
// pool hands out preallocated or freshly zeroed memory (CUPTI is told buffers come zeroed and skips
// zeroing them itself). The writer thread zeroes the used part of a buffer before it goes back.
//
// Buffers come in sizes: a thread's first request gets the smallest, each later one twice the size
// of the one before, up to the largest (CUOVERLAP_HOST_BUFFER_KB). With per-thread activity buffers
// (CUPTI 13's default) every thread that makes a CUDA call holds a buffer until the next flush: a
// program that starts thousands of short-lived threads held 4 MiB each and ran the pool dry (the
// lab's 6,120-run batch of three-thread programs dropped 491,025 records, docs/collector.md), while
// a thread that records much reaches the largest size after a few buffers.
//
// The pool's memory is bounded in bytes. Past the bound a request gets a free buffer of another
// size; with none free CUPTI gets no buffer and counts the records it drops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

namespace cuoverlap::collector {

class BufferPool {
 public:
  // `preallocated` buffers of the largest size are made now; smallest_bytes <= largest_bytes.
  BufferPool(std::size_t smallest_bytes, std::size_t largest_bytes, std::size_t preallocated,
             std::size_t max_bytes);
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // The size a thread's request gets after `earlier_requests` of its own: the smallest size,
  // doubled for each earlier request, at most the largest.
  std::size_t sizeForRequest(unsigned earlier_requests) const;
  // A zeroed buffer of `wanted` bytes; past the bound a free buffer of another size (the smallest
  // larger one, else the largest); nullptr when none is free. `size` is set to its size (0 with none).
  std::uint8_t* acquire(std::size_t wanted, std::size_t& size);
  // Returns a buffer of which the first `used_bytes` may be non-zero.
  void release(std::uint8_t* buffer, std::size_t used_bytes);

  std::size_t allocatedBytes() const;
  std::size_t refusedRequests() const;

 private:
  std::uint8_t* allocateZeroedLocked(std::size_t bytes);
  std::uint8_t* takeFreeLocked(std::multimap<std::size_t, std::uint8_t*>::iterator it, std::size_t& size);

  const std::size_t smallest_bytes_;
  const std::size_t largest_bytes_;
  const std::size_t max_bytes_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, std::uint8_t*> free_;     // by size
  std::unordered_map<std::uint8_t*, std::size_t> sizes_;  // every buffer allocated
  std::size_t allocated_bytes_ = 0;
  std::size_t refused_ = 0;
};

}  // namespace cuoverlap::collector
