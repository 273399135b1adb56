#include "cuoverlap/gzip_ostream.h"

#include <zlib.h>

#include <array>
#include <streambuf>

namespace cuoverlap {

// Deflates in chunks of 64 KiB: the input is buffered here, compressed output goes to the sink.
class GzipOStream::Buffer : public std::streambuf {
 public:
  explicit Buffer(std::ostream& sink) : sink_(sink) {
    // windowBits 15 + 16: gzip header and trailer instead of zlib's.
    ok_ = deflateInit2(&zs_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    setp(input_.data(), input_.data() + input_.size());
  }
  ~Buffer() override { deflateEnd(&zs_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  bool finish() {
    if (finished_) return ok_;
    finished_ = true;
    ok_ = ok_ && deflateChunk(Z_FINISH);
    return ok_ && static_cast<bool>(sink_.flush());
  }

 protected:
  int_type overflow(int_type c) override {
    if (!ok_ || finished_ || !deflateChunk(Z_NO_FLUSH)) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }

  int sync() override { return ok_ ? 0 : -1; }

 private:
  // Compresses what is buffered (and with Z_FINISH, the trailer) into the sink.
  bool deflateChunk(int flush) {
    zs_.next_in = reinterpret_cast<Bytef*>(pbase());
    zs_.avail_in = static_cast<uInt>(pptr() - pbase());
    int status = Z_OK;
    do {
      zs_.next_out = reinterpret_cast<Bytef*>(output_.data());
      zs_.avail_out = static_cast<uInt>(output_.size());
      status = deflate(&zs_, flush);
      if (status == Z_STREAM_ERROR) return false;
      sink_.write(output_.data(), static_cast<std::streamsize>(output_.size() - zs_.avail_out));
      if (!sink_) return false;
    } while (zs_.avail_out == 0 || (flush == Z_FINISH && status != Z_STREAM_END));
    setp(input_.data(), input_.data() + input_.size());
    return true;
  }

  std::ostream& sink_;
  z_stream zs_{};
  std::array<char, 1 << 16> input_{};
  std::array<char, 1 << 16> output_{};
  bool ok_ = false;
  bool finished_ = false;
};

GzipOStream::GzipOStream(std::ostream& sink)
    : std::ostream(nullptr), buffer_(std::make_unique<Buffer>(sink)) {
  rdbuf(buffer_.get());
}

GzipOStream::~GzipOStream() = default;

bool GzipOStream::finish() { return !fail() && buffer_->finish(); }

}  // namespace cuoverlap
