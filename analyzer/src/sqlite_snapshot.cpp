#include "sqlite_snapshot.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <vector>

#include "cuoverlap/error.h"

namespace cuoverlap::sqlite {

namespace {

constexpr int kCopyAttempts = 5;
constexpr std::size_t kWalHeaderBytes = 32;
constexpr std::uint64_t kDefaultMaxLogMib = 256;
constexpr std::uint64_t kDefaultMaxInflateMib = 16384;
constexpr char kSqliteHeader[] = "SQLite format 3";  // 16 bytes with its NUL, as in the file
constexpr const char* kSuffixes[] = {"", "-wal", "-shm", "-journal"};

using Clock = std::chrono::steady_clock;

// Environment variable `name`, a whole number of MiB (1 to 2^30), in bytes; `default_mib` unset.
std::uint64_t mibFromEnvironment(const char* name, std::uint64_t default_mib) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return default_mib << 20;
  char* end = nullptr;
  const unsigned long long mib = std::strtoull(text, &end, 10);
  if (*end != '\0' || mib == 0 || mib > (1ULL << 30)) {
    throw UserError(fmt::format("{}='{}': expected a whole number of MiB (1 to 2^30)", name,
                                std::string(text).substr(0, 40)));
  }
  return static_cast<std::uint64_t>(mib) << 20;
}

// The first two bytes of every gzip member (RFC 1952).
bool gzipMagic(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return false;
  struct stat st {};
  unsigned char head[2] = {};
  ssize_t n = 0;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = ::pread(fd, head, sizeof head, 0);
  ::close(fd);
  return n == 2 && head[0] == 0x1f && head[1] == 0x8b;
}

// gzFile that closes itself.
struct GzFile {
  explicit GzFile(const std::string& path) : file(gzopen(path.c_str(), "rb")) {}
  ~GzFile() {
    if (file != nullptr) gzclose(file);
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;
  gzFile file;
};

std::uint64_t fileSize(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  return static_cast<std::uint64_t>(st.st_size);
}

std::string walHeader(const std::string& path) {
  std::string header(kWalHeaderBytes, '\0');
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  ssize_t n = ::pread(fd, header.data(), header.size(), 0);
  ::close(fd);
  return n > 0 ? header.substr(0, static_cast<std::size_t>(n)) : "";
}

// Copies `from` to `to` (created exclusively) before `deadline`; a missing `from` copies nothing.
// Returns bytes.
std::uint64_t copyFile(const std::string& from, const std::string& to, Clock::time_point deadline) {
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);  // a FIFO never blocks
  if (in < 0) {
    if (errno == ENOENT) return 0;
    throw UserError(fmt::format("{}: cannot open: {}", from, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(in);
    throw UserError(fmt::format("{}: not a regular file", from));
  }
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) {
    int error = errno;
    ::close(in);
    throw UserError(fmt::format("{}: cannot create a private copy: {}", to, std::strerror(error)));
  }
  std::vector<char> buffer(1 << 20);
  std::uint64_t total = 0;
  int error = 0;
  for (;;) {
    if (Clock::now() > deadline) {
      error = ETIMEDOUT;
      break;
    }
    ssize_t n = ::read(in, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : 0;
      break;
    }
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(out, buffer.data() + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        error = errno;
        break;
      }
      done += w;
    }
    if (error != 0) break;
    total += static_cast<std::uint64_t>(n);
  }
  ::close(in);
  if (::close(out) != 0 && error == 0) error = errno;
  if (error == ETIMEDOUT) {
    throw UserError(fmt::format("{}: copying it to read an unfinished trace took longer than the read "
                                "deadline (CUOVERLAP_READ_TIMEOUT)", from));
  }
  if (error != 0) {
    throw UserError(fmt::format("{}: cannot copy to {}: {}", from, to, std::strerror(error)));
  }
  return total;
}

std::string makePrivateDirectory() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                        "/cuoverlap-snapshot-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw UserError(fmt::format("cannot create a private directory {}: {}", pattern,
                                std::strerror(errno)));
  }
  return pattern;
}

