#include "lab_input.h"

#include <cstdint>
#include <fstream>
#include <numeric>
#include <sstream>
#include <utility>

namespace cuoverlap::lab {

using nlohmann::json;

LabInput parseCorpusLine(const json& line, const std::set<std::string>& only, const std::string& where) {
  if (!line.is_object() || !line.contains("id") || !line["id"].is_string())
    throw ProgramError(where + ": a corpus line is an object with a string \"id\"");
  LabInput input{line["id"].get<std::string>(), {}};
  if (!line.contains("variants") || !line["variants"].is_object() || !line["variants"].contains("baseline"))
    throw ProgramError(input.id + ": " + where + ": \"variants\" must be an object holding \"baseline\"");
  auto add = [&](const std::string& name, const json& description) {
    if (!only.empty() && !only.count(name)) return;
    try {
      input.variants.emplace_back(name, parseProgram(description));
    } catch (const ProgramError& error) {
      throw ProgramError(std::string(error.what()) + " (variant " + name + ", " + where + ")");
    }
  };
  add("baseline", line["variants"]["baseline"]);
  for (const auto& item : line["variants"].items())
    if (item.key() != "baseline") add(item.key(), item.value());
  return input;
}

std::vector<LabInput> readLabInput(const std::string& path, const std::set<std::string>& only) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream whole;
  whole << in.rdbuf();
  std::string text = whole.str();
  json single = json::parse(text, nullptr, false);
  std::vector<LabInput> inputs;
  if (!single.is_discarded() && single.is_object() && !single.contains("variants")) {
    Program program = parseProgram(single);
    if (only.empty() || only.count("baseline")) inputs.push_back({program.id, {{"baseline", program}}});
    return inputs;
  }
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json parsed = json::parse(line, nullptr, false);
    std::string where = "line " + std::to_string(number);
    if (parsed.is_discarded()) throw std::runtime_error(path + ": " + where + ": not valid JSON");
    LabInput input = parseCorpusLine(parsed, only, where);
    if (!input.variants.empty()) inputs.push_back(std::move(input));
  }
  return inputs;
}

namespace {

// splitmix64: a small generator whose sequence is fixed by its definition (std::shuffle and the
// standard distributions are not, from one standard library to another).
std::uint64_t nextRandom(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<std::size_t> repOrder(const LabInput& input, int rep, bool shuffle) {
  std::vector<std::size_t> order(input.variants.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (!shuffle) return order;
  std::uint64_t state = 0xcbf29ce484222325ULL;  // FNV-1a of the id, then the rep
  for (const unsigned char c : input.id) state = (state ^ c) * 0x100000001b3ULL;
  state ^= static_cast<std::uint64_t>(rep) * 0x9e3779b97f4a7c15ULL;
  state = nextRandom(state);  // mixed once: neighbouring reps' seeds differ in few bits
  for (std::size_t i = order.size(); i > 1; --i) {  // Fisher-Yates
    std::swap(order[i - 1], order[nextRandom(state) % i]);
  }
  return order;
}

}  // namespace cuoverlap::lab
