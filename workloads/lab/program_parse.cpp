// Description -> Program: names resolved to indices, defaults filled in, each field checked where it
// is read. The alloc/free pairing is a second walk over the resolved steps (program_pairing.cpp).
#include <cmath>
#include <map>
#include <set>

#include "program.h"
#include "program_checks.h"

namespace cuoverlap::lab {
namespace {

using nlohmann::json;

const std::map<std::string, StepOp> kOps = {
    {"loop", StepOp::kLoop},       {"alloc", StepOp::kAlloc},     {"free", StepOp::kFree},
    {"copy", StepOp::kCopy},       {"memset", StepOp::kMemset},   {"kernel", StepOp::kKernel},
    {"record", StepOp::kRecord},   {"wait", StepOp::kWait},       {"sync", StepOp::kSync},
    {"host", StepOp::kHost},       {"host_read", StepOp::kHostRead},
    {"graph_launch", StepOp::kGraphLaunch}, {"prefetch", StepOp::kPrefetch}};

// The fields each op reads; any other (except annotations starting with "_") is a typo.
const std::map<StepOp, std::set<std::string>> kFields = {
    {StepOp::kLoop, {"count", "body"}},
    {StepOp::kAlloc, {"buffer", "kind", "bytes"}},
    {StepOp::kFree, {"buffer"}},
    {StepOp::kCopy, {"dst", "src", "bytes", "stream", "async", "dst_offset", "src_offset"}},
    {StepOp::kMemset, {"buffer", "bytes", "stream", "async"}},
    {StepOp::kKernel, {"stream", "grid", "block", "us", "buffer", "touch_bytes"}},
    {StepOp::kRecord, {"event", "stream"}},
    {StepOp::kWait, {"event", "stream"}},
    {StepOp::kSync, {"what", "stream", "event"}},
    {StepOp::kHost, {"us"}},
    {StepOp::kHostRead, {"buffer"}},
    {StepOp::kGraphLaunch, {"graph", "stream"}},
    {StepOp::kPrefetch, {"buffer", "to", "stream"}}};

const std::map<std::string, BufferKind> kBufferKinds = {{"device", BufferKind::kDevice},
                                                        {"pinned", BufferKind::kPinned},
                                                        {"pageable", BufferKind::kPageable},
                                                        {"managed", BufferKind::kManaged}};
const std::map<std::string, StreamKind> kStreamKinds = {{"blocking", StreamKind::kBlocking},
                                                        {"nonblocking", StreamKind::kNonBlocking},
                                                        {"legacy", StreamKind::kLegacy},
                                                        {"per-thread", StreamKind::kPerThread}};

class Parser {
 public:
  explicit Parser(const json& doc) : doc_(doc) {}

  Program parse() {
    if (!doc_.is_object()) throw ProgramError("<program>: a description is a JSON object");
    Fields top(doc_, "", "", {});
    program_.id = doc_.contains("id") && doc_["id"].is_string() ? doc_["id"].get<std::string>() : "<no id>";
    top.setContext(program_.id);
    if (top.text("schema") != "cuoverlap-lab/1")
      top.fail("schema: \"" + top.text("schema") + "\" is not cuoverlap-lab/1");
    top.text("id");
    parseBuffers(top);
    parseNamed(top, "streams", {"name", "kind", "priority"}, [&](Fields& f) {
      Stream stream{f.text("name"), f.choice("kind", kStreamKinds)};
      if (f.has("priority")) {
        if (f.text("priority") != "high") f.fail("priority: \"" + f.text("priority") + "\" is not high");
        if (stream.kind != StreamKind::kBlocking && stream.kind != StreamKind::kNonBlocking)
          f.fail("priority: only a created (blocking or nonblocking) stream has a priority");
        stream.high_priority = true;
      }
      program_.streams.push_back(stream);
      return program_.streams.back().name;
    }, streams_);
    parseNamed(top, "events", {"name"}, [&](Fields& f) {
      program_.events.push_back(f.text("name"));
      return program_.events.back();
    }, events_);
    parseNamed(top, "graphs", {"name", "stream", "body"}, [&](Fields& f) { return parseGraph(f); }, graphs_);
    const json& threads = top.array("threads");
    if (threads.empty()) top.fail("threads: a program has at least one thread");
    std::set<std::string> names;
    for (std::size_t i = 0; i < threads.size(); ++i) {
      Fields f(threads[i], program_.id, "threads[" + std::to_string(i) + "]", {"name", "steps"});
      Thread thread{f.text("name"), {}};
      if (!names.insert(thread.name).second) f.fail("duplicate thread name \"" + thread.name + "\"");
      thread_ = static_cast<int>(i);
      thread.steps = parseSteps(f.array("steps"), f.path() + ".steps");
      program_.threads.push_back(std::move(thread));
    }
    checkAllocPairing(program_, allocOwner_);
    return std::move(program_);
  }

