// Streams a Kineto (PyTorch profiler) trace file through RapidJSON's SAX reader: the top-level
// object's traceEvents, deviceProperties and distributedInfo reach an EventSink one at a time,
// every other member is skipped without being stored. Memory is one RawEvent and the parser's
// nesting stack, whatever the file size.
#pragma once

#include <string>

#include "raw_event.h"

namespace cuoverlap::kineto {

struct ParseStats {
  std::uint64_t events = 0;   // objects in traceEvents
  std::uint64_t bytes = 0;    // bytes of JSON text read (after decompression)
  bool compressed = false;
};

// Throws UserError with one line naming the file for unreadable files, truncated or corrupt
// gzip, malformed JSON, a top level that is not an object, and a missing traceEvents array.
ParseStats parseTraceFile(const std::string& path, EventSink& sink);

}  // namespace cuoverlap::kineto
