// cuoverlap: shows whether CUDA copies and kernels overlap, and why not.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <exception>

#include "commands.h"
#include "cuoverlap/error.h"

int main(int argc, char** argv) {
  CLI::App app{"cuoverlap: do your CUDA copies and kernels really overlap, and why not?"};
  app.require_subcommand(1);
  app.set_version_flag("--version", CUOVERLAP_VERSION_STRING);
  cuoverlap::cli::CommandResult result;
  cuoverlap::cli::registerAnalyzeCommand(app, result);
  cuoverlap::cli::registerGateCommand(app, result);
  cuoverlap::cli::registerExportCommand(app, result);
  cuoverlap::cli::registerDiffCommand(app, result);
  cuoverlap::cli::registerRecordCommand(app, result);
  cuoverlap::cli::registerRangesCommand(app, result);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Usage errors are bad input too: one line, exit 2 (CLI11's own print adds a second line).
    fmt::print(stderr, "cuoverlap: error: {} (see --help)\n", e.what());
    return 2;
  } catch (const cuoverlap::UserError& e) {
    fmt::print(stderr, "cuoverlap: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "cuoverlap: internal error: {}\n", e.what());
    return 3;
  }
  return result.exit_code;
}