 private:
  template <typename ParseOne>
  void parseNamed(Fields& top, const char* list, std::set<std::string> keys, ParseOne parseOne,
                  std::map<std::string, int>& index) {
    if (!doc_.contains(list)) return;
    const json& items = top.array(list);
    for (std::size_t i = 0; i < items.size(); ++i) {
      Fields f(items[i], program_.id, std::string(list) + "[" + std::to_string(i) + "]", keys);
      std::string name = parseOne(f);
      if (!index.emplace(name, static_cast<int>(i)).second) f.fail("duplicate name \"" + name + "\"");
    }
  }

  void parseBuffers(Fields& top) {
    if (!doc_.contains("buffers")) return;
    const json& items = top.array("buffers");
    for (std::size_t i = 0; i < items.size(); ++i) {
      Fields f(items[i], program_.id, "buffers[" + std::to_string(i) + "]", {"name", "kind", "bytes"});
      Buffer buffer{f.text("name"), f.choice("kind", kBufferKinds), f.positive("bytes"), true};
      if (!buffers_.emplace(buffer.name, static_cast<int>(program_.buffers.size())).second)
        f.fail("duplicate name \"" + buffer.name + "\"");
      program_.buffers.push_back(buffer);
    }
  }

  std::string parseGraph(Fields& f) {
    Graph graph{f.text("name"), lookup(f, "stream", streams_, "stream"), {}};
    if (program_.streams[graph.stream].kind == StreamKind::kLegacy)
      f.fail("stream: the legacy default stream cannot be captured");
    thread_ = -1;
    graph.body = parseSteps(f.array("body"), f.path() + ".body");
    for (const Step& step : graph.body) {
      bool stream_op = step.op == StepOp::kKernel ||
                       ((step.op == StepOp::kCopy || step.op == StepOp::kMemset) && step.async);
      if (!stream_op) throw ProgramError(program_.id + ": " + step.path + ": " + stepOpName(step.op) +
                                         ": a graph body holds only kernel, async copy and async memset steps");
      if (step.stream != graph.stream)
        throw ProgramError(program_.id + ": " + step.path + ": " + stepOpName(step.op) +
                           ": not on the graph's stream \"" + program_.streams[graph.stream].name + "\"");
    }
    program_.graphs.push_back(std::move(graph));
    return program_.graphs.back().name;
  }

  std::vector<Step> parseSteps(const json& items, const std::string& path) {
    std::vector<Step> steps;
    for (std::size_t i = 0; i < items.size(); ++i)
      steps.push_back(parseStep(items[i], path + "[" + std::to_string(i) + "]"));
    return steps;
  }

  Step parseStep(const json& item, const std::string& path) {
    Fields probe(item, program_.id, path, {});
    std::string op_name = probe.text("op");
    auto op = kOps.find(op_name);
    if (op == kOps.end()) probe.fail("unknown op \"" + op_name + "\"");
    std::set<std::string> keys = kFields.at(op->second);
    keys.insert("op");
    Fields f(item, program_.id, path, keys, op_name);
    Step step;
    step.op = op->second;
    step.path = path;
    switch (step.op) {
      case StepOp::kLoop:
        step.count = f.integer("count", 0);
        step.body = parseSteps(f.array("body"), path + ".body");
        break;
      case StepOp::kAlloc: parseAlloc(f, step); break;
      case StepOp::kFree:
        step.buffer = buffer(f, "buffer");
        if (program_.buffers[step.buffer].declared)
          f.fail("buffer \"" + program_.buffers[step.buffer].name + "\" is declared, not alloc'ed");
        break;
      case StepOp::kCopy: parseCopy(f, step); break;
      case StepOp::kMemset:
        step.buffer = buffer(f, "buffer");
        step.bytes = f.positive("bytes");
        step.async = f.flag("async", true);
        step.stream = step.async || f.has("stream") ? lookup(f, "stream", streams_, "stream") : -1;
        f.within(step.bytes, 0, program_.buffers[step.buffer], "");
        notKind(f, step.buffer, BufferKind::kPageable, "a memset cannot write pageable host memory");
        break;
      case StepOp::kKernel: parseKernel(f, step); break;
      case StepOp::kRecord:
      case StepOp::kWait:
        step.event = lookup(f, "event", events_, "event");
        step.stream = lookup(f, "stream", streams_, "stream");
        break;
      case StepOp::kSync: parseSync(f, step); break;
      case StepOp::kHost: step.us = f.number("us", 0); break;
      case StepOp::kHostRead:
        step.buffer = buffer(f, "buffer");
        notKind(f, step.buffer, BufferKind::kDevice, "the host cannot read device memory");
        break;
      case StepOp::kGraphLaunch:
        step.graph = lookup(f, "graph", graphs_, "graph");
        step.stream = lookup(f, "stream", streams_, "stream");
        break;
      case StepOp::kPrefetch:
        step.buffer = buffer(f, "buffer");
        if (program_.buffers[step.buffer].kind != BufferKind::kManaged)
          f.fail("buffer \"" + program_.buffers[step.buffer].name + "\" is not managed memory");
        step.to_device = f.choice("to", std::map<std::string, bool>{{"device", true}, {"host", false}}, "device");
        step.stream = lookup(f, "stream", streams_, "stream");
        break;
    }
    return step;
  }

