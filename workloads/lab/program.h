// A lab program (docs/lab.md, schema cuoverlap-lab/1) as plain structs: every name resolved to an
// index, every default filled in, every step carrying its path in the description
// (`threads[0].steps[3].body[1]`) so that an error at run time names the step as the parser would.
// Nothing here needs CUDA: the parser and validator are tested on machines without a GPU.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cuoverlap::lab {

enum class BufferKind { kDevice, kPinned, kPageable, kManaged };
enum class StreamKind { kBlocking, kNonBlocking, kLegacy, kPerThread };
enum class StepOp {
  kLoop, kAlloc, kFree, kCopy, kMemset, kKernel, kRecord, kWait, kSync, kHost, kHostRead,
  kGraphLaunch, kPrefetch
};
enum class SyncWhat { kDevice, kStream, kEvent };

// Declared buffers are allocated before the timed range; `alloc`ed ones (declared_ false) by their
// alloc step, inside it, on the one thread that allocates and frees them.
struct Buffer {
  std::string name;
  BufferKind kind = BufferKind::kDevice;
  std::uint64_t bytes = 0;
  bool declared = true;
};

struct Stream {
  std::string name;
  StreamKind kind = StreamKind::kBlocking;
  bool high_priority = false;  // created with the device's greatest priority (created streams only)
};

struct Step {
  StepOp op = StepOp::kHost;
  std::string path;             // where it sits in the description, for error messages
  std::int64_t count = 0;       // loop
  std::vector<Step> body;       // loop
  int buffer = -1;              // alloc, free, memset, kernel (-1: none), host_read, prefetch
  int dst = -1;                 // copy
  int src = -1;                 // copy
  int stream = -1;              // -1: a synchronous copy/memset, or a sync that names none
  int event = -1;
  int graph = -1;
  std::uint64_t bytes = 0;      // copy, memset, alloc
  std::uint64_t dst_offset = 0;
  std::uint64_t src_offset = 0;
  std::uint64_t touch_bytes = 0;  // kernel
  bool async = true;            // copy, memset
  std::int64_t grid = 0;        // kernel
  std::int64_t block = 256;     // kernel
  double us = 0;                // kernel, host
  SyncWhat what = SyncWhat::kDevice;
  bool to_device = true;        // prefetch
};

struct Graph {
  std::string name;
  int stream = -1;
  std::vector<Step> body;
};

struct Thread {
  std::string name;
  std::vector<Step> steps;
};

struct Program {
  std::string id;
  std::vector<Buffer> buffers;  // declared ones first, then every alloc'ed name
  std::vector<Stream> streams;
  std::vector<std::string> events;
  std::vector<Graph> graphs;
  std::vector<Thread> threads;
};

// A description that breaks the schema: what() is one line, `ID: PATH: OP: reason`.
class ProgramError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses and validates one description; throws ProgramError naming the first bad step.
Program parseProgram(const nlohmann::json& description);

const char* bufferKindName(BufferKind kind);
const char* stepOpName(StepOp op);

}  // namespace cuoverlap::lab
