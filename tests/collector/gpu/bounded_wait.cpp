#include "bounded_wait.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : text) {
    if (c == '\0') c = ' ';
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::vector<pid_t> numberedEntries(const std::string& directory) {
  std::vector<pid_t> entries;
  DIR* dir = opendir(directory.c_str());
  if (dir == nullptr) return entries;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long value = std::strtol(entry->d_name, &end, 10);
    if (end != entry->d_name && *end == '\0') entries.push_back(static_cast<pid_t>(value));
  }
  closedir(dir);
  return entries;
}

pid_t parentOf(pid_t pid) {
  // /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces, so read after the last ')'.
  std::string stat = readText("/proc/" + std::to_string(pid) + "/stat");
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  pid_t parent = -1;
  rest >> state >> parent;
  return parent;
}

// `root` and every process under it, parents before children.
std::vector<pid_t> processTree(pid_t root) {
  std::vector<pid_t> all = numberedEntries("/proc");
  std::vector<pid_t> tree = {root};
  for (std::size_t i = 0; i < tree.size(); ++i) {
    for (pid_t pid : all) {
      if (parentOf(pid) == tree[i]) tree.push_back(pid);
    }
  }
  return tree;
}

std::string debuggerBacktrace(pid_t pid) {
  for (const char* debugger : {"/usr/bin/gdb", "/usr/local/cuda/bin/cuda-gdb"}) {
    if (access(debugger, X_OK) != 0) continue;
    std::string command = std::string("timeout 60 ") + debugger + " -p " + std::to_string(pid) +
                          " -batch -ex 'thread apply all bt' 2>&1";
    std::string text;
    if (FILE* out = popen(command.c_str(), "r")) {
      char chunk[4096];
      for (std::size_t n; (n = fread(chunk, 1, sizeof chunk, out)) > 0;) text.append(chunk, n);
      pclose(out);
    }
    return text;
  }
  return "(no gdb or cuda-gdb for a backtrace)\n";
}

}  // namespace

std::string describeProcessTree(pid_t root) {
  std::ostringstream out;
  for (pid_t pid : processTree(root)) {
    std::string proc = "/proc/" + std::to_string(pid);
    out << "process " << pid << " (parent " << parentOf(pid) << "): " << readText(proc + "/cmdline") << "\n";
    for (pid_t tid : numberedEntries(proc + "/task")) {
      std::string task = proc + "/task/" + std::to_string(tid);
      out << "  thread " << tid << " " << readText(task + "/comm") << ": wchan " << readText(task + "/wchan")
          << ", syscall " << readText(task + "/syscall") << "\n";
    }
    out << debuggerBacktrace(pid);
  }
  return out.str();
}

int waitBounded(pid_t pid, int seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    std::fprintf(stderr, "still running after %d s, killed; its processes:\n%s", seconds,
                 describeProcessTree(pid).c_str());
    for (pid_t member : processTree(pid)) kill(member, SIGKILL);
    waitpid(pid, &status, 0);
    return kHungExit;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
}
