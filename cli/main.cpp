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
#include "cuoverlap/edit_distance.h"
#include "cuoverlap/error.h"
#include "cuoverlap/inert_text.h"
#include "cuoverlap/temporary_files.h"

namespace {

// Every error line quotes text a user or a trace controls (paths, names, SQLite's messages): one
// inert line of bounded length.
std::string errorText(std::string_view text) { return cuoverlap::inertLine(text, cuoverlap::kMaxErrorLineBytes); }

std::vector<std::string> commandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

// `cuoverlap help [COMMAND]` and unknown commands, before CLI11 parses (it would only say that a
// subcommand is required). Returns an exit code when it answered, -1 to go on.
int answerBeforeParsing(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return -1;
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
  std::string closest;
  std::size_t best = word.size();
  for (const std::string& name : names) {
    const std::size_t distance = cuoverlap::editDistance(word, name);
    if (distance < best) { best = distance; closest = name; }
  }
  if (!closest.empty() && best <= std::max<std::size_t>(2, word.size() / 3)) {
    fmt::print(stderr, "cuoverlap: error: unknown command '{}' (did you mean '{}'? see --help)\n",
               errorText(word), closest);
  } else {
    fmt::print(stderr, "cuoverlap: error: unknown command '{}' (commands: {}; see --help)\n", errorText(word),
               fmt::join(names, ", "));
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  cuoverlap::temporary::installSignalCleanup();
  CLI::App app{"cuoverlap: do your CUDA copies and kernels really overlap, and why not?", "cuoverlap"};
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", CUOVERLAP_VERSION_STRING);
  app.footer("Run 'cuoverlap help COMMAND' or 'cuoverlap COMMAND --help' for a command's options.");
  cuoverlap::cli::CommandResult result;
  cuoverlap::cli::registerAnalyzeCommand(app, result);
  cuoverlap::cli::registerGateCommand(app, result);
  cuoverlap::cli::registerExportCommand(app, result);
  cuoverlap::cli::registerDiffCommand(app, result);
  cuoverlap::cli::registerRecordCommand(app, result);
  cuoverlap::cli::registerRangesCommand(app, result);
  cuoverlap::cli::registerLabCommand(app, result);
  if (const int answered = answerBeforeParsing(app, argc, argv); answered >= 0) return answered;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Usage errors are bad input too: one line, exit 2 (CLI11's own print adds a second line).
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
