// Issue 24 through the CLI: what surrounds the trace. Hostile --range patterns and 40k-character
// names, FIFOs as input, a huge -wal beside a trace, gzip-compressed traces, signals and `ulimit -f` while writing, inert
// and bounded error lines, and outputs through symbolic links, descriptors and races. Every run
// is under `timeout`, so a hang fails the test instead of stalling ctest.
#include <catch2/catch.hpp>
#include <sqlite3.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"
#include "../trace_files.h"

using namespace cuoverlap;
using namespace cuoverlap::testing;
namespace fs = std::filesystem;

namespace {

const std::string kCli = CUOVERLAP_CLI;

// The bundled pageable-copy trace as a plain SQLite file (the repository stores it gzip-compressed):
// these tests change it with SQL, put a log beside it, or compress it themselves.
const std::string& pageable() {
  static const std::string path = [] {
    const std::string plain = tempTracePath("robust_pageable.sqlite");
    REQUIRE(cuoverlap_test::inflateTrace(std::string(CUOVERLAP_TEST_DATA) + "/streams_pageable.sqlite.gz", plain));
    return plain;
  }();
  return path;
}

struct TimedRun {
  CliRun run;
  double seconds = 0;
};

// `shell` runs under `sh -c`; the CLI is $CLI.
TimedRun timedShell(const std::string& shell, int limit_seconds = 30) {
  const std::string out_path = tempTracePath("robust_cli_stdout.txt");
  const std::string err_path = tempTracePath("robust_cli_stderr.txt");
  const std::string command = "CLI='" + kCli + "' timeout " + std::to_string(limit_seconds) + " sh -c '" +
                              shell + "' >" + out_path + " 2>" + err_path;
  const auto begin = std::chrono::steady_clock::now();
  const int status = std::system(command.c_str());
  TimedRun timed;
  timed.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  timed.run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  timed.run.out = readFile(out_path);
  timed.run.err = readFile(err_path);
  return timed;
}

void expectOneErrorLine(const CliRun& run, std::size_t max_bytes = 2200) {
  INFO(run.err.substr(0, 400));
  CHECK(run.exit_code == 2);
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  CHECK(run.err.rfind("cuoverlap: error: ", 0) == 0);
  CHECK(run.err.size() <= max_bytes);
  CHECK(run.err.find('\x1b') == std::string::npos);
  CHECK(run.err.find('\r') == std::string::npos);
}

fs::path freshDirectory(const std::string& name) {
  const fs::path dir = tempTracePath(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = entry.path().filename();
    if (name.find(".cuoverlap-") != std::string::npos || name.find("cuoverlap-snapshot") != std::string::npos) {
      found.push_back(name);
    }
  }
  return found;
}

// The pageable-copy trace plus three NVTX ranges whose names are 40,000 characters of 'q' with an
// escape sequence and a newline in them.
std::string writeLongNameTrace(const std::string& name) {
  const std::string path = tempTracePath(name);
  fs::remove(path);
  fs::copy_file(pageable(), path);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  for (int i = 0; i < 3; ++i) {
    const std::string sql = ("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) SELECT start, end, 59, "
               "'tile' || replace(hex(zeroblob(20000)), '0', 'q') || '" + std::to_string(i) +
               "' || char(27) || ']0;title' || char(7) || char(10), globalTid FROM NVTX_EVENTS "
               "WHERE eventType = 59 LIMIT 1");
    CHECK(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  }
  sqlite3_close(db);
  return path;
}

}  // namespace

TEST_CASE("--range with hostile patterns on 40k-character names finishes fast in every command",
          "[robust24]") {
  const std::string trace = writeLongNameTrace("robust_long_names.sqlite");
  const std::string long_glob = std::string(3000, 'q') + "*";
  for (const std::string command : {"analyze", "gate --min-overlap 0", "export --format perfetto -o /dev/null"}) {
    for (const std::string pattern : {"/^tile.*$/", "/tileq+1/", "/(q+)+x/", "*q*q*q*q*q*q*q*q*x",
                                      "tile*", "nomatch"}) {
      const TimedRun timed = timedShell("$CLI " + command + " " + trace + " --range \"" + pattern + "\"");
      INFO(command << " --range " << pattern << ": " << timed.run.err.substr(0, 300));
      CHECK(timed.run.exit_code >= 0);  // not killed (a segfault) nor timed out (124)
      CHECK(timed.run.exit_code <= 2);
      CHECK(timed.seconds < 10);
      if (timed.run.exit_code == 2) expectOneErrorLine(timed.run);
    }
    const TimedRun glob = timedShell("$CLI " + command + " " + trace + " --range \"" + long_glob + "\"");
    CHECK(glob.seconds < 10);
    expectOneErrorLine(glob.run);
  }
  const TimedRun matched = timedShell("$CLI analyze " + trace + " --range \"/tileq+1/\" --format json");
  REQUIRE(matched.run.exit_code == 0);
  CHECK(matched.run.out.find("\"instances\": 1") != std::string::npos);
  const TimedRun bad = timedShell("$CLI analyze " + trace + " --range \"/(unclosed/\"");
  expectOneErrorLine(bad.run);
  CHECK(bad.run.err.find("bad regular expression") != std::string::npos);
}

TEST_CASE("a FIFO (or any non-regular file) as input is refused at once", "[robust24]") {
  const fs::path dir = freshDirectory("robust_fifo");
  const std::string fifo = (dir / "trace.json").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::vector<std::string> commands = {"analyze " + fifo, "ranges " + fifo, "gate --min-overlap 0.1 " + fifo,
                                             "export " + fifo + " -o " + (dir / "x.json").string(),
                                             "diff " + fifo + " " + pageable(), "analyze /dev/zero"};
  for (const std::string& command : commands) {
    const TimedRun timed = timedShell("$CLI " + command, 10);
    INFO(command);
    CHECK(timed.seconds < 5);
    expectOneErrorLine(timed.run);
    CHECK(timed.run.err.find("not a regular file") != std::string::npos);
  }
}

TEST_CASE("a -wal beyond the copy bound is refused before copying, and nothing is left", "[robust24]") {
  const fs::path dir = freshDirectory("robust_wal");
  const fs::path tmp = freshDirectory("robust_wal_tmp");
  const std::string trace = (dir / "t.sqlite").string();
  fs::copy_file(pageable(), trace);
  { std::ofstream create(trace + "-wal"); }
  fs::resize_file(trace + "-wal", 1ULL << 30);  // sparse: 1 GiB that costs no disk
  const TimedRun timed = timedShell("TMPDIR=" + tmp.string() + " $CLI analyze " + trace, 20);
  CHECK(timed.seconds < 5);
  expectOneErrorLine(timed.run);
  CHECK(timed.run.err.find("CUOVERLAP_MAX_LOG_MIB") != std::string::npos);
  CHECK(fs::is_empty(tmp));
  // A bound raised by the user: copied, then SQLite finds no valid frame; still nothing left.
  fs::resize_file(trace + "-wal", 8ULL << 20);
  const TimedRun raised = timedShell("CUOVERLAP_MAX_LOG_MIB=16 TMPDIR=" + tmp.string() + " $CLI analyze " +
                                     trace + " --format json", 20);
  CHECK(raised.run.exit_code <= 2);
  CHECK(fs::is_empty(tmp));
}

TEST_CASE("a gzip-compressed SQLite trace reads as the trace itself; a bad one is one line, nothing left",
          "[robust24]") {
  const fs::path dir = freshDirectory("robust_gzip");
  const fs::path tmp = freshDirectory("robust_gzip_tmp");
  const std::string gz = (dir / "t.sqlite.gz").string();
  const std::string env = "TMPDIR=" + tmp.string() + " ";
  REQUIRE(timedShell("gzip -c " + pageable() + " > " + gz).run.exit_code == 0);
  const TimedRun plain = timedShell("$CLI analyze --format json " + pageable() + " | grep -v '\"path\"'");
  const TimedRun packed = timedShell(env + "$CLI analyze --format json " + gz + " | grep -v '\"path\"'");
  REQUIRE(plain.run.exit_code == 0);
  CHECK(packed.run.exit_code == 0);
  CHECK(packed.run.out == plain.run.out);
  CHECK(packed.run.err.find("-wal") == std::string::npos);  // no "unfinished trace" note
  CHECK(fs::is_empty(tmp));
  struct Bad {
    std::string make, expected, env;
  };
  const std::vector<Bad> bad = {
      {"head -c 3000 " + gz, "truncated gzip data", ""},
      // The sniff reads a database header; then 1000 zero bytes inside the deflate stream.
      {"(head -c 2000 " + gz + "; head -c 1000 /dev/zero; tail -c +3001 " + gz + ")", "gzip data is corrupt", ""},
      {"(cat " + pageable() + "; head -c 3145728 /dev/zero) | gzip -c", "CUOVERLAP_MAX_INFLATE_MIB",
       "CUOVERLAP_MAX_INFLATE_MIB=1 "},
      {"cat " + gz, "CUOVERLAP_MAX_INFLATE_MIB='x'", "CUOVERLAP_MAX_INFLATE_MIB=x "}};
  for (const Bad& b : bad) {
    const std::string path = (dir / "bad.sqlite.gz").string();
    REQUIRE(timedShell(b.make + " > " + path).run.exit_code == 0);
    const TimedRun run = timedShell(env + b.env + "$CLI analyze " + path, 20);
    INFO(b.make);
    CHECK(run.seconds < 10);
    expectOneErrorLine(run.run);
    CHECK(run.run.err.find(b.expected) != std::string::npos);
    CHECK(fs::is_empty(tmp));
  }
}

TEST_CASE("SIGTERM, SIGINT and SIGHUP while writing leave no temporary file", "[robust24]") {
  const fs::path dir = freshDirectory("robust_signals");
  const fs::path tmp = freshDirectory("robust_signals_tmp");
  // An unfinished trace (a -wal beside it), so that the private copy exists too.
  const std::string trace = (dir / "t.sqlite").string();
  fs::copy_file(pageable(), trace);
  { std::ofstream wal(trace + "-wal", std::ios::binary); wal << std::string(4096, 'x'); }
  std::string files;
  for (int i = 0; i < 12; ++i) files += " " + trace;
  int killed_while_writing = 0;
  for (int signal_number : {SIGTERM, SIGINT, SIGHUP, SIGTERM, SIGINT, SIGHUP}) {
    const std::string out = (dir / "report.html").string();
    fs::remove(out);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("TMPDIR", tmp.c_str(), 1);
      ::execl(kCli.c_str(), kCli.c_str(), "analyze", trace.c_str(), trace.c_str(), trace.c_str(),
              trace.c_str(), trace.c_str(), trace.c_str(), "--threads", "1", "--format", "html", "-o",
              out.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Wait for the temporary output, then signal at once: the analysis is still running.
    for (int wait = 0; wait < 5000 && leftovers(dir).empty(); ++wait) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ::kill(pid, signal_number);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status) && WTERMSIG(status) == signal_number) ++killed_while_writing;
    CHECK(leftovers(dir).empty());
    CHECK(fs::is_empty(tmp));
    if (WIFSIGNALED(status)) CHECK_FALSE(fs::exists(out));  // never a partial report
  }
  CHECK(killed_while_writing > 0);
}

