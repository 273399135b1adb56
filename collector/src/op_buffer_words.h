// Which words of a kernel's arguments may point into memory (cupti/op_buffers.h asks the driver
// which of them do). No CUDA here: the tests build these on machines without one.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace cuoverlap::collector {

// One kernel parameter in the device-side layout (cuFuncGetParamInfo / cuKernelGetParamInfo).
struct ParamSlot {
  std::uint32_t offset = 0;
  std::uint32_t size = 0;
};

inline bool operator==(const ParamSlot& a, const ParamSlot& b) {
  return a.offset == b.offset && a.size == b.size;
}

// Words looked at per launch, at most: a kernel whose arguments are large structs of sizes and
// strides (PyTorch's offset calculators) keeps its launch cost bounded; its pointers come first.
inline constexpr std::size_t kMaxArgumentWords = 64;

// A value that can be a user-space address: not a small integer, not above the 47-bit user range
// of x86-64 and AArch64 Linux (device, managed and pinned memory all live there under UVA).
inline bool plausibleAddress(std::uint64_t value) {
  return value >= 0x10000 && value < (std::uint64_t{1} << 47);
}

// Calls sink(value) for every 8-byte word of every parameter that holds a plausible address, in
// parameter order, at most kMaxArgumentWords words looked at. `params` as cuLaunchKernel's
// kernelParams: params[i] points to parameter i's value. A parameter's pointer members sit at
// multiples of 8 from its start (a struct holding a pointer is 8-aligned).
template <typename Sink>
void forEachArgumentAddress(const std::vector<ParamSlot>& layout, void* const* params, Sink&& sink) {
  if (params == nullptr) return;
  std::size_t looked = 0;
  for (std::size_t i = 0; i < layout.size(); ++i) {
    const auto* value = static_cast<const unsigned char*>(params[i]);
    if (value == nullptr) continue;
    for (std::uint32_t at = 0; at + 8 <= layout[i].size; at += 8) {
      if (looked++ == kMaxArgumentWords) return;
      std::uint64_t word = 0;
      std::memcpy(&word, value + at, sizeof word);
      if (plausibleAddress(word)) sink(word);
    }
  }
}

// The same for a packed argument buffer (cuLaunchKernel's `extra`, CU_LAUNCH_PARAM_BUFFER_POINTER):
// the parameters at their layout offsets within `size` bytes.
template <typename Sink>
void forEachPackedArgumentAddress(const std::vector<ParamSlot>& layout, const void* buffer,
                                  std::size_t size, Sink&& sink) {
  if (buffer == nullptr) return;
  const auto* bytes = static_cast<const unsigned char*>(buffer);
  std::size_t looked = 0;
  for (const ParamSlot& slot : layout) {
    for (std::uint32_t at = 0; at + 8 <= slot.size && slot.offset + at + 8 <= size; at += 8) {
      if (looked++ == kMaxArgumentWords) return;
      std::uint64_t word = 0;
      std::memcpy(&word, bytes + slot.offset + at, sizeof word);
      if (plausibleAddress(word)) sink(word);
    }
  }
}

// Parameter layouts by function handle and code epoch. The driver hands a function's handle out
// again once its module is unloaded (an H200: 73-80 of 100 rounds of loading, launching and
// unloading two modules in turn), so a layout cached by handle alone can be another kernel's, and
// reading a launch's arguments by it reads past them (JAX crashed so under the forty-first
// session's collector). Each unload starts a new epoch (newEpoch); a layout from an older one is
// looked up again, and replaced if it changed. A layout is never freed: another thread may still
// be reading the one it was handed.
template <typename Handle>
class LayoutCache {
 public:
  void newEpoch() { epoch_.fetch_add(1, std::memory_order_release); }

  // The layout of `handle` for this epoch; `query(handle)` gives one where none is cached.
  template <typename Query>
  const std::vector<ParamSlot>& layoutOf(Handle handle, Query&& query) {
    const std::uint64_t epoch = epoch_.load(std::memory_order_acquire);
    std::lock_guard<std::mutex> lock(mutex_);
    Entry& entry = entries_[handle];
    if (entry.slots != nullptr && entry.epoch == epoch) return *entry.slots;
    std::vector<ParamSlot> slots = query(handle);
    if (entry.slots == nullptr || !(*entry.slots == slots)) {
      entry.slots = new std::vector<ParamSlot>(std::move(slots));
    }
    entry.epoch = epoch;
    return *entry.slots;
  }

 private:
  struct Entry {
    std::uint64_t epoch = 0;
    const std::vector<ParamSlot>* slots = nullptr;
  };
  std::atomic<std::uint64_t> epoch_{0};
  std::mutex mutex_;
  std::unordered_map<Handle, Entry> entries_;
};

// Words lately found to be no address, so that a kernel's integer arguments that look like one
// (sizes, strides, seeds, pairs of 32-bit fields: PyTorch's launches carry dozens) cost the driver
// one query each (about 4 us on an H200), not one a launch: a direct-mapped table of kSlots words,
// a word's slot from a multiplicative hash. Sized for a training step's launches: with 256 slots a
// PyTorch step's few hundred such words evicted each other and 27 a step were asked again.
class RecentMisses {
 public:
  static constexpr unsigned kSlotBits = 12;
  static constexpr std::size_t kSlots = std::size_t{1} << kSlotBits;
  bool contains(std::uint64_t word) const { return word != 0 && slots_[slot(word)] == word; }
  void insert(std::uint64_t word) { slots_[slot(word)] = word; }
  void clear() { slots_.fill(0); }

 private:
  static std::size_t slot(std::uint64_t word) {
    return static_cast<std::size_t>((word * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits));
  }
  std::array<std::uint64_t, kSlots> slots_{};
};

}  // namespace cuoverlap::collector
