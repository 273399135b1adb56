// Matching collectives across ranks, and one time axis for all ranks.
//
// Matching: NCCL runs the collectives of one communicator in the same order on every rank, on one
// stream per communicator and device. A rank's communication streams are ordered by their first
// collective; the s-th stream of every rank is taken to be the same communicator, and its k-th
// collective on every rank the same collective. Skew = the last rank's start − the first rank's
// start; a match whose collective types differ between ranks is counted as a type mismatch (the
// streams were not the same communicator, or a rank's trace lost a collective).
//
// Clocks: ranks of one host share its clock (CUPTI and nsys timestamps are the host's
// CLOCK_MONOTONIC/REALTIME-based GPU timestamps), so their times are compared as they are. Ranks
// of different hosts (known hosts differ, or unknown hosts whose first matched collective ended
// more than 1 s apart) are put on the first rank's clock by the end of their first matched
// collective, which every rank leaves together (a collective completes on all ranks at once).
#include <algorithm>
#include <exception>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "job_internal.h"

namespace cuoverlap::job {
namespace {

constexpr Ns kSameClockSpreadNs = 1'000'000'000;

const RankCollective* firstCollective(const RankTimeline& rank) {
  return rank.streams.empty() ? nullptr : &rank.streams.front().first;
}

}  // namespace

std::pair<std::vector<Ns>, std::string> alignClocks(const std::vector<RankTimeline>& ranks) {
  std::vector<Ns> offsets(ranks.size(), 0);
  std::set<std::string> hosts;
  bool unknown_host = false;
  for (const RankTimeline& rank : ranks) {
    if (rank.host.empty()) unknown_host = true; else hosts.insert(rank.host);
  }
  const RankCollective* reference = nullptr;
  Ns lowest = 0, highest = 0;
  for (const RankTimeline& rank : ranks) {
    const RankCollective* c = firstCollective(rank);
    if (!c) continue;
    if (!reference) { reference = c; lowest = highest = c->end; }
    lowest = std::min(lowest, c->end);
    highest = std::max(highest, c->end);
  }
  const bool several_hosts = hosts.size() > 1;
  const bool apart = reference && highest - lowest > kSameClockSpreadNs;
  if (!reference || (!several_hosts && !apart)) {
    return {offsets, hosts.size() == 1 && !unknown_host
                         ? fmt::format("one clock (all ranks on host {})", *hosts.begin())
                         : std::string("one clock (ranks taken to share a host: their first "
                                       "collectives ended within 1 s of each other)")};
  }
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (const RankCollective* c = firstCollective(ranks[i])) offsets[i] = c->end - reference->end;
  }
  return {offsets, several_hosts
                       ? fmt::format("{} hosts: ranks aligned on the end of their first matched "
                                     "collective (skews are relative to it)", hosts.size())
                       : std::string("clocks more than 1 s apart: ranks aligned on the end of their "
                                     "first matched collective (skews are relative to it)")};
}

namespace {

// Collectives per slice of every rank together: a slice of 4,096 ranks holds 64 sequence numbers
// of each (about 20 MB); a slice of 2 ranks, 131,072. Slices are whole multiples of 64 sequence
// numbers, the blocks a summary keeps them in (summary_schema.h): each block is read once.
constexpr std::uint64_t kSliceCollectives = std::uint64_t{1} << 18;
constexpr std::uint64_t kSliceUnit = 64;

// One rank's collectives [from, from + size) of the stream being matched: in place when the
// rank holds them, else read into `buffer`.
struct RankSlice {
  std::vector<RankCollective> buffer;
  const RankCollective* base = nullptr;
  std::uint64_t from = 0;
  std::uint64_t size = 0;
};

void readSlice(const RankTimeline& rank, std::size_t stream, std::uint64_t from, std::uint64_t to,
               RankSlice& slice) {
  slice.from = from;
  slice.size = 0;
  if (stream >= rank.streams.size() || from >= rank.streams[stream].count) return;
  to = std::min(to, rank.streams[stream].count);
  if (rank.reader) {
    rank.reader->read(stream, from, to, slice.buffer);
    slice.base = slice.buffer.data();
  } else {
    slice.base = rank.streams[stream].collectives.data() + from;
  }
  slice.size = to - from;
}

// Every rank's slice, on two threads when the ranks read from summaries: decoding is most of a
// merge's work, and a loaded machine gives two threads twice the share of one. A file's ranks
// share its connection, used by one thread at a time: ranks go to threads by file.
void readSlices(const std::vector<RankTimeline>& ranks, std::size_t stream, std::uint64_t from,
                std::uint64_t to, std::vector<RankSlice>& slices) {
  const auto readPart = [&](std::size_t part, std::size_t parts) {
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (ranks[r].file_index % parts == part) readSlice(ranks[r], stream, from, to, slices[r]);
    }
  };
  const bool from_files = std::any_of(ranks.begin(), ranks.end(),
                                      [](const RankTimeline& r) { return r.reader != nullptr; });
  if (!from_files || ranks.size() < 64) return readPart(0, 1);
  std::exception_ptr error;
  std::thread helper([&] {
    try {
      readPart(1, 2);
    } catch (...) {
      error = std::current_exception();
    }
  });
  try {
    readPart(0, 2);
  } catch (...) {
    helper.join();
    throw;
  }
  helper.join();
  if (error) std::rethrow_exception(error);
}

