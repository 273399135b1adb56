#include "render_common.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "cuoverlap/inert_text.h"
#include "cuoverlap/kernel_name.h"
#include "cuoverlap/names.h"
#include "cuoverlap/units.h"

namespace cuoverlap::render {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence at text[i] and its code point; 0 when invalid.
std::size_t decodeUtf8(std::string_view text, std::size_t i, char32_t& code) {
  const auto byte = [&text](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = lead < 0x80 ? 1 : lead >= 0xC2 && lead <= 0xDF ? 2
                       : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xF0 && lead <= 0xF4 ? 4 : 0;
  if (length == 0 || i + length > text.size()) return 0;
  code = length == 1 ? lead : lead & (0x7F >> length);
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  const bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
  const bool surrogate = code >= 0xD800 && code <= 0xDFFF;
  return overlong || surrogate || code > 0x10FFFF ? 0 : length;
}

bool isBidiOrSeparator(char32_t c) {
  return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2066 && c <= 0x2069) || c == 0x2028 || c == 0x2029;
}

}  // namespace

std::string inert(std::string_view text, Newlines newlines) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    char32_t c = 0;
    const std::size_t length = decodeUtf8(text, i, c);
    if (length == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    const bool keep_newline = c == '\n' && newlines == Newlines::kKeep;
    if ((c < 0x20 && c != '\t' && !keep_newline) || c == 0x7F) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    } else if ((c >= 0x80 && c <= 0x9F) || isBidiOrSeparator(c) || c == 0xFFFE || c == 0xFFFF) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

}  // namespace cuoverlap::render

namespace cuoverlap {

std::string inertLine(std::string_view text, std::size_t max_bytes) {
  // Escaping at most quadruples a byte ("\x1b"), so a prefix of 4 * max_bytes is enough.
  const std::size_t consider = std::min(text.size(), max_bytes * 4 + 4);
  std::string out = render::inert(text.substr(0, consider));
  if (out.size() <= max_bytes && consider == text.size()) return out;
  std::size_t end = std::min(out.size(), max_bytes);
  while (end > 0 && (static_cast<unsigned char>(out[end]) & 0xC0) == 0x80) --end;  // UTF-8 boundary
  const std::size_t escape = out.rfind('\\', end);
  if (escape != std::string::npos && end - escape < 6) end = escape;  // never half an escape
  out.resize(end);
  return out + fmt::format("… (cut; {} bytes in all)", text.size());
}

}  // namespace cuoverlap

