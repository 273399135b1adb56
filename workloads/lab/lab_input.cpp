#include "lab_input.h"

#include <fstream>
#include <sstream>

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

}  // namespace cuoverlap::lab
