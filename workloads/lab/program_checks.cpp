#include "program_checks.h"

#include <cmath>
#include <vector>

namespace cuoverlap::lab {

using nlohmann::json;

Fields::Fields(const json& object, std::string id, std::string path, std::set<std::string> keys,
               std::string op)
    : object_(object), id_(std::move(id)), path_(std::move(path)), op_(std::move(op)) {
  if (!object_.is_object()) fail("not a JSON object");
  if (keys.empty()) return;
  for (const auto& item : object_.items())
    if (!keys.count(item.key()) && item.key().rfind('_', 0) != 0)
      fail("unknown field \"" + item.key() + "\"");
}

void Fields::fail(const std::string& reason) const {
  std::string line = id_;
  if (!path_.empty()) line += ": " + path_;
  if (!op_.empty()) line += ": " + op_;
  throw ProgramError(line + ": " + reason);
}

const json& Fields::need(const char* key) const {
  if (!object_.contains(key)) fail(std::string("missing field \"") + key + "\"");
  return object_[key];
}

std::string Fields::text(const char* key) const {
  const json& value = need(key);
  if (!value.is_string()) fail(std::string(key) + ": not a string");
  return value.get<std::string>();
}

const json& Fields::array(const char* key) const {
  const json& value = need(key);
  if (!value.is_array()) fail(std::string(key) + ": not an array");
  return value;
}

std::int64_t Fields::integer(const char* key, std::int64_t minimum) const {
  const json& value = need(key);
  if (!value.is_number_integer()) fail(std::string(key) + ": not an integer");
  std::int64_t result = value.get<std::int64_t>();
  if (result < minimum)
    fail(std::string(key) + ": " + std::to_string(result) + " is below " + std::to_string(minimum));
  return result;
}

std::uint64_t Fields::positive(const char* key) const {
  return static_cast<std::uint64_t>(integer(key, 1));
}

std::uint64_t Fields::unsignedOr(const char* key, std::uint64_t fallback) const {
  return has(key) ? static_cast<std::uint64_t>(integer(key, 0)) : fallback;
}

double Fields::number(const char* key, double minimum) const {
  const json& value = need(key);
  if (!value.is_number()) fail(std::string(key) + ": not a number");
  double result = value.get<double>();
  if (!std::isfinite(result) || result < minimum)
    fail(std::string(key) + ": " + value.dump() + " is below " + std::to_string(minimum));
  return result;
}

bool Fields::flag(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  if (!object_[key].is_boolean()) fail(std::string(key) + ": not true or false");
  return object_[key].get<bool>();
}

void Fields::within(std::uint64_t bytes, std::uint64_t offset, const Buffer& buffer,
                    const std::string& offset_key) const {
  if (offset > buffer.bytes || bytes > buffer.bytes - offset) {
    std::string at = offset == 0 ? "" : " at " + offset_key + " " + std::to_string(offset);
    fail(std::to_string(bytes) + " bytes" + at + " overrun buffer \"" + buffer.name + "\" (" +
         std::to_string(buffer.bytes) + " bytes)");
  }
}

namespace {

class PairingWalk {
 public:
  PairingWalk(const Program& program, const std::map<int, int>& owner)
      : program_(program), owner_(owner), live_(program.buffers.size(), false) {}

  void walkThread(int thread) {
    thread_ = thread;
    walk(program_.threads[thread].steps);
    for (std::size_t b = 0; b < live_.size(); ++b)
      if (live_[b])
        throw ProgramError(program_.id + ": threads[" + std::to_string(thread) + "]: buffer \"" +
                           program_.buffers[b].name + "\" is alloc'ed and never freed");
  }

 private:
  void walk(const std::vector<Step>& steps) {
    for (const Step& step : steps) {
      if (step.op == StepOp::kLoop) {
        // Twice when it repeats: a body that allocates without freeing fails on its second pass.
        for (int pass = 0; pass < (step.count >= 2 ? 2 : 1); ++pass) walk(step.body);
        continue;
      }
      if (step.op == StepOp::kAlloc) {
        if (live_[step.buffer]) fail(step, "is already alloc'ed (no free since its last alloc)");
        live_[step.buffer] = true;
        continue;
      }
      for (int buffer : {step.buffer, step.dst, step.src}) use(step, buffer);
      if (step.op == StepOp::kFree) live_[step.buffer] = false;
    }
  }

  void use(const Step& step, int buffer) {
    if (buffer < 0 || program_.buffers[buffer].declared) return;
    if (owner_.at(buffer) != thread_) fail(step, buffer, "is alloc'ed by another thread");
    if (!live_[buffer]) fail(step, buffer, "is not alloc'ed at this step");
  }

  [[noreturn]] void fail(const Step& step, const char* reason) { fail(step, step.buffer, reason); }
  [[noreturn]] void fail(const Step& step, int buffer, const char* reason) {
    throw ProgramError(program_.id + ": " + step.path + ": " + stepOpName(step.op) + ": buffer \"" +
                       program_.buffers[buffer].name + "\" " + reason);
  }

  const Program& program_;
  const std::map<int, int>& owner_;
  std::vector<bool> live_;
  int thread_ = 0;
};

}  // namespace

void checkAllocPairing(const Program& program, const std::map<int, int>& alloc_owner) {
  PairingWalk walk(program, alloc_owner);
  for (std::size_t t = 0; t < program.threads.size(); ++t) walk.walkThread(static_cast<int>(t));
}

}  // namespace cuoverlap::lab
