// A test binary's scratch directory under /tmp: made on first use, removed with everything in it
// when the binary exits, so repeated test runs leave nothing behind.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace cuoverlap_test {

class ScratchDir {
 public:
  // prefix: the directory's name before mkdtemp's six random characters, e.g. "cuoverlap_job_test_".
  explicit ScratchDir(const std::string& prefix) {
    std::string name = "/tmp/" + prefix + "XXXXXX";
    if (mkdtemp(name.data()) != nullptr) path_ = name;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The binary's one scratch directory (the prefix of its first call names it).
inline const std::string& scratchDir(const std::string& prefix) {
  static const ScratchDir dir(prefix);
  return dir.path();
}

}  // namespace cuoverlap_test
