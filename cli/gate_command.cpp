// TEMPORARY placeholder while the command is being written; replaced by its owner.
#include <CLI/CLI.hpp>
#include "commands.h"
#include "cuoverlap/error.h"
namespace cuoverlap::cli {
void registerGateCommand(CLI::App& app, CommandResult&) {
  auto* cmd = app.add_subcommand("gate", "(not yet available)");
  cmd->callback([] { throw UserError("'gate' is not available in this build yet"); });
}
}  // namespace cuoverlap::cli
