#include "trace_parser.h"

#include <fmt/core.h>
#include <rapidjson/rapidjson.h>

#include "rapidjson_stack.h"  // before reader.h: RapidJSON 1.1.0's stack without its UB

#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "cuoverlap/error.h"
#include "json_input.h"

namespace cuoverlap::kineto {
namespace {

// Where the parser is: what the innermost open container is.
enum class Scope : std::uint8_t {
  kRoot, kTop, kTraceEvents, kEvent, kArgs, kDimensions, kDistributedInfo, kDeviceList,
  kDevice, kSkip
};

std::optional<Field> eventField(std::string_view key) {
  if (key == "ph") return Field::kPh;
  if (key == "cat") return Field::kCat;
  if (key == "name") return Field::kName;
  if (key == "pid") return Field::kPid;
  if (key == "tid") return Field::kTid;
  if (key == "ts") return Field::kTs;
  if (key == "dur") return Field::kDur;
  return std::nullopt;
}

std::optional<Field> argField(std::string_view key) {
  if (key == "device") return Field::kDevice;
  if (key == "context") return Field::kContext;
  if (key == "stream") return Field::kStream;
  if (key == "correlation") return Field::kCorrelation;
  if (key == "bytes") return Field::kBytes;
  if (key == "registers per thread") return Field::kRegisters;
  if (key == "shared memory") return Field::kSharedMemory;
  if (key == "cuda_sync_kind") return Field::kSyncKind;
  if (key == "inDevice") return Field::kInDevice;
  if (key == "inContext") return Field::kInContext;
  if (key == "name") return Field::kArgName;
  if (key == "labels") return Field::kLabels;
  return std::nullopt;
}

std::int64_t integerOr(std::string_view text, std::int64_t fallback) {
  std::int64_t value = 0;
  bool any = false;
  for (char c : text) {
    if (c < '0' || c > '9') break;
    if (value > (std::numeric_limits<std::int64_t>::max() - 9) / 10) return fallback;
    value = value * 10 + (c - '0');
    any = true;
  }
  return any ? value : fallback;
}

// Kineto nests at most a few levels (an event's args hold arrays of arrays of shapes).
constexpr std::size_t kMaxDepth = 256;

class SaxHandler {
 public:
  explicit SaxHandler(EventSink& sink) : sink_(sink) { scopes_.push_back(Scope::kRoot); }

  bool Null() { return scalar("null", 4, false); }
  bool Bool(bool b) { return b ? scalar("true", 4, false) : scalar("false", 5, false); }
  bool Int(int) { return scalar("0", 1, false); }  // unused with kParseNumbersAsStringsFlag
  bool Uint(unsigned) { return scalar("0", 1, false); }
  bool Int64(std::int64_t) { return scalar("0", 1, false); }
  bool Uint64(std::uint64_t) { return scalar("0", 1, false); }
  bool Double(double) { return scalar("NaN", 3, false); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) { return scalar(s, n, false); }
  bool String(const char* s, rapidjson::SizeType n, bool) { return scalar(s, n, true); }

  bool Key(const char* s, rapidjson::SizeType n, bool) {
    key_.assign(s, n);
    return true;
  }

  bool StartObject() {
    switch (scope()) {
      case Scope::kRoot: return open(Scope::kTop);
      case Scope::kTraceEvents:
        event_.clear();
        event_.index = stats_.events++;
        return open(Scope::kEvent);
      case Scope::kTop:
        if (key_ == "traceEvents") return fail("traceEvents is an object, expected an array of events");
        return open(key_ == "distributedInfo" ? Scope::kDistributedInfo : Scope::kSkip);
      case Scope::kEvent: return open(key_ == "args" ? Scope::kArgs : Scope::kSkip);
      case Scope::kDeviceList:
        device_ = RawDevice{};
        return open(Scope::kDevice);
      default: return open(Scope::kSkip);
    }
  }

  bool EndObject(rapidjson::SizeType) {
    const Scope closing = scope();
    scopes_.pop_back();
    if (closing == Scope::kEvent) sink_.event(event_);
    if (closing == Scope::kDevice) sink_.device(device_);
    return true;
  }

  bool StartArray() {
    switch (scope()) {
      case Scope::kRoot:
        return fail("the top-level JSON value is an array, expected an object with traceEvents "
                    "(a PyTorch profiler trace)");
      case Scope::kTop:
        if (key_ == "traceEvents") {
          saw_trace_events_ = true;
          return open(Scope::kTraceEvents);
        }
        return open(key_ == "deviceProperties" ? Scope::kDeviceList : Scope::kSkip);
      case Scope::kTraceEvents:
        return fail(fmt::format("traceEvents[{}] is an array, expected an event object", stats_.events));
      case Scope::kArgs:
        if (key_ == "grid" || key_ == "block") {
          dimension_ = key_ == "grid" ? &event_.grid_blocks : &event_.block_threads;
          (key_ == "grid" ? event_.has_grid : event_.has_block) = true;
          axes_ = key_ == "grid" ? &event_.grid : &event_.block;
          axis_ = 0;
          return open(Scope::kDimensions);
        }
        return open(Scope::kSkip);
      default: return open(Scope::kSkip);
    }
  }