TEST_CASE("ulimit -f: the write fails with one line, no partial file and no temporary", "[robust24]") {
  const fs::path dir = freshDirectory("robust_ulimit");
  const std::string out = (dir / "report.html").string();
  const TimedRun timed = timedShell("ulimit -f 8; $CLI analyze " + pageable() + " --format html -o " + out);
  expectOneErrorLine(timed.run);
  CHECK(timed.run.err.find("File too large") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  CHECK(leftovers(dir).empty());
}

TEST_CASE("errors quoting trace or user text are one inert line of bounded length", "[robust24]") {
  const std::string huge(1 << 20, 'n');
  const TimedRun pattern = timedShell("$CLI analyze " + pageable() + " --range \"" + std::string(5000, 'p') +
                                      "$(printf \"\\033]0;x\\007\\n\\r\")\"");
  expectOneErrorLine(pattern.run);
  const TimedRun path = timedShell("$CLI analyze \"$(printf \"no\\033[2J\\r\\nfile\")\"");
  expectOneErrorLine(path.run);
  CHECK(path.run.err.find("\\x1b") != std::string::npos);
  const std::string names = writeLongNameTrace("robust_long_names_ranges.sqlite");
  const TimedRun ranges = timedShell("$CLI ranges " + names);
  REQUIRE(ranges.run.exit_code == 0);
  CHECK(ranges.run.out.find('\x1b') == std::string::npos);
  CHECK(ranges.run.out.find('\x07') == std::string::npos);
  CHECK(ranges.run.out.size() < 20000);  // three 40k names, each cut
}

// Not only errors: every line on stderr that quotes a user's path or a trace's text (the written
// file's note, the per-rank export notes, summarize's line, the progress line) is inert.
TEST_CASE("stderr notes quoting user or trace text are inert", "[robust24]") {
  const fs::path dir = freshDirectory("robust_stderr_notes");
  const std::string evil = "e\x1b]0;t\x07\xe2\x80\xae\xc2\x9b\xff";  // no newline: a file name
  const std::string trace = (dir / (evil + ".sqlite")).string();
  fs::copy_file(pageable(), trace);
  const std::string ddp = std::string(CUOVERLAP_TEST_DATA) + "/ddp/torchrun_record_ddp_ch4.sqlite.gz";
  const std::string out = (dir / evil).string();
  const std::vector<std::string> commands = {
      "$CLI analyze \"$T\" -o \"$O.json\"",
      "$CLI diff \"$T\" \"$T\" -o \"$O.md\"",
      "$CLI export \"$T\" -o \"$O.perfetto.json\"",
      "$CLI export " + ddp + " --format kineto -o \"$O.rank%r.json\"",
      "$CLI summarize \"$T\" -o \"$O.cosum\"",
      "CUOVERLAP_PROGRESS=always $CLI analyze \"$T\"",
  };
  // The hostile names travel in the environment: timedShell's command line cannot quote them.
  setenv("T", trace.c_str(), 1);
  setenv("O", out.c_str(), 1);
  for (const std::string& command : commands) {
    const TimedRun timed = timedShell(command, 120);
    INFO(command << "\n" << timed.run.err);
    CHECK(timed.run.exit_code == 0);
    CHECK_FALSE(timed.run.err.empty());
    for (const char* raw : {"\x1b]", "\x07", "\xe2\x80\xae", "\xc2\x9b", "\xff"}) {
      CHECK(timed.run.err.find(raw) == std::string::npos);
    }
    CHECK(timed.run.err.find("e\\x1b]0;t\\x07\\u202e\\u009b") != std::string::npos);
  }
  unsetenv("T");
  unsetenv("O");
}

// `lab score` prints a corpus's path and its manifest's strings (machine, program ids): inert on a
// terminal, and a path that is not UTF-8 is replaced in JSON instead of failing as an internal error.
TEST_CASE("lab score: a hostile corpus manifest and path are inert, JSON stays valid", "[robust24]") {
  // Two programs of the committed corpus that share one trace file, with that file.
  const std::string lab = std::string(CUOVERLAP_TEST_DATA) + "/lab";
  const fs::path dir = freshDirectory("robust_lab_\xff");
  nlohmann::json manifest = nlohmann::json::parse(readFile(lab + "/manifest.json"));
  const std::string trace = manifest["programs"][0]["trace"];
  fs::copy_file(lab + "/" + trace, dir / trace);
  nlohmann::json programs = nlohmann::json::array();
  for (const auto& program : manifest["programs"]) {
    if (program["trace"] == trace && programs.size() < 2) programs.push_back(program);
  }
  REQUIRE(programs.size() == 2);
  programs[0]["id"] = "g\x1b[31mX\r";
  manifest["programs"] = programs;
  manifest["machine"] = "\x1b]0;pwned\x07 GPU\xe2\x80\xae";
  std::ofstream(dir / "manifest.json") << manifest.dump();
  const TimedRun text = timedShell("$CLI lab score \"" + dir.string() + "\" --cases");
  INFO(text.run.out << text.run.err);
  CHECK(text.run.exit_code == 0);
  CHECK(text.run.out.find("recorded on \\x1b]0;pwned\\x07 GPU\\u202e") != std::string::npos);
  CHECK(text.run.out.find("  g\\x1b[31mX\\x0d ") != std::string::npos);
  for (const char* raw : {"\x1b", "\r", "\x07", "\xe2\x80\xae", "\xff"}) CHECK(text.run.out.find(raw) == std::string::npos);
  const TimedRun json = timedShell("$CLI lab score \"" + dir.string() + "\" --format json");
  INFO(json.run.err);
  CHECK(json.run.exit_code == 0);
  CHECK(nlohmann::json::parse(json.run.out)["corpus"].get<std::string>().find("robust_lab_\xef\xbf\xbd") !=
        std::string::npos);
}

TEST_CASE("-o through a symbolic link to a FIFO or a device is refused without --force", "[robust24]") {
  const fs::path dir = freshDirectory("robust_symlink_out");
  const std::string fifo = (dir / "pipe").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  fs::create_symlink(fifo, dir / "to_fifo.json");
  fs::create_symlink("/dev/null", dir / "to_null.json");
  for (const char* link : {"to_fifo.json", "to_null.json"}) {
    const TimedRun timed = timedShell("$CLI analyze " + pageable() + " --format json -o " + (dir / link).string(), 10);
    INFO(link);
    CHECK(timed.seconds < 5);  // a FIFO opened for writing would block until a reader came
    expectOneErrorLine(timed.run);
    CHECK(timed.run.err.find("symbolic link") != std::string::npos);
    CHECK(fs::is_symlink(dir / link));
  }
  // With --force the link itself is replaced by the report; the FIFO is untouched.
  const TimedRun forced = timedShell("$CLI analyze " + pageable() + " --format json --force -o " +
                                     (dir / "to_fifo.json").string(), 10);
  CHECK(forced.run.exit_code == 0);
  CHECK(fs::is_regular_file(fs::symlink_status(dir / "to_fifo.json")));
  CHECK(fs::is_fifo(fifo));
}

TEST_CASE("an output given as a descriptor open on the input is refused", "[robust24]") {
  const fs::path dir = freshDirectory("robust_fd_out");
  const std::string trace = (dir / "t.sqlite").string();
  fs::copy_file(pageable(), trace);
  const std::string before = readFile(trace);
  for (const char* name : {"/proc/self/fd/3", "/dev/fd/3"}) {
    const TimedRun timed = timedShell("$CLI analyze " + trace + " --format json -o " + name + " 3<>" + trace);
    INFO(name);
    expectOneErrorLine(timed.run);
    CHECK(timed.run.err.find("is the input") != std::string::npos);
    CHECK(readFile(trace) == before);
  }
  // A descriptor on another file is written as before.
  const std::string other = (dir / "report.json").string();
  const TimedRun ok = timedShell("$CLI analyze " + trace + " --format json -o /proc/self/fd/3 3>" + other);
  CHECK(ok.run.exit_code == 0);
  CHECK(readFile(other).find("\"traces\"") != std::string::npos);
}

TEST_CASE("--force keeps the replaced file's permissions", "[robust24]") {
  const fs::path dir = freshDirectory("robust_force_mode");
  const std::string out = (dir / "report.json").string();
  { std::ofstream create(out); create << "old"; }
  REQUIRE(::chmod(out.c_str(), 0600) == 0);
  const TimedRun timed = timedShell("umask 022; $CLI analyze " + pageable() + " --format json --force -o " + out);
  REQUIRE(timed.run.exit_code == 0);
  struct stat st {};
  REQUIRE(::stat(out.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(readFile(out).find("\"traces\"") != std::string::npos);
}

TEST_CASE("two writers racing to one new file: exactly one wins without --force", "[robust24]") {
  const fs::path dir = freshDirectory("robust_race");
  for (int round = 0; round < 4; ++round) {
    const std::string out = (dir / ("report" + std::to_string(round) + ".html")).string();
    const std::string one = "$CLI analyze " + pageable() + " --format html -o " + out;
    const TimedRun timed = timedShell("(" + one + "; echo a=$? >&2) & (" + one + "; echo b=$? >&2) & wait");
    INFO(timed.run.err);
    const std::size_t wins = countOf(timed.run.err, "=0\n");
    const std::size_t refusals = countOf(timed.run.err, "=2\n");
    CHECK(wins == 1);
    CHECK(refusals == 1);
    CHECK(countOf(timed.run.err, "exists") == 1);
    CHECK(leftovers(dir).empty());
  }
}

TEST_CASE("a generated column is refused: outputs stay proportional to the stored data", "[robust24]") {
  const fs::path dir = freshDirectory("robust_generated");
  const std::string trace = (dir / "t.sqlite").string();
  fs::copy_file(pageable(), trace);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(trace.c_str(), &db) == SQLITE_OK);
  // 40 bytes stored per row, 1 MB read per row.
  CHECK(sqlite3_exec(db, "CREATE TABLE S2(id INTEGER, v TEXT GENERATED ALWAYS AS (printf('%.*c', 1000000, 'x')) VIRTUAL);"
                         "INSERT INTO S2(id) SELECT id FROM StringIds; DROP TABLE StringIds; "
                         "ALTER TABLE S2 RENAME TO StringIds; ALTER TABLE StringIds RENAME COLUMN v TO value;",
                     nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  REQUIRE(fs::file_size(trace) < 1000000);
  for (const std::string command : {"analyze --format html", "export --format kineto -o -"}) {
    const TimedRun timed = timedShell("$CLI " + command + " " + trace);
    INFO(command);
    expectOneErrorLine(timed.run);
    CHECK(timed.run.err.find("generated") != std::string::npos);
    CHECK(timed.run.out.size() < 100000);
  }
}

TEST_CASE("the Kineto export cuts long stored names, and says so", "[robust24]") {
  const fs::path dir = freshDirectory("robust_kineto_cap");
  const std::string trace = (dir / "t.sqlite").string();
  fs::copy_file(pageable(), trace);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(trace.c_str(), &db) == SQLITE_OK);
  // Every kernel's name becomes one stored string of 200 kB.
  CHECK(sqlite3_exec(db, "UPDATE StringIds SET value = 'k' || replace(hex(zeroblob(100000)), '0', 'n') "
                         "WHERE id IN (SELECT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL "
                         "UNION SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL)",
                     nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  const std::string out = (dir / "t.json").string();
  const TimedRun timed = timedShell("$CLI export --format kineto " + trace + " -o " + out);
  REQUIRE(timed.run.exit_code == 0);
  CHECK(timed.run.err.find("names cut to 1024 bytes") != std::string::npos);
  CHECK(fs::file_size(out) < 4 * fs::file_size(trace));
}

// Each instance's window now ends where the thread's next one begins (issue 21), so 20,000
// instances over the whole run visit each op about once and the sampling bound (every k-th
// instance past 2,000,000 visits) is not reached: the run stays fast and sums every instance.
TEST_CASE("--range over many overlapping instances is bounded work", "[robust24]") {
  const fs::path dir = freshDirectory("robust_overlapping_instances");
  const std::string trace = (dir / "t.sqlite").string();
  fs::copy_file(pageable(), trace);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(trace.c_str(), &db) == SQLITE_OK);
  // 20,000 instances of `r`, each over the whole run: every op and call is in every instance.
  CHECK(sqlite3_exec(db, "WITH RECURSIVE i(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM i WHERE k < 19999) "
                         "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) "
                         "SELECT (SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME) + k, "
                         "(SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL) + k, 60, 'r', "
                         "(SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1) FROM i",
                     nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  const TimedRun timed = timedShell("$CLI analyze " + trace + " --range r");
  INFO(timed.run.err);
  REQUIRE(timed.run.exit_code == 0);
  CHECK(timed.seconds < 10);
  CHECK(timed.run.out.find("20000") != std::string::npos);
  CHECK(timed.run.out.find("(evenly spaced) summed") == std::string::npos);
}
