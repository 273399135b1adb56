// The interpreter's input: one program description, or a corpus of JSON lines
// {"id","seed","shape","variants":{"baseline":PROGRAM, TRANSFORM:PROGRAM,...}} (docs/lab.md).
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "program.h"

namespace cuoverlap::lab {

struct LabInput {
  std::string id;
  std::vector<std::pair<std::string, Program>> variants;  // "baseline" first, then by name
};

// Reads and validates every description of FILE; `only`: the variants to keep (empty: all).
// Throws ProgramError (or std::runtime_error for unreadable files and lines) with one line:
// `g000017: threads[0].steps[3]: copy: unknown buffer "h9" (variant pin-host, line 4)`.
std::vector<LabInput> readLabInput(const std::string& path, const std::set<std::string>& only);

// One corpus line (already parsed); `where` names it in errors ("line 4").
LabInput parseCorpusLine(const nlohmann::json& line, const std::set<std::string>& only,
                         const std::string& where);

// The order in which one rep of `input` runs its variants (indices into input.variants): as listed
// (baseline first, then by name), or with `shuffle` a permutation drawn from a seed of the
// program's id and the rep, the same on every host and run (cuoverlap-lab run --order shuffle).
std::vector<std::size_t> repOrder(const LabInput& input, int rep, bool shuffle);

}  // namespace cuoverlap::lab
