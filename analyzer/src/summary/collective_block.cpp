#include "collective_block.h"

namespace cuoverlap::summary {
namespace {

// One varint at `at`; false past the end or beyond 64 bits.
bool getVarint(std::string_view data, std::size_t& at, std::uint64_t& value) {
  value = 0;
  for (unsigned shift = 0; shift < 64 && at < data.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(data[at++]);
    value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

bool getSigned(std::string_view data, std::size_t& at, Ns& value) {
  std::uint64_t raw = 0;
  if (!getVarint(data, at, raw)) return false;
  value = static_cast<Ns>((raw >> 1) ^ (~(raw & 1) + 1));
  return true;
}

}  // namespace

bool decodeBlock(std::string_view data, std::uint64_t count, Ns previous_start,
                 const std::vector<std::string>& types, std::vector<RankCollective>& out) {
  std::size_t at = 0;
  for (std::uint64_t k = 0; k < count; ++k) {
    std::uint64_t type = 0;
    Ns delta = 0, length = 0;
    RankCollective c;
    if (!getVarint(data, at, type) || type >= types.size() || !getSigned(data, at, delta) ||
        !getSigned(data, at, length) || !getSigned(data, at, c.before.compute_ns) ||
        !getSigned(data, at, c.before.idle_ns) || !getSigned(data, at, c.before.h2d_ns)) {
      return false;
    }
    std::uint64_t pieces = 0;
    // A piece takes at least two bytes: a count beyond what is left is damage, not a size to
    // reserve.
    if (!getVarint(data, at, pieces) || pieces > (data.size() - at) / 2) return false;
    Ns piece_end = 0;
    for (std::uint64_t p = 0; p < pieces; ++p) {
      Ns gap = 0, piece = 0;
      if (!getSigned(data, at, gap) || !getSigned(data, at, piece)) return false;
      const Ns from = static_cast<Ns>(static_cast<std::uint64_t>(piece_end) + static_cast<std::uint64_t>(gap));
      piece_end = static_cast<Ns>(static_cast<std::uint64_t>(from) + static_cast<std::uint64_t>(piece));
      c.exposed.push_back({from, piece_end});
    }
    // Unsigned: a damaged file must not overflow a signed sum (undefined behaviour).
    c.start = static_cast<Ns>(static_cast<std::uint64_t>(previous_start) + static_cast<std::uint64_t>(delta));
    c.end = static_cast<Ns>(static_cast<std::uint64_t>(c.start) + static_cast<std::uint64_t>(length));
    c.type = types[type];
    previous_start = c.start;
    out.push_back(std::move(c));
  }
  return at == data.size();
}

}  // namespace cuoverlap::summary
