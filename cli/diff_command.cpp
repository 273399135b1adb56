// TEMPORARY placeholder while the command is being written; replaced by its owner.
#include <CLI/CLI.hpp>
#include "commands.h"
#include "cuoverlap/error.h"
namespace cuoverlap::cli {
void registerDiffCommand(CLI::App& app, CommandResult&) {
  auto* cmd = app.add_subcommand("diff", "(not yet available)");
  cmd->callback([] { throw UserError("'diff' is not available in this build yet"); });
}
}  // namespace cuoverlap::cli
