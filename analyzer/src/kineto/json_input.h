// A RapidJSON input stream over a plain or gzip-compressed file, read in fixed-size chunks: memory
// stays constant whatever the file size. zlib's gzread passes plain files through unchanged, so
// one stream serves `.json` and `.json.gz` alike. Each chunk reports the bytes of the file read so
// far to the current progress phase (cuoverlap/progress.h).
#pragma once

#include <zlib.h>

#include <cstddef>
#include <string>
#include <vector>

namespace cuoverlap::kineto {

class JsonInput {
 public:
  using Ch = char;

  explicit JsonInput(const std::string& path);  // throws UserError when the file cannot be opened
  ~JsonInput();
  JsonInput(const JsonInput&) = delete;
  JsonInput& operator=(const JsonInput&) = delete;

  Ch Peek() const { return pos_ < end_ ? *pos_ : '\0'; }
  Ch Take() {
    if (pos_ >= end_) return '\0';
    Ch c = *pos_++;
    if (pos_ == end_) refill();
    return c;
  }
  std::size_t Tell() const { return consumed_ + static_cast<std::size_t>(pos_ - buffer_.data()); }

  // Write interface RapidJSON requires of a stream type; never called by the reader.
  Ch* PutBegin() { return nullptr; }
  void Put(Ch) {}
  void Flush() {}
  std::size_t PutEnd(Ch*) { return 0; }

  // Non-empty when decompression or reading failed (a truncated or corrupt gzip member): the
  // parse error that follows is a consequence, this is the cause.
  const std::string& error() const { return error_; }
  bool compressed() const { return compressed_; }
  std::size_t bytesRead() const { return consumed_ + static_cast<std::size_t>(end_ - buffer_.data()); }

 private:
  void refill();

  gzFile file_ = nullptr;
  std::vector<char> buffer_;
  const char* pos_ = nullptr;
  const char* end_ = nullptr;
  std::size_t consumed_ = 0;  // bytes before buffer_[0]
  bool compressed_ = false;
  std::string error_;
};

}  // namespace cuoverlap::kineto
