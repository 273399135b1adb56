// Text that reaches a terminal is inert (issue 13): render::inert, and the Markdown and XML
// escaping built on it.
#include <catch2/catch.hpp>

#include <string>

#include "cuoverlap/gate.h"
#include "cuoverlap/markdown_report.h"
#include "render_common.h"

using cuoverlap::render::inert;
using cuoverlap::render::Newlines;

TEST_CASE("controls, bidi and invalid UTF-8 become visible escapes", "[inert]") {
  CHECK(inert("plain µs ✓ 名前") == "plain µs ✓ 名前");
  CHECK(inert("\x1b]0;title\x07") == "\\x1b]0;title\\x07");
  CHECK(inert("[error] bad\r[info] all good") == "[error] bad\\x0d[info] all good");
  CHECK(inert("a\bb\x7f") == "a\\x08b\\x7f");
  CHECK(inert("tab\tkept") == "tab\tkept");
  CHECK(inert("two\nlines") == "two\\x0alines");
  CHECK(inert("two\nlines", Newlines::kKeep) == "two\nlines");
  CHECK(inert("\xc2\x85 \xc2\x9b") == "\\u0085 \\u009b");               // C1: NEL, CSI
  CHECK(inert("abc\xe2\x80\xae" "fdp.exe") == "abc\\u202efdp.exe");     // RIGHT-TO-LEFT OVERRIDE
  CHECK(inert("\xe2\x81\xa6x\xe2\x81\xa9") == "\\u2066x\\u2069");       // isolates
  CHECK(inert("\xef\xbf\xbe\xef\xbf\xbf") == "\\ufffe\\uffff");         // noncharacters
  CHECK(inert("\xff") == "\xef\xbf\xbd");                               // invalid byte
  CHECK(inert("\xc0\xaf") == "\xef\xbf\xbd\xef\xbf\xbd");               // overlong '/'
  CHECK(inert("\xed\xa0\x80") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  CHECK(inert("\xf4\x90\x80\x80").find('\xf4') == std::string::npos);   // > U+10FFFF
  CHECK(inert("cut \xe2\x82") == "cut \xef\xbf\xbd\xef\xbf\xbd");       // truncated sequence
  CHECK(inert(std::string("nul\0x", 5)) == "nul\\x00x");
}

TEST_CASE("JUnit XML escaping leaves only characters XML 1.0 allows", "[inert][junit]") {
  const std::string xml = cuoverlap::escapeXml("a<\x01\x1b>&\"'\n\t\xef\xbf\xbe\xff");
  CHECK(xml == "a&lt;\\x01\\x1b&gt;&amp;&quot;&apos;&#10;&#9;\\ufffe\xef\xbf\xbd");
}

TEST_CASE("Markdown does not autolink URLs, www. or e-mail found in names", "[inert][markdown]") {
  const std::string md = cuoverlap::escapeMarkdown("see https://evil.example and www.evil.example a@b.c \x1b[2J");
  CHECK(md.find("https://") == std::string::npos);
  CHECK(md.find("https\\://evil") != std::string::npos);
  CHECK(md.find("www\\.evil") != std::string::npos);
  CHECK(md.find("a\\@b") != std::string::npos);
  CHECK(md.find('\x1b') == std::string::npos);
}
