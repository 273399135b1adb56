// One Kineto trace event as written in the file: the fields the importer reads, each kept as the
// text of its JSON value (numbers keep their digits, so timestamps convert to ns exactly). The
// SAX handler refills one RawEvent per event; nothing of an event outlives its conversion.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>

namespace cuoverlap::kineto {

enum class Field : std::uint8_t {
  // event keys
  kPh, kCat, kName, kPid, kTid, kTs, kDur,
  // keys inside "args"
  kDevice, kContext, kStream, kCorrelation, kBytes, kRegisters, kSharedMemory, kSyncKind,
  kInDevice, kInContext, kArgName, kLabels,
  kCount
};
inline constexpr std::size_t kFieldCount = static_cast<std::size_t>(Field::kCount);

struct RawEvent {
  std::array<std::string, kFieldCount> text;
  std::bitset<kFieldCount> present;
  std::bitset<kFieldCount> is_string;   // the value was a JSON string (else number/bool/null)
  std::uint64_t grid_blocks = 1;        // product of args.grid (saturating); 0 = absent
  std::uint64_t block_threads = 1;      // product of args.block
  bool has_grid = false;
  bool has_block = false;
  std::array<std::uint32_t, 3> grid{1, 1, 1};   // args.grid as x, y, z (each clamped to 32 bits)
  std::array<std::uint32_t, 3> block{1, 1, 1};  // args.block as x, y, z
  std::uint64_t index = 0;              // position in traceEvents, for error messages

  bool has(Field f) const { return present.test(static_cast<std::size_t>(f)); }
  bool isString(Field f) const { return is_string.test(static_cast<std::size_t>(f)); }
  std::string_view get(Field f) const {
    return has(f) ? std::string_view(text[static_cast<std::size_t>(f)]) : std::string_view();
  }
  void set(Field f, const char* data, std::size_t length, bool string) {
    const auto i = static_cast<std::size_t>(f);
    text[i].assign(data, length);
    present.set(i);
    is_string.set(i, string);
  }
  void clear() {
    present.reset();
    is_string.reset();
    grid_blocks = block_threads = 1;
    has_grid = has_block = false;
    grid = block = {1, 1, 1};
  }
};

// A GPU's entry in the top-level deviceProperties array.
struct RawDevice {
  std::int64_t id = -1;
  std::string name;
  std::int64_t total_memory = 0;
  std::int64_t compute_major = 0;
  std::int64_t compute_minor = 0;
  std::int64_t sm_count = 0;
  std::int64_t max_threads_per_sm = 0;
  std::int64_t registers_per_sm = 0;
  std::int64_t shared_mem_per_sm = 0;
};

// Receives what the parser finds, in file order.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void event(const RawEvent& event) = 0;
  virtual void device(const RawDevice& device) = 0;
  // A scalar member of the top-level object or of distributedInfo ("distributedInfo.rank").
  virtual void metadata(std::string_view key, std::string_view value, bool is_string) = 0;
};

}  // namespace cuoverlap::kineto