namespace cuoverlap::render {

std::string shortName(std::string_view name) { return shortKernelName(name); }

std::string_view apiName(std::string_view name) {
  const auto suffix = name.rfind("_v");
  if (suffix == std::string_view::npos || suffix + 2 >= name.size()) return name;
  for (std::size_t i = suffix + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, suffix);
}

std::vector<KernelRow> kernelTable(const std::vector<KernelSummary>& kernels, std::size_t rows) {
  std::vector<KernelRow> table;
  std::vector<std::string_view> names;
  for (std::size_t i = 0; i < kernels.size() && i < rows; ++i) {
    table.push_back({&kernels[i], ""});
    names.push_back(kernels[i].name);
  }
  std::vector<std::string> shown = distinctShortKernelNames(names);
  for (std::size_t i = 0; i < table.size(); ++i) table[i].name = std::move(shown[i]);
  return table;
}

std::string describeOp(const Trace* trace, std::optional<std::size_t> op_index) {
  if (trace == nullptr || !op_index || *op_index >= trace->ops.size()) return "";
  const GpuOp& op = trace->ops[*op_index];
  const std::string stream =
      streamLabel(*trace, op.pid, op.context_id, op.stream_id);
  switch (op.kind) {
    case OpKind::kKernel:
      return fmt::format("kernel {} ({})", shortName(trace->str(op.name)), stream);
    case OpKind::kMemcpy:
      return fmt::format("memcpy {} {} {} ({})", copyKindName(op.copy_kind),
                         units::formatBytes(op.bytes),
                         memKindName(op.copy_kind == CopyKind::kDtoH ? op.dst_kind : op.src_kind),
                         stream);
    case OpKind::kMemset:
      return fmt::format("memset {} ({})", units::formatBytes(op.bytes), stream);
  }
  return "";
}

std::string describeCall(const Trace* trace, std::optional<std::size_t> call_index) {
  if (trace == nullptr || !call_index || *call_index >= trace->runtime_calls.size()) return "";
  const RuntimeCall& call = trace->runtime_calls[*call_index];
  return fmt::format("{} (correlation {})", apiName(trace->str(call.name)), call.correlation_id);
}

std::string streamLabel(const Trace& trace, std::uint32_t pid, std::uint32_t context_id,
                        std::uint32_t stream_id) {
  for (const Context& context : trace.contexts) {
    if (context.pid == pid && context.context_id == context_id &&
        context.null_stream_id == stream_id) {
      return fmt::format("stream {} (legacy default)", stream_id);
    }
  }
  // CUPTI flags a per-thread default stream like a created one: only our traces tell it
  // (Stream::origin, docs/schema.md), and a user reading a lane should know which it is.
  for (const Stream& stream : trace.streams) {
    if (stream.pid == pid && stream.context_id == context_id && stream.stream_id == stream_id &&
        stream.origin == StreamOrigin::kPerThread) {
      return fmt::format("stream {} (per-thread default)", stream_id);
    }
  }
  return fmt::format("stream {}", stream_id);
}

TimeWindow deviceWindow(const TraceReport& trace, std::uint16_t device_id) {
  std::optional<TimeWindow> window;
  const auto include = [&window](const DeviceMetrics& m) {
    if (m.last_end <= m.first_start) return;
    if (!window) window = TimeWindow{m.first_start, m.last_end};
    window->start = std::min(window->start, m.first_start);
    window->end = std::max(window->end, m.last_end);
  };
  for (const RangeInstance& instance : trace.range_instances) {
    for (const DeviceReport& device : instance.devices) {
      if (device.metrics.device_id == device_id) include(device.metrics);
    }
  }
  if (trace.range_instances.empty()) {
    for (const DeviceReport& device : trace.devices) {
      if (device.metrics.device_id == device_id) include(device.metrics);
    }
  }
  return window.value_or(TimeWindow{});
}

std::string relativeTime(const TraceReport& trace, Ns time) {
  if (trace.first_op_start <= 0) return fmt::format("{} ns", time);
  const Ns offset = time - trace.first_op_start;
  return (offset >= 0 ? "+" : "-") + units::formatDuration(offset >= 0 ? offset : -offset);
}

std::vector<const Finding*> findingsWorstFirst(const std::vector<Finding>& findings) {
  std::vector<const Finding*> ordered;
  ordered.reserve(findings.size());
  for (const Finding& finding : findings) ordered.push_back(&finding);
  std::stable_sort(ordered.begin(), ordered.end(), [](const Finding* a, const Finding* b) {
    if (a->severity != b->severity) return a->severity > b->severity;
    return a->time_ns > b->time_ns;
  });
  return ordered;
}

std::string describeGapCauses(const IdleGap& gap) {
  std::string text(gapCauseName(gap.cause));
  if (gap.causes.size() < 2) return text;
  text += " (";
  for (std::size_t i = 0; i < gap.causes.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::string(gapCauseName(gap.causes[i].cause)) + " " +
            units::formatDuration(gap.causes[i].ns);
  }
  return text + ")";
}

namespace {

// The ledger may charge a finding less than its fix alone would save (host-busy: the idle time its
// stretches add up to, which early-result-wait already holds): say what the fix saves and where
// the rest of it is charged, so the two figures are never read as two costs.
std::string unchargedNote(const Finding& finding) {
  std::vector<std::string> parts;
  if (finding.charged_elsewhere_ns > 0) {
    parts.push_back(fmt::format("{} is already charged to {}", units::formatDuration(finding.charged_elsewhere_ns),
                                finding.charged_to.empty() ? std::string("other findings")
                                                           : fmt::format("{}", fmt::join(finding.charged_to, ", "))));
  }
  if (finding.beyond_region_ns > 0) {
    parts.push_back(fmt::format("{} lies beyond the time it is charged for (time other findings hold, "
                                "or that no finding names), so it is not charged again",
                                units::formatDuration(finding.beyond_region_ns)));
  }
  if (finding.beyond_explainable_ns > 0) {
    parts.push_back(fmt::format("{} is more than the span still exceeded its packed bound",
                                units::formatDuration(finding.beyond_explainable_ns)));
  }
  if (parts.empty()) return "";
  return fmt::format(" (fixing it alone would save about {}; of that, {})",
                     units::formatDuration(fixSavingNs(finding)), fmt::join(parts, ", and "));
}

// The work a fix acts on, where the finding lists a fix per stream or per thread's loop on a
// shared stream (FixSaving::stream, FixSaving::thread): "stream 726", "thread 4242's loop on stream
// 7"; empty where the fix names neither.
std::string fixTarget(const FixSaving& fix) {
  if (!fix.stream) return "";
  if (fix.thread) return fmt::format("thread {}'s loop on stream {}", *fix.thread, *fix.stream);
  return fmt::format("stream {}", *fix.stream);
}

// How a report names a fix a finding advises (Finding::fixes; the lab's transform ids), with the
// work it acts on where it names one: two splits of one finding are two streams' splits, and a
// reader must be told which saves what.
std::string fixName(const FixSaving& fix) {
  if (fix.fix == "own-streams") return "a created stream per host thread";
  if (fix.fix == "nonblocking-streams") return "non-blocking created streams";
  const std::string target = fixTarget(fix);
  if (target.empty()) return fix.fix;
  if (fix.fix == "multi-stream") return "splitting " + target + " over created streams";
  if (fix.fix == "copy-ahead") return "copying the input of " + target + " ahead";
  return fmt::format("{} ({})", fix.fix, target);
}

// "; of the fixes it advises, a created stream per host thread would save about 724 µs,
// non-blocking created streams about 48 µs" where the finding prices more than one fix; "; the fix
// it advises, splitting thread 4242's loop on stream 7 over created streams, would save about 5.9
// ms" where it prices one that names the work it acts on.
std::string fixesNote(const Finding& finding) {
  if (finding.fixes.empty()) return "";
  if (finding.fixes.size() == 1) {
    const FixSaving& fix = finding.fixes.front();
    if (fixTarget(fix).empty()) return "";
    return fmt::format("; the fix it advises, {}, would save about {}", fixName(fix),
                       units::formatDuration(fix.saving_ns));
  }
  std::vector<std::string> parts;
  for (const FixSaving& fix : finding.fixes) {
    parts.push_back(fmt::format("{} {}about {}", fixName(fix), parts.empty() ? "would save " : "",
                                units::formatDuration(fix.saving_ns)));
  }
  return fmt::format("; of the fixes it advises, {}", fmt::join(parts, ", "));
}

std::string chargedTime(const Finding& finding) {
  std::string text = "about " + units::formatDuration(finding.time_ns) + " lost";
  if (finding.ideal_reduction_ns > 0) {
    text += " (" + units::formatDuration(finding.ideal_reduction_ns) +
            " of it from faster ops, which lowers the packed bound)";
  }
  if (fixSavingNs(finding) < finding.time_ns) {
    // The rule priced its fix apart (Finding::fix_alone_ns): the summary says why it saves less.
    return text + " (its fix as advised first would save about " +
           units::formatDuration(fixSavingNs(finding)) + ")";
  }
  return text + unchargedNote(finding);
}

}  // namespace

std::string lostTime(const Finding& finding) {
  return chargedTime(finding) + fixesNote(finding);
}

std::string instanceSavingNote(const Finding& finding) {
  if (!finding.instance_saving) return "";
  const InstanceSaving& s = *finding.instance_saving;
  return fmt::format("per range instance, its fix would save {} at the median ({} to {} from the "
                     "10th to the 90th percentile, at most {}; fired in {} of {})",
                     units::formatDuration(s.saving.median), units::formatDuration(s.saving.p10),
                     units::formatDuration(s.saving.p90), units::formatDuration(s.saving.max),
                     s.fired, s.instances);
}

Ns packedBound(const DeviceReport& device) {
  // explainable = max(0, span - packed bound): exact while the span exceeds the bound, else the
  // bound is the span itself (nothing left to explain).
  return device.metrics.span_ns - device.explained.explainable_ns;
}

std::string waitingThreadsNote(const FindingsExplained& explained) {
  if (explained.waiting_threads < 2) return "";
  return std::to_string(explained.waiting_threads) +
         " host threads issue GPU work and wait for it side by side: the savings above follow the turns "
         "they took in the driver in this run, which change from run to run; take them as rough "
         "(docs/findings.md, \"Several host threads\")";
}

std::string idealReductionNote(const FindingsExplained& explained) {
  if (explained.ideal_reduction_ns <= 0) return "";
  return "; their fixes would also lower the packed bound by " +
         units::formatDuration(explained.ideal_reduction_ns);
}

}  // namespace cuoverlap::render
