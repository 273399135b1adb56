// Running the `cuoverlap` binary from tests: its exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "synthetic_trace.h"

namespace cuoverlap::testing {

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `arguments` is pasted into a shell command line: quote paths that need it.
inline CliRun runCli(const std::string& arguments) {
  const std::string out_path = tempTracePath("cli_stdout.txt");
  const std::string err_path = tempTracePath("cli_stderr.txt");
  const std::string command =
      std::string(CUOVERLAP_CLI) + " " + arguments + " >" + out_path + " 2>" + err_path;
  const int status = std::system(command.c_str());
  CliRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = readFile(out_path);
  run.err = readFile(err_path);
  return run;
}

inline std::size_t countOf(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

// Two streams: a 10 us kernel [1 us, 11 us) with a 4 us HtoD copy [2 us, 6 us) hidden under it.
// overlap_ratio = 1 - 10/14 = 0.2857, copy_hidden_fraction = 1, idle 0, pipeline_efficiency 1.
inline std::string writeHiddenCopyTrace(const std::string& name) {
  const std::string path = tempTracePath(name);
  SyntheticTrace trace(path);
  trace.addDevice(0, "Synthetic GPU");
  trace.addRuntimeCall(100, 900, 1, "cudaLaunchKernel");
  trace.addRuntimeCall(1'000, 1'500, 2, "cudaMemcpyAsync");
  trace.addOp({OpKind::kKernel, 1'000, 11'000, CopyKind::kHtoD, 13, 0, 4242, 1, -1, "scale_kernel"});
  trace.addOp({OpKind::kMemcpy, 2'000, 6'000, CopyKind::kHtoD, 14, 0, 4242, 2, 1, ""});
  return path;
}

// One stream: the copy [1 us, 5 us) then the kernel [5 us, 15 us); nothing overlaps.
// overlap_ratio = 0, copy_hidden_fraction = 0, pipeline_efficiency = 10/14 = 0.7143.
inline std::string writeSerialTrace(const std::string& name) {
  const std::string path = tempTracePath(name);
  SyntheticTrace trace(path);
  trace.addDevice(0, "Synthetic GPU");
  trace.addRuntimeCall(100, 900, 1, "cudaMemcpyAsync");
  trace.addRuntimeCall(1'000, 1'500, 2, "cudaLaunchKernel");
  trace.addOp({OpKind::kMemcpy, 1'000, 5'000, CopyKind::kHtoD, 13, 0, 4242, 1, 1, ""});
  trace.addOp({OpKind::kKernel, 5'000, 15'000, CopyKind::kHtoD, 13, 0, 4242, 2, -1, "scale_kernel"});
  return path;
}

}  // namespace cuoverlap::testing
