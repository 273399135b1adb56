// cuoverlap-lab: runs lab program descriptions (docs/lab.md) on a GPU.
//
//   cuoverlap-lab run FILE [--reps N] [--results OUT.jsonl] [--variants a,b] [--order fixed|shuffle]
//   cuoverlap-lab check FILE            validate only (no GPU)
//
// FILE is one program (a JSON object with "schema") or a corpus: JSON lines
// {"id","seed","shape","variants":{"baseline":PROGRAM,...}}. Every description is validated before
// any GPU work: a bad one is one line naming the step, exit 2. Each program's variants run
// interleaved (rep 1 of every variant, then rep 2, ...), each run in the NVTX range
// `lab ID VARIANT #REP`. Within a rep the variants run baseline first, then by name (`--order
// fixed`, the default), or in an order drawn anew for each rep (`--order shuffle`, repOrder), so
// that no variant is always measured right after the same one. A failed run is reported in the
// results and on stderr; the others go on, and the exit code is 1.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "lab_input.h"
#include "program_run.h"

namespace {

using cuoverlap::lab::LabInput;
using nlohmann::json;

std::set<std::string> splitNames(const std::string& list) {
  std::set<std::string> names;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');)
    if (!name.empty()) names.insert(name);
  return names;
}

int runAll(const std::vector<LabInput>& inputs, int reps, bool shuffle, const std::string& results_path) {
  std::ofstream results;
  if (!results_path.empty()) {
    results.open(results_path);
    if (!results) {
      std::cerr << "error: cannot write " << results_path << "\n";
      return 2;
    }
  }
  std::string device;
  try {
    device = cuoverlap::lab::warmUp();
  } catch (const std::exception& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 1;
  }
  std::cout << "cuoverlap-lab: device " << device << ", " << inputs.size() << " programs, " << reps
            << " reps\n";
  int failed = 0;
  for (const LabInput& input : inputs) {
    for (int rep = 1; rep <= reps; ++rep) {
      for (const std::size_t index : cuoverlap::lab::repOrder(input, rep, shuffle)) {
        const auto& [variant, program] = input.variants[index];
        std::string range = "lab " + input.id + " " + variant + " #" + std::to_string(rep);
        cuoverlap::lab::RunOutcome outcome = cuoverlap::lab::runProgram(program, range);
        json line = {{"id", input.id}, {"variant", variant}, {"rep", rep},
                     {"host_us", outcome.host_us}, {"ok", outcome.ok}};
        if (!outcome.ok) {
          line["error"] = outcome.error;
          std::cerr << "error: " << input.id << " " << variant << " #" << rep << ": " << outcome.error << "\n";
          ++failed;
        }
        if (results) results << line.dump() << "\n" << std::flush;
      }
    }
  }
  std::cout << "cuoverlap-lab: " << failed << " failed runs\n";
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cuoverlap-lab: runs generated CUDA programs (docs/lab.md)"};
  app.require_subcommand(1);
  std::string file, results, variants;
  int reps = 1;
  CLI::App* run = app.add_subcommand("run", "run every program and variant of FILE");
  run->add_option("file", file, "a program (.json) or a corpus (.jsonl)")->required();
  run->add_option("--reps", reps, "runs of each variant")->check(CLI::Range(1, 1000));
  run->add_option("--results", results, "one JSON line per run: id, variant, rep, host_us, ok");
  run->add_option("--variants", variants, "only these variants (comma-separated)");
  std::string order = "fixed";
  run->add_option("--order", order,
                  "the variants' order in each rep: fixed (baseline first, then by name) or shuffle "
                  "(drawn anew for each rep)")
      ->check(CLI::IsMember({"fixed", "shuffle"}));
  CLI::App* check = app.add_subcommand("check", "validate FILE without running it");
  check->add_option("file", file, "a program (.json) or a corpus (.jsonl)")->required();
  CLI11_PARSE(app, argc, argv);

  std::vector<LabInput> inputs;
  try {
    inputs = cuoverlap::lab::readLabInput(file, splitNames(variants));
  } catch (const std::exception& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 2;
  }
  if (check->parsed()) {
    std::size_t count = 0;
    for (const LabInput& input : inputs) count += input.variants.size();
    std::cout << inputs.size() << " programs, " << count << " variants: valid\n";
    return 0;
  }
  return runAll(inputs, reps, order == "shuffle", results);
}
