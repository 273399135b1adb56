#include "output_file.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>
#include <streambuf>
#include <vector>

#include "cuoverlap/error.h"
#include "terminal.h"

namespace cuoverlap::cli {

// A streambuf over a descriptor that remembers the first write error (errno).
class OutputFile::Buffer : public std::streambuf {
 public:
  explicit Buffer(int fd) : fd_(fd), data_(1 << 16) { setp(data_.data(), data_.data() + data_.size()); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    for (char* p = pbase(); p < pptr() && error_ == 0;) {
      ssize_t n = ::write(fd_, p, static_cast<std::size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) error_ = n < 0 ? errno : EIO;
      else p += n;
    }
    setp(data_.data(), data_.data() + data_.size());
    return error_ == 0;
  }

  int fd_;
  std::vector<char> data_;
  int error_ = 0;
};

namespace {

// "-", "/dev/stdout", "/dev/fd/N", "/proc/self/fd/N": an already open descriptor, else -1.
int namedDescriptor(const std::string& path) {
  if (path.empty() || path == "-" || path == "/dev/stdout") return STDOUT_FILENO;
  if (path == "/dev/stderr") return STDERR_FILENO;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const std::string p(prefix);
    if (path.compare(0, p.size(), p) != 0 || path.size() == p.size() || path.size() > p.size() + 6) continue;
    if (path.find_first_not_of("0123456789", p.size()) != std::string::npos) continue;
    return std::stoi(path.substr(p.size()));
  }
  return -1;
}

void refuseInput(const std::string& path, const struct stat& out, const std::vector<std::string>& inputs) {
  for (const std::string& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
      throw UserError(fmt::format("{}: is the input {}; refusing to overwrite it", path, input));
    }
  }
}

void refuseInputs(const std::string& path, const std::vector<std::string>& inputs) {
  struct stat out {};
  if (::stat(path.c_str(), &out) == 0) refuseInput(path, out, inputs);
}

// A descriptor given as the output (`-o /proc/self/fd/3 3<>trace.sqlite`) is checked by what it
// is open on, not by its name.
void refuseInputDescriptor(const std::string& path, int fd, const std::vector<std::string>& inputs) {
  struct stat out {};
  if (::fstat(fd, &out) == 0 && S_ISREG(out.st_mode)) refuseInput(path, out, inputs);
}

// Moves `from` to `to` without ever replacing an existing `to`; errno on failure (EEXIST when
// another writer got there first).
int publishNew(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return errno;
  if (::link(from.c_str(), to.c_str()) != 0) return errno;  // a file system without renameat2
  ::unlink(from.c_str());
  return 0;
}

std::string directoryOf(const std::string& path) {
  std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

OutputFile::OutputFile(const std::string& path, const std::vector<std::string>& inputs, bool force)
    : path_(path), display_(path.empty() || path == "-" ? "stdout" : path), replace_(force) {
  fd_ = namedDescriptor(path);
  if (fd_ >= 0) {
    refuseInputDescriptor(display_, fd_, inputs);
  } else {
    refuseInputs(path, inputs);
    struct stat link {};
    const bool exists = ::lstat(path.c_str(), &link) == 0;
    if (exists && S_ISDIR(link.st_mode)) throw UserError(fmt::format("{}: is a directory", path));
    if (exists && (S_ISCHR(link.st_mode) || S_ISFIFO(link.st_mode))) {
      fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
      if (fd_ < 0) throw UserError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
    } else {
      if (exists && !force) {
        throw UserError(fmt::format("{}: exists{}; use --force to replace it", path,
                                    S_ISLNK(link.st_mode) ? " (a symbolic link, never followed)" : ""));
      }
      createTemporary(exists && S_ISREG(link.st_mode) ? std::optional<mode_t>(link.st_mode & 07777)
                                                      : std::nullopt);
    }
    owns_fd_ = true;
  }
  buffer_ = std::make_unique<Buffer>(fd_);
  stream_ = std::make_unique<std::ostream>(buffer_.get());
}

void OutputFile::createTemporary(std::optional<mode_t> mode) {
  std::string base = path_.substr(path_.rfind('/') == std::string::npos ? 0 : path_.rfind('/') + 1);
  temp_ = directoryOf(path_) + "/." + base + ".cuoverlap-XXXXXX";
  {
    temporary::SignalsBlocked blocked;
    fd_ = ::mkostemp(temp_.data(), O_CLOEXEC);
    if (fd_ >= 0) temp_registration_ = temporary::Registration(temp_, false);
  }
  if (fd_ < 0) {
    int error = errno;
    temp_.clear();
    throw UserError(fmt::format("{}: cannot write: {}", path_, std::strerror(error)));
  }
  if (!mode) {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;  // as a plain create would; mkstemp makes 0600
  }
  ::fchmod(fd_, *mode);
}

OutputFile::~OutputFile() {
  if (owns_fd_) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

std::ostream& OutputFile::stream() { return *stream_; }

void OutputFile::commit() {
  stream_->flush();
  int error = buffer_->error();
  if (error == 0 && !*stream_) error = EIO;
  if (error == 0 && !temp_.empty() && ::fsync(fd_) != 0) error = errno;
  if (error == 0 && owns_fd_) {
    const int fd = fd_;
    owns_fd_ = false;
    if (::close(fd) != 0) error = errno;
  }
  if (error == 0 && !temp_.empty()) {
    if (replace_) error = ::rename(temp_.c_str(), path_.c_str()) == 0 ? 0 : errno;
    else error = publishNew(temp_, path_);
    if (error == 0) {
      temp_.clear();
      temp_registration_ = temporary::Registration();  // the name is the output's now
    }
  }
  if (error == EEXIST) {
    throw UserError(fmt::format("{}: exists (written meanwhile by another program); use --force to "
                                "replace it", display_));
  }
  if (error != 0) {
    throw UserError(fmt::format("{}: cannot write: {}", display_, std::strerror(error)));
  }
}

void writeOutput(const std::string& path, const std::vector<std::string>& inputs, bool force,
                 const std::string& text) {
  OutputFile out(path, inputs, force);
  out.stream() << text;
  out.commit();
}

}  // namespace cuoverlap::cli

namespace cuoverlap::cli {

std::string formatForOutput(const std::string& path, const std::string& given,
                            const std::vector<std::string>& allowed) {
  static const std::pair<const char*, const char*> kExtensions[] = {
      {".html", "html"}, {".htm", "html"}, {".md", "markdown"}, {".markdown", "markdown"},
      {".json", "json"}, {".txt", "text"}};
  const std::size_t dot = path.rfind('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return given;
  std::string extension = path.substr(dot);
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& [suffix, format] : kExtensions) {
    if (extension == suffix && std::find(allowed.begin(), allowed.end(), format) != allowed.end()) return format;
  }
  return given;
}

void noteWritten(const OutputFile& out, const std::string& path, const std::string& what) {
  if (out.displayName() == "stdout") return;
  fmt::print(stderr, "cuoverlap: wrote {} ({})\n", stderrText(path), what);
}

}  // namespace cuoverlap::cli
