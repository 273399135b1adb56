// Names from a trace cannot drive the terminal or break the XML (issue 13): ESC sequences that set
// the title or fake links, CR that overwrites an [error] line, bidi overrides, invalid UTF-8.
#include <catch2/catch.hpp>

#include <filesystem>

#include "cli_test_support.h"

using namespace cuoverlap;
using namespace cuoverlap::testing;

namespace {

const std::string kHostile =
    "\x1b]0;pwned\x07\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\\r[info] all good "
    "\xe2\x80\xae" "fdp.exe\xc2\x9b\xff";

// A path whose name itself carries controls and a noncharacter (it reaches gate and JUnit).
std::string writeHostileTrace() {
  const std::string path = tempTracePath(std::string("ctl\x01\x1b[31m\xef\xbf\xbe.sqlite"));
  SyntheticTrace trace(path);
  trace.addDevice(0, kHostile);
  trace.addRuntimeCall(100, 900, 1, "cudaLaunchKernel");
  trace.addOp({OpKind::kKernel, 1'000, 11'000, CopyKind::kHtoD, 13, 0, 4242, 1, -1, kHostile});
  trace.addOp({OpKind::kKernel, 20'000, 30'000, CopyKind::kHtoD, 13, 0, 4242, 0, -1, kHostile});
  return path;
}

void expectInert(const std::string& text) {
  INFO(text);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find('\r') == std::string::npos);
  CHECK(text.find('\x07') == std::string::npos);
  CHECK(text.find("\xe2\x80\xae") == std::string::npos);
  CHECK(text.find("\xc2\x9b") == std::string::npos);
  CHECK(text.find('\xff') == std::string::npos);
}

// XML 1.0 Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF].
bool validXmlChars(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return false;
    if (c == 0xEF && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0xBF &&
        (static_cast<unsigned char>(text[i + 2]) == 0xBE || static_cast<unsigned char>(text[i + 2]) == 0xBF)) {
      return false;
    }
    if (c == 0xFF || c == 0xFE) return false;
  }
  return true;
}

// Every byte sequence is well-formed UTF-8 (no overlong forms, surrogates or bytes past U+10FFFF).
bool validUtf8(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + length > text.size()) return false;
    std::uint32_t code = length == 1 ? c : c & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3F);
    }
    const std::uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < smallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    i += length;
  }
  return true;
}

}  // namespace

// Issue 24: "HTML passes invalid UTF-8 through". The page is well-formed UTF-8 whatever the names.
TEST_CASE("HTML shows no raw controls, bidi overrides or invalid UTF-8", "[inert][html]") {
  const std::string trace = writeHostileTrace();
  const CliRun html = runCli("analyze --format html '" + trace + "'");
  REQUIRE(html.exit_code == 0);
  expectInert(html.out);
  CHECK(validUtf8(html.out));
  CHECK(html.out.find("\\x1b]0;pwned\\x07") != std::string::npos);  // shown, escaped
}

TEST_CASE("text, diff and gate output show controls escaped", "[inert]") {
  const std::string trace = writeHostileTrace();
  const std::string quoted = "'" + trace + "'";
  const CliRun text = runCli("analyze " + quoted);
  REQUIRE(text.exit_code == 0);
  expectInert(text.out);
  CHECK(text.out.find("\\x1b]0;pwned\\x07") != std::string::npos);
  CHECK(text.out.find("\\u202efdp.exe") != std::string::npos);
  const CliRun diff = runCli("diff " + quoted + " " + quoted);
  REQUIRE(diff.exit_code == 0);
  expectInert(diff.out);
  const std::string junit = tempTracePath("hostile.xml");
  const CliRun gate = runCli("gate " + quoted + " --min-overlap 0 --junit " + junit);
  REQUIRE(gate.exit_code == 0);
  expectInert(gate.out);
  CHECK(gate.out.find("\\x01\\x1b[31m\\ufffe.sqlite") != std::string::npos);
  const std::string xml = readFile(junit);
  CHECK(validXmlChars(xml));
  CHECK(xml.find("\\x01\\x1b[31m\\ufffe.sqlite") != std::string::npos);
}

TEST_CASE("Markdown shows no raw controls and does not autolink names", "[inert][markdown]") {
  const std::string trace = writeHostileTrace();
  const CliRun md = runCli("analyze --format markdown '" + trace + "'");
  REQUIRE(md.exit_code == 0);
  expectInert(md.out);
  CHECK(md.out.find("https://evil") == std::string::npos);
}
