// libFuzzer target: the fuzzer's bytes as a trace file, through the reader, the analysis and every
// renderer (text, JSON, Markdown, HTML, Perfetto, gate/JUnit, diff). Bad input must end in a
// UserError; any other exception, a crash, a hang or a sanitizer report is a finding.
//
// The bytes live in a memfd (memory only) opened by path (/proc/self/fd/N), so the reader runs as
// it does on a file, read-only and immutable. Build and run: scripts/fuzz.sh.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <streambuf>
#include <string>

#include "cuoverlap/analysis.h"
#include "cuoverlap/error.h"
#include "cuoverlap/gate.h"
#include "cuoverlap/html_report.h"
#include "cuoverlap/json_report.h"
#include "cuoverlap/markdown_report.h"
#include "cuoverlap/perfetto_export.h"
#include "cuoverlap/reader.h"
#include "cuoverlap/report_diff.h"
#include "cuoverlap/text_report.h"

namespace {

class NullBuffer : public std::streambuf {
 protected:
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
  int_type overflow(int_type c) override { return traits_type::not_eof(c); }
};

void renderAll(const cuoverlap::Trace& trace) {
  using namespace cuoverlap;
  NullBuffer sink;
  std::ostream out(&sink);
  Report report;
  report.traces.push_back(analyzeTrace(trace, AnalysisOptions{}));
  renderText(report, out);
  renderJson(report, out);
  renderMarkdown(report, out);
  renderHtml(report, out);
  writePerfettoTrace(trace, out);
  GateThresholds thresholds;
  thresholds.min_overlap = 0.5;
  thresholds.max_idle_fraction = 0.5;
  const auto checks = evaluateGate(report, thresholds);
  out << gateJunitXml(checks);
  for (const GateCheck& check : checks) out << formatGateCheck(check);
  const ReportDiff diff = diffReports(report.traces[0], report.traces[0]);
  out << renderDiffText(diff) << renderDiffMarkdown(diff) << renderDiffJson(diff);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("CUOVERLAP_READ_TIMEOUT", "10", 1);  // a slow input is reported by the reader, not a hang
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("cuoverlap-fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  try {
    const cuoverlap::Trace trace = cuoverlap::readTrace("/proc/self/fd/" + std::to_string(fd));
    renderAll(trace);
  } catch (const cuoverlap::UserError&) {
    // Bad input, reported as one line by the CLI: the expected outcome for most inputs.
  }
  close(fd);
  return 0;
}
