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
#include <set>

#include <fmt/format.h>

#include "job_internal.h"

namespace cuoverlap::job {
namespace {

constexpr Ns kSameClockSpreadNs = 1'000'000'000;

const RankCollective* firstCollective(const RankTimeline& rank) {
  return rank.streams.empty() ? nullptr : &rank.streams.front().collectives.front();
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

std::vector<Match> matchCollectives(const std::vector<RankTimeline>& ranks,
                                    const std::vector<Ns>& offsets) {
  std::size_t streams = 0;
  for (const RankTimeline& rank : ranks) streams = std::max(streams, rank.streams.size());
  std::vector<Match> matches;
  for (std::size_t s = 0; s < streams; ++s) {
    for (std::size_t k = 0;; ++k) {
      Match match;
      match.stream = s;
      match.sequence = k;
      for (std::size_t r = 0; r < ranks.size(); ++r) {
        if (s < ranks[r].streams.size() && k < ranks[r].streams[s].collectives.size()) {
          match.by_rank.emplace_back(r, &ranks[r].streams[s].collectives[k]);
        }
      }
      if (match.by_rank.size() < 2) break;
      Ns first = 0, last = 0;
      for (std::size_t i = 0; i < match.by_rank.size(); ++i) {
        const auto& [row, c] = match.by_rank[i];
        const Ns start = c->start - offsets[row];
        if (i == 0 || start < first) { first = start; match.first_row = row; }
        if (i == 0 || start > last) { last = start; match.last_row = row; }
        match.type_mismatch |= c->type != match.by_rank.front().second->type;
      }
      match.first_start = first;
      match.skew = last - first;
      matches.push_back(std::move(match));
    }
  }
  return matches;
}

}  // namespace cuoverlap::job
