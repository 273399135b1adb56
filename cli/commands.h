// Each subcommand registers itself on the app; main() runs the one the user chose.
// A command's callback reports user errors by throwing cuoverlap::UserError (-> one line, exit 2).
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace CLI { class App; }

namespace cuoverlap::cli {

// The exit code the chosen subcommand wants; set by its callback.
struct CommandResult { int exit_code = 0; };

void registerAnalyzeCommand(CLI::App& app, CommandResult& result);
void registerGateCommand(CLI::App& app, CommandResult& result);
void registerExportCommand(CLI::App& app, CommandResult& result);
void registerDiffCommand(CLI::App& app, CommandResult& result);
void registerRecordCommand(CLI::App& app, CommandResult& result);
void registerRangesCommand(CLI::App& app, CommandResult& result);
void registerLabCommand(CLI::App& app, CommandResult& result);
void registerSummarizeCommand(CLI::App& app, CommandResult& result);

}  // namespace cuoverlap::cli