  bool EndArray(rapidjson::SizeType) {
    scopes_.pop_back();
    return true;
  }

  bool sawTraceEvents() const { return saw_trace_events_; }
  bool sawTopObject() const { return saw_top_object_; }
  const std::string& error() const { return error_; }
  ParseStats& stats() { return stats_; }

 private:
  Scope scope() const { return scopes_.back(); }
  bool open(Scope scope) {
    if (scope == Scope::kTop) saw_top_object_ = true;
    if (scopes_.size() > kMaxDepth) {
      return fail(fmt::format("JSON nested deeper than {} levels: not a PyTorch profiler trace", kMaxDepth));
    }
    scopes_.push_back(scope);
    return true;
  }
  bool fail(std::string message) {
    error_ = std::move(message);
    return false;
  }

  bool scalar(const char* s, std::size_t n, bool is_string) {
    std::string_view value(s, n);
    switch (scope()) {
      case Scope::kRoot:
        return fail("the top-level JSON value is not an object, expected an object with traceEvents");
      case Scope::kTop:
        if (key_ == "traceEvents") return fail("traceEvents is not an array");
        sink_.metadata(key_, value, is_string);
        return true;
      case Scope::kDistributedInfo:
        sink_.metadata("distributedInfo." + key_, value, is_string);
        return true;
      case Scope::kTraceEvents:
        return fail(fmt::format("traceEvents[{}] is not an event object", stats_.events));
      case Scope::kEvent:
        if (auto field = eventField(key_)) event_.set(*field, s, n, is_string);
        return true;
      case Scope::kArgs:
        if (auto field = argField(key_)) event_.set(*field, s, n, is_string);
        return true;
      case Scope::kDimensions: {
        const auto dim = static_cast<std::uint64_t>(integerOr(value, 1));
        const std::uint64_t limit = std::numeric_limits<std::uint32_t>::max();
        *dimension_ = std::min(*dimension_ * std::min(dim, limit), limit);
        if (axis_ < axes_->size()) (*axes_)[axis_++] = static_cast<std::uint32_t>(std::min(dim, limit));
        return true;
      }
      case Scope::kDevice: return deviceScalar(value);
      default: return true;
    }
  }

  bool deviceScalar(std::string_view value) {
    if (key_ == "name") device_.name.assign(value);
    else if (key_ == "id") device_.id = integerOr(value, -1);
    else if (key_ == "totalGlobalMem") device_.total_memory = integerOr(value, 0);
    else if (key_ == "computeMajor") device_.compute_major = integerOr(value, 0);
    else if (key_ == "computeMinor") device_.compute_minor = integerOr(value, 0);
    else if (key_ == "numSms") device_.sm_count = integerOr(value, 0);
    else if (key_ == "maxThreadsPerMultiprocessor") device_.max_threads_per_sm = integerOr(value, 0);
    else if (key_ == "regsPerMultiprocessor") device_.registers_per_sm = integerOr(value, 0);
    else if (key_ == "sharedMemPerMultiprocessor") device_.shared_mem_per_sm = integerOr(value, 0);
    return true;
  }

  EventSink& sink_;
  std::vector<Scope> scopes_;
  std::string key_;
  RawEvent event_;
  RawDevice device_;
  std::uint64_t* dimension_ = nullptr;
  std::array<std::uint32_t, 3>* axes_ = nullptr;  // the x, y, z of the dimension being read
  std::size_t axis_ = 0;
  ParseStats stats_;
  bool saw_trace_events_ = false;
  bool saw_top_object_ = false;
  std::string error_;
};

}  // namespace

ParseStats parseTraceFile(const std::string& path, EventSink& sink) {
  JsonInput input(path);
  SaxHandler handler(sink);
  rapidjson::Reader reader;
  // The reader recurses per nesting level; the handler refuses to open level kMaxDepth + 1 (the
  // reader calls StartObject/StartArray before descending), which bounds the C stack.
  constexpr unsigned kFlags = rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseNanAndInfFlag;
  const rapidjson::ParseResult result = reader.Parse<kFlags>(input, handler);
  if (!input.error().empty()) throw UserError(fmt::format("{}: {}", path, input.error()));
  if (!handler.error().empty()) throw UserError(fmt::format("{}: {}", path, handler.error()));
  if (result.IsError()) {
    throw UserError(fmt::format("{}: not valid JSON: {} at byte {}{}", path,
                                rapidjson::GetParseError_En(result.Code()), result.Offset(),
                                input.compressed() ? " of the decompressed text" : ""));
  }
  if (!handler.sawTraceEvents()) {
    throw UserError(fmt::format("{}: no traceEvents array: not a PyTorch profiler (Kineto) trace", path));
  }
  ParseStats stats = handler.stats();
  stats.bytes = input.bytesRead();
  stats.compressed = input.compressed();
  return stats;
}

}  // namespace cuoverlap::kineto