// One sequence number of a slice across the ranks, gathered rank by rank: the ranks' slices are
// read in memory order, and only these few bytes per sequence number stay in cache.
struct Column {
  Ns first = 0;
  Ns last = 0;
  std::size_t first_row = 0;
  std::size_t last_row = 0;
  std::size_t ranks = 0;
  const std::string* type = nullptr;
  bool type_mismatch = false;
};

void gatherColumns(const std::vector<RankSlice>& slices, const std::vector<Ns>& offsets,
                   std::uint64_t count, std::vector<Column>& columns) {
  columns.assign(static_cast<std::size_t>(count), Column{});
  for (std::size_t r = 0; r < slices.size(); ++r) {
    const RankSlice& slice = slices[r];
    const std::size_t n = static_cast<std::size_t>(std::min(count, slice.size));
    for (std::size_t i = 0; i < n; ++i) {
      const RankCollective& c = slice.base[i];
      Column& column = columns[i];
      const Ns start = c.start - offsets[r];
      if (column.ranks++ == 0) {
        column = {start, start, r, r, 1, &c.type, false};
        continue;
      }
      if (start < column.first) { column.first = start; column.first_row = r; }
      if (start > column.last) { column.last = start; column.last_row = r; }
      column.type_mismatch |= c.type != *column.type;
    }
  }
}

}  // namespace

void visitCollectives(const std::vector<RankTimeline>& ranks, const std::vector<Ns>& offsets,
                      const CollectiveVisitor& visitor) {
  std::size_t streams = 0;
  for (const RankTimeline& rank : ranks) streams = std::max(streams, rank.streams.size());
  const std::uint64_t slice_size = std::max<std::uint64_t>(
      kSliceUnit, kSliceCollectives / std::max<std::size_t>(1, ranks.size()) / kSliceUnit * kSliceUnit);
  std::vector<RankSlice> slices(ranks.size());
  std::vector<Column> columns;
  Match match;
  for (std::size_t s = 0; s < streams; ++s) {
    // Sequence numbers run to the longest rank's count; matches end where fewer than two ranks
    // have the collective (the second-longest count).
    std::uint64_t longest = 0, second = 0;
    for (const RankTimeline& rank : ranks) {
      const std::uint64_t count = s < rank.streams.size() ? rank.streams[s].count : 0;
      if (count > longest) { second = longest; longest = count; }
      else if (count > second) { second = count; }
    }
    for (std::uint64_t from = 0; from < longest; from += slice_size) {
      const std::uint64_t to = std::min(longest, from + slice_size);
      readSlices(ranks, s, from, to, slices);
      // Rank by rank while each slice is in cache; matches then go across the ranks.
      for (std::size_t r = 0; r < ranks.size() && visitor.slice; ++r) {
        if (slices[r].size > 0) visitor.slice(r, slices[r].base, static_cast<std::size_t>(slices[r].size));
      }
      const std::uint64_t matched = std::min(to, std::max(from, second)) - from;
      gatherColumns(slices, offsets, matched, columns);
      for (std::uint64_t k = from; k < from + matched; ++k) {
        const Column& column = columns[static_cast<std::size_t>(k - from)];
        match.stream = s;
        match.sequence = static_cast<std::size_t>(k);
        match.ranks = column.ranks;
        match.type = column.type;
        match.first_start = column.first;
        match.skew = column.last - column.first;
        match.first_row = column.first_row;
        match.last_row = column.last_row;
        match.type_mismatch = column.type_mismatch;
        match.by_rank.clear();
        for (std::size_t r = 0; r < ranks.size() && match.skew >= kLateSkewNs; ++r) {
          const RankSlice& slice = slices[r];
          if (k - slice.from < slice.size) match.by_rank.emplace_back(r, &slice.base[k - slice.from]);
        }
        if (visitor.match) visitor.match(match);
        ++match.index;
      }
    }
  }
}

}  // namespace cuoverlap::job