// Inflates gzip file `from` into `to` (created exclusively) before `deadline`, at most `limit`
// bytes. Returns bytes.
std::uint64_t inflateFile(const std::string& from, const std::string& to, std::uint64_t limit,
                          Clock::time_point deadline) {
  GzFile in(from);
  if (in.file == nullptr) {
    throw UserError(fmt::format("{}: cannot open: {}", from, std::strerror(errno)));
  }
  gzbuffer(in.file, 1 << 18);
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) {
    throw UserError(fmt::format("{}: cannot create a private copy: {}", to, std::strerror(errno)));
  }
  std::vector<char> buffer(1 << 20);
  std::uint64_t total = 0;
  std::string failure;
  while (failure.empty()) {
    if (Clock::now() > deadline) {
      failure = "inflating it took longer than the read deadline (CUOVERLAP_READ_TIMEOUT)";
      break;
    }
    const int n = gzread(in.file, buffer.data(), static_cast<unsigned>(buffer.size()));
    int code = Z_OK;
    const char* message = gzerror(in.file, &code);
    if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
      failure = code == Z_BUF_ERROR ? "truncated gzip data (unexpected end of file)"
                                    : fmt::format("gzip data is corrupt: {}", message ? message : "?");
      break;
    }
    if (n == 0) break;
    total += static_cast<std::uint64_t>(n);
    if (total > limit) {
      failure = fmt::format("it inflates to more than {} MiB (CUOVERLAP_MAX_INFLATE_MIB raises the bound)",
                            limit >> 20);
      break;
    }
    for (int done = 0; done < n && failure.empty();) {
      ssize_t w = ::write(out, buffer.data() + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        failure = fmt::format("cannot write the inflated copy {}: {}", to, std::strerror(errno));
        break;
      }
      done += static_cast<int>(w);
    }
  }
  if (::close(out) != 0 && failure.empty()) {
    failure = fmt::format("cannot write the inflated copy {}: {}", to, std::strerror(errno));
  }
  if (!failure.empty()) throw UserError(fmt::format("{}: {}", from, failure));
  return total;
}

}  // namespace

bool PrivateSnapshot::gzippedSqlite(const std::string& path) {
  if (!gzipMagic(path)) return false;
  GzFile in(path);
  if (in.file == nullptr) return false;
  char head[sizeof kSqliteHeader] = {};
  return gzread(in.file, head, sizeof head) == static_cast<int>(sizeof head) &&
         std::memcmp(head, kSqliteHeader, sizeof head) == 0;
}

void PrivateSnapshot::makeDirectory() {
  temporary::SignalsBlocked blocked;
  directory_ = makePrivateDirectory();
  database_ = directory_ + "/trace.sqlite";
  registrations_.reserve(1 + std::size(kSuffixes));
  registrations_.emplace_back(directory_, true);
  for (const char* suffix : kSuffixes) registrations_.emplace_back(database_ + suffix, false);
}

PrivateSnapshot::PrivateSnapshot(const std::string& path, Clock::time_point deadline, Inflate)
    : inflated_(true) {
  const std::uint64_t limit = mibFromEnvironment("CUOVERLAP_MAX_INFLATE_MIB", kDefaultMaxInflateMib);
  makeDirectory();
  try {
    inflateFile(path, database_, limit, deadline);
  } catch (...) {
    removeFiles();  // the destructor does not run when the constructor throws
    throw;
  }
}

bool PrivateSnapshot::needed(const std::string& path) {
  return fileSize(path + "-wal") > 0 || fileSize(path + "-journal") > 0;
}

PrivateSnapshot::PrivateSnapshot(const std::string& path, Clock::time_point deadline) {
  if (fileSize(path + "-wal") == 0) log_suffix_ = "-journal";
  const std::string log = path + log_suffix_;
  const std::uint64_t limit = mibFromEnvironment("CUOVERLAP_MAX_LOG_MIB", kDefaultMaxLogMib);
  if (fileSize(log) > limit) {
    throw UserError(fmt::format(
        "{}: an unfinished trace whose {} is {} MiB, more than the {} MiB copied to read it "
        "(CUOVERLAP_MAX_LOG_MIB raises the bound)", path, log_suffix_, fileSize(log) >> 20, limit >> 20));
  }
  makeDirectory();
  try {
    for (int attempt = 0;; ++attempt) {
      const std::string before = walHeader(log);
      copyFile(path, database_, deadline);
      log_bytes_ = copyFile(log, database_ + log_suffix_, deadline);
      if (log_bytes_ > limit) {
        throw UserError(fmt::format("{}: its {} grew past {} MiB while it was copied", path,
                                    log_suffix_, limit >> 20));
      }
      if (walHeader(database_ + log_suffix_) == before) break;
      if (attempt + 1 == kCopyAttempts) {
        throw UserError(fmt::format("{}: the trace changed while it was copied {} times; try again",
                                    path, kCopyAttempts));
      }
      ::unlink(database_.c_str());
      ::unlink((database_ + log_suffix_).c_str());
    }
  } catch (...) {
    removeFiles();  // the destructor does not run when the constructor throws
    throw;
  }
}

PrivateSnapshot::~PrivateSnapshot() { removeFiles(); }

void PrivateSnapshot::removeFiles() {
  for (const char* suffix : kSuffixes) {
    ::unlink((database_ + suffix).c_str());
  }
  ::rmdir(directory_.c_str());
}

}  // namespace cuoverlap::sqlite
