// One output path for every command (analyze -o, export -o, diff -o, gate --junit, and reports on
// stdout). The rules, so that no output clobbers an input or leaves a partial file:
//  - "" and "-" (and /dev/stdout, /dev/fd/N, /proc/self/fd/N) write to the already open descriptor;
//  - a path or descriptor that is one of the inputs (same device and inode, links followed) is
//    refused, --force or not;
//  - an existing path (a file, or a symbolic link: it is never followed, whatever it points to)
//    is replaced only with --force, and then the link itself is replaced, not the file it points
//    to; a replaced file keeps its permission bits;
//  - a path that is itself a device or a FIFO (/dev/null, a named pipe) is written in place;
//  - anything else is written to a temporary file in the target directory and moved to the
//    path by commit(): an error (or an exception before commit) leaves no partial file, and a
//    signal removes the temporary file too (cuoverlap/temporary_files.h). Without --force the
//    move never replaces a file (renameat2 RENAME_NOREPLACE, or link() where the file system
//    lacks it): of two writers racing to one new path, one wins and the other gets "exists";
//  - every write and the final flush are checked: a failure (a full disk, `> /dev/full`, a closed
//    pipe) is a UserError naming the path and errno's reason, never a silent exit 0.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cuoverlap/temporary_files.h"

namespace cuoverlap::cli {

class OutputFile {
 public:
  OutputFile(const std::string& path, const std::vector<std::string>& inputs, bool force);
  ~OutputFile();  // removes the temporary file unless commit() succeeded
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream();
  void commit();  // flush, check, rename into place; throws UserError
  const std::string& displayName() const { return display_; }

 private:
  class Buffer;
  void createTemporary(std::optional<mode_t> mode);  // mode: the replaced file's, else umask's
  std::string path_;
  std::string display_;
  std::string temp_;  // empty when writing in place
  temporary::Registration temp_registration_;
  bool replace_ = false;  // --force: commit() may replace an existing file
  int fd_ = -1;
  bool owns_fd_ = false;
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> stream_;
};

// The report format an output name asks for: .html/.htm -> html, .md/.markdown -> markdown,
// .json -> json, .txt -> text, if `allowed` holds it; else `given`. Used when --format was not given.
std::string formatForOutput(const std::string& path, const std::string& given,
                            const std::vector<std::string>& allowed);

// "cuoverlap: wrote PATH (FORMAT)" on stderr, unless the output is stdout.
void noteWritten(const OutputFile& out, const std::string& path, const std::string& what);

// Writes `text` through an OutputFile and commits it.
void writeOutput(const std::string& path, const std::vector<std::string>& inputs, bool force,
                 const std::string& text);

}  // namespace cuoverlap::cli
