#include "output_file.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <streambuf>
#include <vector>

#include "cuoverlap/error.h"

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

void refuseInputs(const std::string& path, const std::vector<std::string>& inputs) {
  struct stat out {};
  if (::stat(path.c_str(), &out) != 0) return;
  for (const std::string& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
      throw UserError(fmt::format("{}: is the input {}; refusing to overwrite it", path, input));
    }
  }
}

std::string directoryOf(const std::string& path) {
  std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

OutputFile::OutputFile(const std::string& path, const std::vector<std::string>& inputs, bool force)
    : path_(path), display_(path.empty() || path == "-" ? "stdout" : path) {
  fd_ = namedDescriptor(path);
  if (fd_ < 0) {
    refuseInputs(path, inputs);
    struct stat link {};
    struct stat target {};
    const bool exists = ::lstat(path.c_str(), &link) == 0;
    const bool special = exists && ::stat(path.c_str(), &target) == 0 &&
                         (S_ISCHR(target.st_mode) || S_ISFIFO(target.st_mode));
    if (exists && S_ISDIR(link.st_mode)) throw UserError(fmt::format("{}: is a directory", path));
    if (special) {
      fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
      if (fd_ < 0) throw UserError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
    } else {
      if (exists && !force) {
        throw UserError(fmt::format("{}: exists{}; use --force to replace it", path,
                                    S_ISLNK(link.st_mode) ? " (a symbolic link, never followed)" : ""));
      }
      std::string base = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
      temp_ = directoryOf(path) + "/." + base + ".cuoverlap-XXXXXX";
      fd_ = ::mkostemp(temp_.data(), O_CLOEXEC);
      if (fd_ < 0) {
        int error = errno;
        temp_.clear();
        throw UserError(fmt::format("{}: cannot write: {}", path, std::strerror(error)));
      }
      const mode_t mask = ::umask(0);
      ::umask(mask);
      ::fchmod(fd_, 0666 & ~mask);  // as a plain create would; mkstemp makes 0600
    }
    owns_fd_ = true;
  }
  buffer_ = std::make_unique<Buffer>(fd_);
  stream_ = std::make_unique<std::ostream>(buffer_.get());
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
    if (::rename(temp_.c_str(), path_.c_str()) != 0) error = errno;
    else temp_.clear();
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
  fmt::print(stderr, "cuoverlap: wrote {} ({})\n", path, what);
}

}  // namespace cuoverlap::cli
