// TEMPORARY placeholder while the command is being written; replaced by its owner.
#include <CLI/CLI.hpp>
#include "commands.h"
#include "cuoverlap/error.h"
namespace cuoverlap::cli {
void registerExportCommand(CLI::App& app, CommandResult&) {
  auto* cmd = app.add_subcommand("export", "(not yet available)");
  cmd->callback([] { throw UserError("'export' is not available in this build yet"); });
}
}  // namespace cuoverlap::cli
