#include "json_input.h"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>

#include "cuoverlap/error.h"
#include "cuoverlap/progress.h"

namespace cuoverlap::kineto {
namespace {
constexpr std::size_t kChunkBytes = 1 << 20;
}  // namespace

JsonInput::JsonInput(const std::string& path) : buffer_(kChunkBytes) {
  file_ = gzopen(path.c_str(), "rb");
  if (file_ == nullptr) {
    throw UserError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  gzbuffer(file_, 1 << 18);
  pos_ = end_ = buffer_.data();
  refill();
  compressed_ = gzdirect(file_) == 0;
  // A UTF-8 byte order mark (written by some Windows tools) is not JSON text.
  if (end_ - pos_ >= 3 && std::memcmp(pos_, "\xEF\xBB\xBF", 3) == 0) pos_ += 3;
}

JsonInput::~JsonInput() {
  if (file_ != nullptr) gzclose(file_);
}

void JsonInput::refill() {
  consumed_ += static_cast<std::size_t>(end_ - buffer_.data());
  pos_ = end_ = buffer_.data();
  if (!error_.empty()) return;
  const int n = gzread(file_, buffer_.data(), static_cast<unsigned>(buffer_.size()));
  int code = Z_OK;
  const char* message = gzerror(file_, &code);
  if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
    error_ = code == Z_BUF_ERROR ? "truncated gzip data (unexpected end of file)"
                                 : fmt::format("gzip data is corrupt: {}", message ? message : "?");
  }
  if (n > 0) end_ = buffer_.data() + n;
  // Progress in bytes of the file as stored (compressed or not), the unit the reader's phase has:
  // the decompressed size is unknown until the end.
  const z_off_t stored = gzoffset(file_);
  if (stored > 0) progress::done(static_cast<std::uint64_t>(stored));
}

}  // namespace cuoverlap::kineto
