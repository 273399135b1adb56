// cuoverlap: shows whether CUDA copies and kernels overlap, and why not.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "help_sections.h"
#include "cuoverlap/edit_distance.h"
#include "cuoverlap/error.h"
#include "cuoverlap/temporary_files.h"
#include "terminal.h"

namespace {

// Every error line quotes text a user or a trace controls (paths, names, SQLite's messages): one
// inert line of bounded length.
std::string errorText(std::string_view text) { return cuoverlap::cli::stderrText(text); }

std::vector<std::string> commandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

// The closest of `candidates` to `word`, if close enough to be a typo.
std::string closestTo(const std::string& word, const std::vector<std::string>& candidates) {
  std::string closest;
  std::size_t best = word.size();
  for (const std::string& candidate : candidates) {
    const std::size_t distance = cuoverlap::editDistance(word, candidate);
    if (distance < best) { best = distance; closest = candidate; }
  }
  return !closest.empty() && best <= std::max<std::size_t>(2, word.size() / 3) ? closest : "";
}

// "--fromat" in `cuoverlap analyze x --fromat json`: the closest option of that command.
std::string suggestOption(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return "";
  const CLI::App* command = nullptr;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == argv[1]) command = sub;
  }
  if (command == nullptr) return "";
  std::vector<std::string> names;
  for (const CLI::Option* option : command->get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  for (int i = 2; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.rfind("--", 0) != 0) continue;
    const std::string name = word.substr(0, word.find('='));
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    const std::string closest = closestTo(name, names);
    if (!closest.empty()) return fmt::format("unknown option '{}' (did you mean '{}'? see {} --help)", name, closest, argv[1]);
  }
  return "";
}

// `cuoverlap help [COMMAND]`, bare `cuoverlap` and unknown commands, before CLI11 parses (it would
// only say that a subcommand is required). Returns an exit code when it answered, -1 to go on.
int answerBeforeParsing(CLI::App& app, int argc, char** argv) {
  if (argc < 2) {  // the command list, as `help` prints it; still a usage error
    fmt::print(stderr, "{}", app.help());
    return 2;
  }
  if (argv[1][0] == '-') return -1;
  const std::string word = argv[1];
  const std::vector<std::string> names = commandNames(app);
  if (std::find(names.begin(), names.end(), word) != names.end()) return -1;
  if (word == "help") {
    if (argc == 2) { fmt::print("{}", app.help()); return 0; }
    const std::string topic = argv[2];
    if (std::find(names.begin(), names.end(), topic) != names.end()) {
      fmt::print("{}", app.get_subcommand(topic)->help());
      return 0;
    }
    fmt::print(stderr, "cuoverlap: error: no command '{}' (commands: {})\n", errorText(topic),
               fmt::join(names, ", "));
    return 2;
  }
  const std::string closest = closestTo(word, names);
  if (!closest.empty()) {
    fmt::print(stderr, "cuoverlap: error: unknown command '{}' (did you mean '{}'? see --help)\n",
               errorText(word), closest);
  } else {
    fmt::print(stderr, "cuoverlap: error: unknown command '{}' (commands: {}; see --help)\n", errorText(word),
               fmt::join(names, ", "));
  }
  return 2;
}

// After the commands are registered: each has its own sections (help_sections.h).
void setTopLevelHelp(CLI::App& app) {
  using cuoverlap::cli::HelpRow;
  using cuoverlap::cli::TerminalUse;
  std::vector<HelpRow> environment = cuoverlap::cli::traceEnvironment(TerminalUse::kColourAndProgress);
  environment.push_back({"CUOVERLAP_COLLECTOR", "record: the collector library to inject"});
  cuoverlap::cli::setHelpSections(app, {
      "Traces: cuoverlap traces (record), Nsight Systems SQLite exports (nsys export --type "
      "sqlite), either also gzip-compressed (.sqlite.gz), or PyTorch profiler (Kineto) JSON, "
      ".json or .json.gz.\n"
      "Run 'cuoverlap help COMMAND' or 'cuoverlap COMMAND --help' for a command's options.",
      {{"cuoverlap record -o run.sqlite -- ./app", "record a trace of a CUDA program"},
       {"cuoverlap analyze run.sqlite", "what overlapped, what did not, and why"},
       {"cuoverlap gate run.sqlite --min-overlap 0.3", "fail a CI job when overlap regresses"}},
      {{"0", "success"},
       {"1", "gate: a check failed; diff --fail-on-overlap-drop: overlap fell by more; lab score "
             "--check: a target was missed"},
       {"2", "bad input or usage: one line on stderr"},
       {"3", "internal error"},
       {"N", "record: the recorded program's own exit status"}},
      environment});
}

}  // namespace

int main(int argc, char** argv) {
  cuoverlap::temporary::installSignalCleanup();
  CLI::App app{"cuoverlap: do your CUDA copies and kernels really overlap, and why not?", "cuoverlap"};
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", CUOVERLAP_VERSION_STRING);
  cuoverlap::cli::CommandResult result;
  cuoverlap::cli::registerAnalyzeCommand(app, result);
  cuoverlap::cli::registerGateCommand(app, result);
  cuoverlap::cli::registerExportCommand(app, result);
  cuoverlap::cli::registerDiffCommand(app, result);
  cuoverlap::cli::registerRecordCommand(app, result);
  cuoverlap::cli::registerRangesCommand(app, result);
  cuoverlap::cli::registerLabCommand(app, result);
  cuoverlap::cli::registerSummarizeCommand(app, result);
  setTopLevelHelp(app);
  if (const int answered = answerBeforeParsing(app, argc, argv); answered >= 0) return answered;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Usage errors are bad input too: one line, exit 2 (CLI11's own print adds a second line).
    const std::string suggestion = suggestOption(app, argc, argv);
    if (!suggestion.empty()) {
      fmt::print(stderr, "cuoverlap: error: {}\n", errorText(suggestion));
      return 2;
    }
    fmt::print(stderr, "cuoverlap: error: {} (see --help)\n", errorText(e.what()));
    return 2;
  } catch (const cuoverlap::UserError& e) {
    fmt::print(stderr, "cuoverlap: error: {}\n", errorText(e.what()));
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "cuoverlap: internal error: {}\n", errorText(e.what()));
    return 3;
  }
  // Anything printed through stdio (help, version) must have reached stdout too.
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    fmt::print(stderr, "cuoverlap: error: stdout: cannot write: {}\n", std::strerror(errno));
    return 2;
  }
  return result.exit_code;
}
