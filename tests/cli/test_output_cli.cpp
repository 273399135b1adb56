// One output path for every command (issue 13): outputs never clobber an input, never follow a
// symbolic link, never replace a file without --force, never leave a partial file, and a failed
// write to stdout is exit 2 with the reason.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli_test_support.h"

using namespace cuoverlap::testing;
namespace fs = std::filesystem;

namespace {

void writeText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

void expectError(const CliRun& run, const std::string& fragment) {
  INFO(run.err);
  CHECK(run.exit_code == 2);
  CHECK(countOf(run.err, "\n") == 1);
  CHECK(run.err.find(fragment) != std::string::npos);
}

// Files in the folder of `path` other than `path` itself whose name holds ".cuoverlap-".
std::size_t leftoverTemporaries(const std::string& path) {
  std::size_t count = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path())) {
    count += entry.path().filename().string().find(".cuoverlap-") != std::string::npos ? 1 : 0;
  }
  return count;
}

}  // namespace

TEST_CASE("an output that is one of the inputs is refused, --force or not", "[output]") {
  const std::string trace = writeHiddenCopyTrace("self.sqlite");
  const std::string bytes = readFile(trace);
  expectError(runCli("analyze " + trace + " -o " + trace), "is the input");
  expectError(runCli("analyze " + trace + " -o " + trace + " --force"), "is the input");
  expectError(runCli("export " + trace + " -o " + trace + " --force"), "is the input");
  const std::string other = writeSerialTrace("self_other.sqlite");
  expectError(runCli("diff " + other + " " + trace + " -o " + trace + " --force"), "is the input");
  expectError(runCli("gate " + trace + " --min-overlap 0 --junit " + trace + " --force"),
              "is the input");
  const std::string link = tempTracePath("self_link.json");
  fs::create_symlink(trace, link);
  expectError(runCli("analyze " + trace + " -o " + link + " --force"), "is the input");
  CHECK(readFile(trace) == bytes);
}

TEST_CASE("an existing output is replaced only with --force", "[output]") {
  const std::string trace = writeHiddenCopyTrace("force.sqlite");
  const std::string out = tempTracePath("force.json");
  writeText(out, "keep me");
  expectError(runCli("analyze " + trace + " --format json -o " + out), "use --force");
  CHECK(readFile(out) == "keep me");
  REQUIRE(runCli("analyze " + trace + " --format json -o " + out + " --force").exit_code == 0);
  CHECK(readFile(out).find("\"schema\"") != std::string::npos);
  const std::string junit = tempTracePath("force.xml");
  writeText(junit, "old");
  expectError(runCli("gate " + trace + " --min-overlap 0 --junit " + junit), "use --force");
  CHECK(runCli("gate " + trace + " --min-overlap 0 --junit " + junit + " --force").exit_code == 0);
  CHECK(readFile(junit).find("<testsuites") != std::string::npos);
}

TEST_CASE("a symbolic link at the output path is never followed", "[output]") {
  const std::string trace = writeHiddenCopyTrace("link.sqlite");
  const std::string victim = tempTracePath("victim.txt");
  writeText(victim, "precious");
  const std::string link = tempTracePath("link.json");
  fs::create_symlink(victim, link);
  expectError(runCli("analyze " + trace + " -o " + link), "symbolic link");
  CHECK(readFile(victim) == "precious");
  REQUIRE(runCli("analyze " + trace + " -o " + link + " --force").exit_code == 0);
  CHECK(readFile(victim) == "precious");  // the link was replaced, not its target
  CHECK(!fs::is_symlink(link));
}

TEST_CASE("an error leaves no partial output and no temporary file", "[output]") {
  const std::string trace = writeHiddenCopyTrace("partial.sqlite");
  const std::string out = tempTracePath("partial.json");
  expectError(runCli("analyze " + trace + " /nonexistent.sqlite -o " + out), "nonexistent");
  CHECK(!fs::exists(out));
  CHECK(leftoverTemporaries(out) == 0);
  expectError(runCli("export /nonexistent.sqlite -o " + out), "nonexistent");
  CHECK(!fs::exists(out));
  CHECK(leftoverTemporaries(out) == 0);
}

TEST_CASE("stdout spellings still work", "[output]") {
  const std::string trace = writeHiddenCopyTrace("stdout.sqlite");
  const CliRun dev = runCli("analyze " + trace + " -o /dev/stdout");
  CHECK(dev.exit_code == 0);
  CHECK(dev.out.find("overlap") != std::string::npos);
  const CliRun dash = runCli("export " + trace + " -o -");
  CHECK(dash.exit_code == 0);
  CHECK(dash.out.find("traceEvents") != std::string::npos);
  CHECK(runCli("analyze " + trace + " -o /dev/null").exit_code == 0);
}

TEST_CASE("a failed write is exit 2 with errno's reason, never exit 0", "[output]") {
  if (!fs::exists("/dev/full")) return;
  const std::string trace = writeHiddenCopyTrace("full.sqlite");
  for (const std::string& command :
       {"analyze " + trace, "analyze --format json " + trace, "export " + trace,
        "diff " + trace + " " + trace, "gate " + trace + " --min-overlap 0"}) {
    const std::string err = tempTracePath("full_err.txt");
    const int status = std::system((std::string(CUOVERLAP_CLI) + " " + command +
                                    " >/dev/full 2>" + err).c_str());
    INFO(command << "\n" << readFile(err));
    CHECK(WEXITSTATUS(status) == 2);
    CHECK(readFile(err).find("No space left on device") != std::string::npos);
  }
  expectError(runCli("export " + trace + " -o /dev/full"), "No space left on device");
}
