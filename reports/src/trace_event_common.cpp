#include "trace_event_common.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

#include "render_common.h"

namespace cuoverlap::trace_event {
namespace {

constexpr std::size_t kFlushBytes = 1 << 20;

// The longest prefix of `text` of at most `bytes` bytes that does not split a UTF-8 character.
std::string_view utf8Prefix(std::string_view text, std::size_t bytes) {
  if (text.size() <= bytes) return text;
  std::size_t end = bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

}  // namespace

std::string jsonString(std::string_view text) {
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string fixedMicros(Ns ns) {
  const char* sign = ns < 0 ? "-" : "";
  const Ns magnitude = ns < 0 ? -ns : ns;
  return fmt::format("{}{}.{:03}", sign, magnitude / 1000, magnitude % 1000);
}

Ns traceOrigin(const Trace& trace) {
  Ns origin = std::numeric_limits<Ns>::max();
  for (const GpuOp& op : trace.ops) origin = std::min(origin, op.start);
  for (const RuntimeCall& call : trace.runtime_calls) origin = std::min(origin, call.start);
  for (const NvtxRange& range : trace.nvtx) origin = std::min(origin, range.start);
  return origin == std::numeric_limits<Ns>::max() ? 0 : origin;
}

std::string displayName(std::string_view name) {
  if (name.size() <= kDisplayNameBytes) return std::string(name);
  std::string shorter = render::shortName(name);
  if (shorter.size() <= kDisplayNameBytes) return shorter;
  return capText(shorter, kDisplayNameBytes);
}

std::string capText(std::string_view text, std::size_t bytes) {
  if (text.size() <= bytes) return std::string(text);
  return std::string(utf8Prefix(text, bytes)) + "…";
}

void EventStream::raw(std::string_view text) {
  buffer_ += text;
  if (buffer_.size() >= kFlushBytes) flush();
}

void EventStream::event(std::string_view text) {
  buffer_ += first_event_ ? first_ : separator_;
  first_event_ = false;
  raw(text);
}

void EventStream::flush() {
  out_ << buffer_;
  buffer_.clear();
}

}  // namespace cuoverlap::trace_event
