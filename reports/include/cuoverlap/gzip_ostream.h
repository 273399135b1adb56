// An output stream that gzips what is written to it into another stream (zlib, gzip framing), for
// `export -o trace.json.gz`: ui.perfetto.dev, chrome://tracing and HTA open .json.gz directly.
#pragma once

#include <memory>
#include <ostream>

namespace cuoverlap {

class GzipOStream : public std::ostream {
 public:
  explicit GzipOStream(std::ostream& sink);
  ~GzipOStream() override;
  GzipOStream(const GzipOStream&) = delete;
  GzipOStream& operator=(const GzipOStream&) = delete;

  // Writes the gzip trailer and flushes the sink; false when compression or a write failed.
  // Without it the output is a truncated gzip stream.
  bool finish();

 private:
  class Buffer;
  std::unique_ptr<Buffer> buffer_;
};

}  // namespace cuoverlap
