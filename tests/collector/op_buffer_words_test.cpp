// Which words of a kernel's arguments the collector asks the driver about (op_buffer_words.h).
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <vector>

#include "op_buffer_words.h"

using namespace cuoverlap::collector;

namespace {

struct Member {
  std::uint64_t a;
  int n;
  std::uint64_t b;
};

struct Arguments {  // a kernel (float* x, int n, struct {float* a; int n; float* b;} s, double d)
  std::uint64_t x = 0x7f1234560000;
  int n = 5;
  Member s{};
  double d = 1.0;
  Arguments() {
    std::memset(&s, 0, sizeof s);  // the padding too: the driver copies it as it finds it
    s.a = 0x7f2000000010, s.n = 3, s.b = 0x7f3000000000;
  }
};

}  // namespace

TEST_CASE("argument words: every plausible address of every parameter, structs included") {
  Arguments args;
  void* params[] = {&args.x, &args.n, &args.s, &args.d};
  const std::vector<ParamSlot> layout = {{0, 8}, {8, 4}, {16, 24}, {40, 8}};
  std::vector<std::uint64_t> seen;
  forEachArgumentAddress(layout, params, [&](std::uint64_t w) { seen.push_back(w); });
  // The int is too small to read as a word, the struct's int is no address, the double's bits
  // (0x3ff0000000000000) lie above the user range.
  CHECK(seen == std::vector<std::uint64_t>{0x7f1234560000, 0x7f2000000010, 0x7f3000000000});
  CHECK(plausibleAddress(0x7fffffffffff));
  CHECK_FALSE(plausibleAddress(1u << 15));
  CHECK_FALSE(plausibleAddress(0x3ff0000000000000));
}

TEST_CASE("argument words: a packed buffer read at the layout's offsets, within its size") {
  std::vector<unsigned char> packed(48, 0);
  const std::uint64_t p = 0x7f0000001000, q = 0x7f0000002000;
  std::memcpy(packed.data() + 0, &p, 8);
  std::memcpy(packed.data() + 40, &q, 8);
  const std::vector<ParamSlot> layout = {{0, 8}, {8, 4}, {40, 8}};
  std::vector<std::uint64_t> seen;
  forEachPackedArgumentAddress(layout, packed.data(), packed.size(), [&](std::uint64_t w) { seen.push_back(w); });
  CHECK(seen == std::vector<std::uint64_t>{p, q});
  seen.clear();
  forEachPackedArgumentAddress(layout, packed.data(), 44, [&](std::uint64_t w) { seen.push_back(w); });
  CHECK(seen == std::vector<std::uint64_t>{p});  // the last word runs past the buffer's size
}

TEST_CASE("argument words: at most kMaxArgumentWords looked at, none without arguments") {
  std::vector<std::uint64_t> words(kMaxArgumentWords + 10, 0x7f0000000000);
  void* params[] = {words.data()};
  const std::vector<ParamSlot> layout = {{0, static_cast<std::uint32_t>(words.size() * 8)}};
  std::size_t count = 0;
  forEachArgumentAddress(layout, params, [&](std::uint64_t) { ++count; });
  CHECK(count == kMaxArgumentWords);
  count = 0;
  forEachArgumentAddress(layout, nullptr, [&](std::uint64_t) { ++count; });
  CHECK(count == 0);
}

TEST_CASE("recent misses: a word is found until another word takes its slot, and clear forgets all") {
  RecentMisses misses;
  const std::uint64_t size = 1 << 20, stride = 0x7f0000010000;
  CHECK_FALSE(misses.contains(size));
  misses.insert(size);
  misses.insert(stride);
  CHECK(misses.contains(size));
  CHECK(misses.contains(stride));
  CHECK_FALSE(misses.contains(0));  // the empty slot's value is never a hit
  // Fill every slot with other words: at most kSlots survive, and each one asked is found or not,
  // never another word's.
  for (std::uint64_t w = 1; w <= 4 * RecentMisses::kSlots; ++w) misses.insert(0x10000 * w);
  std::size_t kept = 0;
  for (std::uint64_t w = 1; w <= 4 * RecentMisses::kSlots; ++w) kept += misses.contains(0x10000 * w);
  CHECK(kept <= RecentMisses::kSlots);
  CHECK(kept >= RecentMisses::kSlots / 4);
  misses.clear();
  CHECK_FALSE(misses.contains(0x10000));
}

TEST_CASE("layout cache: a handle handed out again after an unload is looked up again") {
  LayoutCache<const void*> cache;
  int kernel = 0;  // stands for the one handle the driver hands out to two kernels in turn
  const void* handle = &kernel;
  const std::vector<ParamSlot> wide = {{0, 8}, {8, 8}, {16, 8}, {24, 8}};
  const std::vector<ParamSlot> narrow = {{0, 4}};
  const std::vector<ParamSlot>* current = &wide;
  int queries = 0;
  auto query = [&](const void*) { return ++queries, *current; };
  const std::vector<ParamSlot>& first = cache.layoutOf(handle, query);
  CHECK(first == wide);
  CHECK(&cache.layoutOf(handle, query) == &first);  // cached: one query
  CHECK(queries == 1);
  // Without an unload the cache keeps the old layout, whatever the driver would say now: that is
  // why every unload must start an epoch.
  current = &narrow;
  CHECK(cache.layoutOf(handle, query) == wide);
  cache.newEpoch();
  const std::vector<ParamSlot>& second = cache.layoutOf(handle, query);
  CHECK(second == narrow);
  CHECK(queries == 2);
  CHECK(first == wide);  // the old layout stays readable: another thread may hold it
  // A new epoch with the same layout keeps the same one.
  cache.newEpoch();
  CHECK(&cache.layoutOf(handle, query) == &second);
  CHECK(queries == 3);
}
