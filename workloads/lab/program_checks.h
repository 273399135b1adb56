// The parser's field reader (typed fields of one JSON object, each failure one ProgramError line
// `ID: PATH: OP: reason`) and the alloc/free pairing walk.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "program.h"

namespace cuoverlap::lab {

class Fields {
 public:
  // `keys`: the fields the object may hold (others, except "_annotations", are errors); empty:
  // any. `op`: the step's op, part of every message.
  Fields(const nlohmann::json& object, std::string id, std::string path, std::set<std::string> keys,
         std::string op = "");

  void setContext(std::string id) { id_ = std::move(id); }
  const std::string& path() const { return path_; }
  [[noreturn]] void fail(const std::string& reason) const;

  bool has(const char* key) const { return object_.contains(key); }
  std::string text(const char* key) const;
  const nlohmann::json& array(const char* key) const;
  std::int64_t integer(const char* key, std::int64_t minimum) const;
  std::uint64_t positive(const char* key) const;  // an integer > 0
  std::uint64_t unsignedOr(const char* key, std::uint64_t fallback) const;
  double number(const char* key, double minimum) const;
  bool flag(const char* key, bool fallback) const;

  // `bytes` at `offset` must lie inside `buffer`; `offset_key` names the offset in the message.
  void within(std::uint64_t bytes, std::uint64_t offset, const Buffer& buffer,
              const std::string& offset_key) const;

  template <typename T>
  T choice(const char* key, const std::map<std::string, T>& values, const char* fallback = nullptr) const {
    std::string value = fallback && !has(key) ? std::string(fallback) : text(key);
    auto found = values.find(value);
    if (found == values.end()) {
      std::string known;
      for (const auto& entry : values) known += (known.empty() ? "" : ", ") + entry.first;
      fail(std::string(key) + ": \"" + value + "\" is not one of " + known);
    }
    return found->second;
  }

 private:
  const nlohmann::json& need(const char* key) const;

  const nlohmann::json& object_;
  std::string id_;
  std::string path_;
  std::string op_;
};

// Walks each thread's steps as they run (a loop's body twice when it repeats): an alloc'ed buffer
// is allocated before it is used or freed, never twice without a free between, and freed by the end
// of its thread. Throws ProgramError naming the step.
void checkAllocPairing(const Program& program, const std::map<int, int>& alloc_owner);

}  // namespace cuoverlap::lab
