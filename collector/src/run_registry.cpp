#include "run_registry.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cuoverlap::collector {
namespace {

bool writeAll(int fd, const std::string& text) {
  if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) return false;
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

std::string RunRegistration::registerTrace(const std::string& run_dir, const std::string& trace_path) {
  std::string pid = std::to_string(getpid());
  std::string temporary = run_dir + "/." + pid + ".lock.new";
  entry_path_ = run_dir + "/" + pid + ".lock";
  int fd = ::open(temporary.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return "cannot register in " + run_dir + ": " + std::strerror(errno);
  // link(), not rename(): an existing PID.lock (a stale entry of a recycled pid, or a file someone
  // else put there) is never replaced; registering fails instead (EEXIST).
  if (flock(fd, LOCK_EX) != 0 || !writeAll(fd, trace_path + "\n") ||
      ::link(temporary.c_str(), entry_path_.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(temporary.c_str());
    return "cannot register in " + run_dir + ": " + why;
  }
  ::unlink(temporary.c_str());
  fd_ = fd;
  return "";
}

void RunRegistration::updateTracePath(const std::string& trace_path) {
  if (fd_ >= 0) writeAll(fd_, trace_path + "\n");
}

void RunRegistration::withdraw() {
  if (fd_ < 0) return;
  ::unlink(entry_path_.c_str());
  release();
}

void RunRegistration::release() {
  if (fd_ < 0) return;
  flock(fd_, LOCK_UN);
  ::close(fd_);
  fd_ = -1;
}

void RunRegistration::closeInForkedChild() {
  // flock locks belong to the open file description shared with the parent: closing the child's
  // copy leaves the parent's lock in place (LOCK_UN here would release the parent's).
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace cuoverlap::collector