  void parseAlloc(Fields& f, Step& step) {
    std::string name = f.text("buffer");
    BufferKind kind = f.choice("kind", kBufferKinds);
    std::uint64_t bytes = f.positive("bytes");
    if (thread_ < 0) f.fail("alloc is not a stream step");
    auto found = buffers_.find(name);
    if (found == buffers_.end()) {
      found = buffers_.emplace(name, static_cast<int>(program_.buffers.size())).first;
      program_.buffers.push_back({name, kind, bytes, false});
      allocOwner_[found->second] = thread_;
    }
    const Buffer& known = program_.buffers[found->second];
    if (known.declared) f.fail("buffer \"" + name + "\" is declared in buffers");
    if (known.kind != kind || known.bytes != bytes)
      f.fail("buffer \"" + name + "\" is alloc'ed elsewhere with another kind or size");
    if (allocOwner_[found->second] != thread_)
      f.fail("buffer \"" + name + "\" is alloc'ed by another thread");
    step.buffer = found->second;
    step.bytes = bytes;
  }

  void parseCopy(Fields& f, Step& step) {
    step.dst = buffer(f, "dst");
    step.src = buffer(f, "src");
    step.bytes = f.positive("bytes");
    step.dst_offset = f.unsignedOr("dst_offset", 0);
    step.src_offset = f.unsignedOr("src_offset", 0);
    step.async = f.flag("async", true);
    step.stream = step.async || f.has("stream") ? lookup(f, "stream", streams_, "stream") : -1;
    f.within(step.bytes, step.dst_offset, program_.buffers[step.dst], "dst_offset");
    f.within(step.bytes, step.src_offset, program_.buffers[step.src], "src_offset");
  }

  void parseKernel(Fields& f, Step& step) {
    step.stream = lookup(f, "stream", streams_, "stream");
    step.grid = f.integer("grid", 1);
    if (step.grid > 2147483647) f.fail("grid: " + std::to_string(step.grid) + " blocks is over 2^31-1");
    step.block = f.has("block") ? f.integer("block", 1) : 256;
    if (step.block > 1024) f.fail("block: " + std::to_string(step.block) + " threads is over 1024");
    step.us = f.number("us", 0);
    if (f.has("buffer")) {
      step.buffer = buffer(f, "buffer");
      const Buffer& target = program_.buffers[step.buffer];
      notKind(f, step.buffer, BufferKind::kPageable, "a kernel cannot touch pageable host memory");
      step.touch_bytes = f.has("touch_bytes") ? f.unsignedOr("touch_bytes", 0) : target.bytes;
      f.within(step.touch_bytes, 0, target, "");
    } else if (f.has("touch_bytes")) {
      f.fail("touch_bytes without a buffer");
    }
  }

  void parseSync(Fields& f, Step& step) {
    step.what = f.choice("what", std::map<std::string, SyncWhat>{
                                     {"device", SyncWhat::kDevice}, {"stream", SyncWhat::kStream},
                                     {"event", SyncWhat::kEvent}});
    if (step.what == SyncWhat::kStream) step.stream = lookup(f, "stream", streams_, "stream");
    if (step.what == SyncWhat::kEvent) step.event = lookup(f, "event", events_, "event");
  }

  int buffer(Fields& f, const char* key) { return lookup(f, key, buffers_, "buffer"); }

  int lookup(Fields& f, const char* key, const std::map<std::string, int>& index, const char* what) {
    std::string name = f.text(key);
    auto found = index.find(name);
    if (found == index.end()) f.fail(std::string("unknown ") + what + " \"" + name + "\"");
    return found->second;
  }

  void notKind(Fields& f, int index, BufferKind kind, const char* why) {
    if (program_.buffers[index].kind == kind)
      f.fail("buffer \"" + program_.buffers[index].name + "\": " + why);
  }

  const json& doc_;
  Program program_;
  std::map<std::string, int> buffers_, streams_, events_, graphs_;
  std::map<int, int> allocOwner_;  // alloc'ed buffer -> the thread that allocates it
  int thread_ = -1;                // the thread being parsed; -1 in a graph body
};

}  // namespace

Program parseProgram(const nlohmann::json& description) { return Parser(description).parse(); }

const char* bufferKindName(BufferKind kind) {
  switch (kind) {
    case BufferKind::kDevice: return "device";
    case BufferKind::kPinned: return "pinned";
    case BufferKind::kPageable: return "pageable";
    case BufferKind::kManaged: return "managed";
  }
  return "?";
}

const char* stepOpName(StepOp op) {
  for (const auto& [name, value] : kOps)
    if (value == op) return name.c_str();
  return "?";
}

}  // namespace cuoverlap::lab
