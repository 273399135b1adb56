// BufferPool: the activity buffers handed to CUPTI grow per thread and stay within their bound.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

#include "buffer_pool.h"

using cuoverlap::collector::BufferPool;

namespace {

constexpr std::size_t kKiB = 1024;

bool allZero(const std::uint8_t* buffer, std::size_t size) {
  return std::all_of(buffer, buffer + size, [](std::uint8_t b) { return b == 0; });
}

}  // namespace

TEST_CASE("a thread's buffers grow from the smallest size, doubling, up to the largest") {
  BufferPool pool(64 * kKiB, 4096 * kKiB, 0, 1u << 30);
  CHECK(pool.sizeForRequest(0) == 64 * kKiB);
  CHECK(pool.sizeForRequest(1) == 128 * kKiB);
  CHECK(pool.sizeForRequest(5) == 2048 * kKiB);
  CHECK(pool.sizeForRequest(6) == 4096 * kKiB);
  CHECK(pool.sizeForRequest(1000) == 4096 * kKiB);
  // A largest size under the smallest: every buffer has the largest size.
  BufferPool tiny(64 * kKiB, 16 * kKiB, 0, 1u << 20);
  CHECK(tiny.sizeForRequest(0) == 16 * kKiB);
}

TEST_CASE("many short-lived threads' first buffers fit where as many largest buffers would not") {
  // The bound holds 16 largest buffers; 800 threads each holding its first buffer fit in it.
  BufferPool pool(64 * kKiB, 4096 * kKiB, 2, 64u << 20);
  CHECK(pool.allocatedBytes() == 2 * 4096 * kKiB);
  std::vector<std::uint8_t*> held;
  for (int thread = 0; thread < 800; ++thread) {
    std::size_t size = 0;
    std::uint8_t* buffer = pool.acquire(pool.sizeForRequest(0), size);
    REQUIRE(buffer != nullptr);
    CHECK(size == 64 * kKiB);  // not a free preallocated 4 MiB buffer while there is room
    held.push_back(buffer);
  }
  CHECK(pool.allocatedBytes() == 2 * 4096 * kKiB + 800 * 64 * kKiB);
  CHECK(pool.refusedRequests() == 0);
}

TEST_CASE("past its bound the pool hands out free buffers of other sizes, then refuses") {
  BufferPool pool(64 * kKiB, 256 * kKiB, 0, 512 * kKiB);
  std::size_t size = 0;
  std::uint8_t* big = pool.acquire(256 * kKiB, size);
  REQUIRE(big != nullptr);
  std::uint8_t* big2 = pool.acquire(256 * kKiB, size);
  REQUIRE(big2 != nullptr);
  CHECK(pool.allocatedBytes() == 512 * kKiB);
  // Full: nothing free, so a request is refused and counted.
  CHECK(pool.acquire(64 * kKiB, size) == nullptr);
  CHECK(size == 0);
  CHECK(pool.refusedRequests() == 1);
  // A free buffer of another size is better than none.
  std::memset(big, 0xab, 1000);
  pool.release(big, 1000);
  std::uint8_t* again = pool.acquire(64 * kKiB, size);
  CHECK(again == big);
  CHECK(size == 256 * kKiB);
  CHECK(allZero(again, size));  // the used part was zeroed on release
  CHECK(pool.allocatedBytes() == 512 * kKiB);
}

TEST_CASE("a released buffer of the wanted size is reused before new memory") {
  BufferPool pool(64 * kKiB, 256 * kKiB, 0, 1u << 30);
  std::size_t size = 0;
  std::uint8_t* first = pool.acquire(128 * kKiB, size);
  REQUIRE(first != nullptr);
  first[size - 1] = 7;
  pool.release(first, size);
  std::uint8_t* second = pool.acquire(128 * kKiB, size);
  CHECK(second == first);
  CHECK(size == 128 * kKiB);
  CHECK(allZero(second, size));
  CHECK(pool.allocatedBytes() == 128 * kKiB);
  // A buffer the pool did not make is left alone.
  std::uint8_t foreign[16] = {1};
  pool.release(foreign, sizeof foreign);
  CHECK(foreign[0] == 1);
}
