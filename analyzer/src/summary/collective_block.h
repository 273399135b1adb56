// A block of collectives as the varint BLOB of summary_schema.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cuoverlap/job.h"

namespace cuoverlap::summary {

// Appends collectives [from, to) of `stream` to `out`, their types numbered by `type_id`.
template <typename TypeId>
void encodeBlock(const std::vector<RankCollective>& stream, std::size_t from, std::size_t to,
                 Ns previous_start, const TypeId& type_id, std::string& out);

// Decodes `count` collectives of a block whose previous start is `previous_start`, appending to
// `out`; false when the bytes do not hold them (or name a type outside `types`).
bool decodeBlock(std::string_view data, std::uint64_t count, Ns previous_start,
                 const std::vector<std::string>& types, std::vector<RankCollective>& out);

namespace detail {
inline void putVarint(std::uint64_t v, std::string& out) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
inline void putSigned(Ns v, std::string& out) {
  putVarint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63), out);
}
}  // namespace detail

template <typename TypeId>
void encodeBlock(const std::vector<RankCollective>& stream, std::size_t from, std::size_t to,
                 Ns previous_start, const TypeId& type_id, std::string& out) {
  for (std::size_t k = from; k < to; ++k) {
    const RankCollective& c = stream[k];
    detail::putVarint(type_id(c.type), out);
    detail::putSigned(c.start - previous_start, out);
    detail::putSigned(c.end - c.start, out);
    detail::putSigned(c.before.compute_ns, out);
    detail::putSigned(c.before.idle_ns, out);
    detail::putSigned(c.before.h2d_ns, out);
    detail::putVarint(c.exposed.size(), out);
    Ns at = 0;  // pieces delta-coded: each from the previous one's end
    for (const Interval& piece : c.exposed) {
      detail::putSigned(piece.start - at, out);
      detail::putSigned(piece.end - piece.start, out);
      at = piece.end;
    }
    previous_start = c.start;
  }
}

}  // namespace cuoverlap::summary
