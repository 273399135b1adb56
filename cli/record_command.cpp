// TEMPORARY placeholder while the command is being written; replaced by its owner.
#include <CLI/CLI.hpp>
#include "commands.h"
#include "cuoverlap/error.h"
namespace cuoverlap::cli {
void registerRecordCommand(CLI::App& app, CommandResult&) {
  auto* cmd = app.add_subcommand("record", "(not yet available)");
  cmd->callback([] { throw UserError("'record' is not available in this build yet"); });
}
}  // namespace cuoverlap::cli
