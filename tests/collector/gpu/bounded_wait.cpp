#include "bounded_wait.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
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

struct Mapping {
  std::uintptr_t start = 0, end = 0, offset = 0;
  bool executable = false;
  std::string path;
};

std::vector<Mapping> mappingsOf(pid_t pid) {
  std::vector<Mapping> mappings;
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    std::istringstream fields(line);
    Mapping m;
    char dash = 0;
    std::string permissions, device, inode;
    fields >> std::hex >> m.start >> dash >> m.end >> permissions >> m.offset >> device >> inode;
    std::getline(fields >> std::ws, m.path);
    m.executable = permissions.size() > 2 && permissions[2] == 'x';
    mappings.push_back(m);
  }
  return mappings;
}

// "PATH+0xADDRESS" for an address, "?" outside every mapping. ADDRESS is relative to where the
// file is loaded (its mapping at file offset 0): the address nm, addr2line and gdb use. A file
// offset would not do: a library's data lies one page or more past its offset in the file.
std::string whereIs(const std::vector<Mapping>& mappings, std::uintptr_t address) {
  for (const Mapping& m : mappings) {
    if (m.start <= address && address < m.end) {
      std::uintptr_t base = m.start - m.offset;
      for (const Mapping& first : mappings) {
        if (!m.path.empty() && first.path == m.path && first.offset == 0) {
          base = first.start;
          break;
        }
      }
      char relative[32];
      std::snprintf(relative, sizeof relative, "+0x%jx", static_cast<std::uintmax_t>(address - base));
      return (m.path.empty() ? std::string("[anonymous]") : m.path) + relative;
    }
  }
  return "?";
}

// Without a debugger's symbols: where a thread waits (a futex's word, the program counter) and
// the words on its stack that point into executable mappings (return addresses, mostly).
std::string rawStack(pid_t pid, pid_t tid) {
  std::istringstream syscall(readText("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/syscall"));
  std::vector<std::string> fields;
  for (std::string field; syscall >> field;) fields.push_back(field);
  if (fields.size() < 3) return "";
  const std::vector<Mapping> mappings = mappingsOf(pid);
  const auto number = [](const std::string& text) { return static_cast<std::uintptr_t>(std::strtoull(text.c_str(), nullptr, 16)); };
  std::ostringstream out;
  if (fields[0] == "202") out << "    futex word at " << whereIs(mappings, number(fields[1])) << "\n";
  out << "    pc at " << whereIs(mappings, number(fields.back())) << "\n";
  const std::uintptr_t sp = number(fields[fields.size() - 2]);
  // Page by page: a read past the stack's end fails as a whole.
  std::vector<std::uintptr_t> words;
  std::ifstream memory("/proc/" + std::to_string(pid) + "/mem", std::ios::binary);
  for (std::uintptr_t page = sp; words.size() < 16384; page += 4096 - page % 4096) {
    std::vector<std::uintptr_t> chunk((4096 - page % 4096) / sizeof(std::uintptr_t));
    memory.clear();
    memory.seekg(static_cast<std::streamoff>(page));
    memory.read(reinterpret_cast<char*>(chunk.data()), static_cast<std::streamsize>(chunk.size() * sizeof(std::uintptr_t)));
    if (memory.gcount() <= 0) break;
    words.insert(words.end(), chunk.begin(), chunk.begin() + memory.gcount() / static_cast<std::streamsize>(sizeof(std::uintptr_t)));
  }
  const std::size_t read = words.size();
  int shown = 0;
  for (std::size_t i = 0; i < read && shown < 48; ++i) {
    for (const Mapping& m : mappings) {
      if (m.executable && m.start <= words[i] && words[i] < m.end) {
        out << "    stack+0x" << std::hex << i * sizeof(std::uintptr_t) << std::dec << " " << whereIs(mappings, words[i]) << "\n";
        ++shown;
        break;
      }
    }
  }
  return out.str();
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
          << ", syscall " << readText(task + "/syscall") << "\n" << rawStack(pid, tid);
    }
    out << debuggerBacktrace(pid);
  }
  return out.str();
}

int waitBounded(pid_t pid, int seconds) {
  if (const char* text = std::getenv("CUOVERLAP_TEST_HANG_S")) seconds = std::max(1, std::atoi(text));
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
