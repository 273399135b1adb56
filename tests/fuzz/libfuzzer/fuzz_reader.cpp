// libFuzzer target: the fuzzer's bytes as a trace file, through the reader (either importer: the
// reader sniffs JSON or gzip and hands it to the Kineto importer, anything else to the SQLite
// reader), the analysis, every renderer (text, JSON, Markdown, HTML, gate/JUnit, diff) and every
// export (Perfetto, Kineto). Bad input must end in a UserError; any other exception, a crash, a
// hang or a sanitizer report is a finding. Seeds: SQLite mutants and tests/fuzz/kineto_seeds.py.
//
// The bytes are written to one file in a private directory (on /dev/shm when there is one, so in
// memory), and the reader opens it as it opens any trace: read-only and immutable. (A memfd's
// /proc/self/fd path does not work: SQLite resolves the link to a name that cannot be opened.)
// Build and run: scripts/fuzz.sh.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <streambuf>
#include <string>

#include "cuoverlap/analysis.h"
#include "cuoverlap/error.h"
#include "cuoverlap/gate.h"
#include "cuoverlap/html_report.h"
#include "cuoverlap/json_report.h"
#include "cuoverlap/kineto_export.h"
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
  writeKinetoTrace(trace, out);
  GateThresholds thresholds;
  thresholds.min_overlap = 0.5;
  thresholds.max_idle_fraction = 0.5;
  const auto checks = evaluateGate(report, thresholds);
  out << gateJunitXml(checks);
  for (const GateCheck& check : checks) out << formatGateCheck(check);
  const ReportDiff diff = diffReports(report.traces[0], report.traces[0]);
  out << renderDiffText(diff) << renderDiffMarkdown(diff) << renderDiffJson(diff);
}

std::string g_input;  // the file each input is written to
std::string g_directory;

void removeInput() {
  unlink(g_input.c_str());
  rmdir(g_directory.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("CUOVERLAP_READ_TIMEOUT", "10", 1);  // a slow input is reported by the reader, not a hang
  std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  dir += "/cuoverlap-fuzz-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) std::abort();
  g_directory = dir;
  g_input = dir + "/input.sqlite";
  std::atexit(removeInput);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream out(g_input, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const cuoverlap::Trace trace = cuoverlap::readTrace(g_input);
    renderAll(trace);
  } catch (const cuoverlap::UserError&) {
    // Bad input, reported as one line by the CLI: the expected outcome for most inputs.
  }
  return 0;
}
