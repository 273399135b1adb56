// The lab's description parser and validator (workloads/lab/program.h): every example of
// docs/lab.md and the hand-written programs are accepted and resolved as documented; each broken
// description is rejected with one line naming the step.
#include <catch2/catch.hpp>
#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lab_input.h"
#include "program.h"

namespace {

using cuoverlap::lab::BufferKind;
using cuoverlap::lab::parseProgram;
using cuoverlap::lab::Program;
using cuoverlap::lab::ProgramError;
using cuoverlap::lab::StepOp;
using nlohmann::json;

std::string readText(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

json everyStep() { return json::parse(readText(std::string(CUOVERLAP_LAB_DATA) + "/every_step.json")); }

// The message parseProgram throws for `description`, or "" when it is accepted.
std::string rejection(const json& description) {
  try {
    parseProgram(description);
  } catch (const ProgramError& error) {
    std::string message = error.what();
    CHECK(message.find('\n') == std::string::npos);
    return message;
  }
  return "";
}

// every_step.json with the value at `pointer` replaced (or removed when `value` is null).
json mutated(const std::string& pointer, const json& value) {
  json description = everyStep();
  json::json_pointer at(pointer);
  if (value.is_null()) {
    description[at.parent_pointer()].erase(at.back());
  } else {
    description[at] = value;
  }
  return description;
}

}  // namespace

TEST_CASE("every_step.json resolves names, defaults and alloc'ed buffers") {
  Program program = parseProgram(everyStep());
  CHECK(program.id == "every-step");
  REQUIRE(program.threads.size() == 2);
  REQUIRE(program.buffers.size() == 6);  // five declared, then the alloc'ed t0
  CHECK(program.buffers[5].name == "t0");
  CHECK_FALSE(program.buffers[5].declared);
  CHECK(program.buffers[5].kind == BufferKind::kPinned);
  const auto& steps = program.threads[0].steps;
  CHECK(steps[1].op == StepOp::kKernel);
  CHECK(steps[1].block == 128);
  CHECK(steps[1].touch_bytes == 65536);
  Program whole = parseProgram(mutated("/threads/0/steps/1/touch_bytes", nullptr));
  CHECK(whole.threads[0].steps[1].touch_bytes == 4194304);  // the buffer's size by default
  CHECK(steps[11].touch_bytes == 4096);
  CHECK(steps[11].block == 256);
  CHECK(steps[7].op == StepOp::kLoop);
  CHECK(steps[7].count == 2);
  CHECK(steps[7].body[1].path == "threads[0].steps[7].body[1]");
  CHECK_FALSE(steps[7].body[1].async);
  CHECK(steps[7].body[1].stream == -1);
  CHECK(program.graphs[0].body[2].dst_offset == 65536);
  CHECK(program.threads[1].steps[1].count == 0);
  CHECK_FALSE(program.streams[0].high_priority);
  CHECK(program.streams[1].high_priority);  // created with the device's greatest priority
}

TEST_CASE("every JSON example in docs/lab.md is a valid description") {
  std::string doc = readText(CUOVERLAP_LAB_DOC);
  std::regex block("```json\n([\\s\\S]*?)```");
  int examples = 0;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), block); it != std::sregex_iterator(); ++it) {
    json example = json::parse((*it)[1].str());
    INFO((*it)[1].str());
    if (example.contains("variants")) {
      CHECK(cuoverlap::lab::parseCorpusLine(example, {}, "doc").variants.size() >= 1);
    } else {
      CHECK(rejection(example).empty());
    }
    ++examples;
  }
  CHECK(examples >= 2);
}

TEST_CASE("a broken description is one line naming the step") {
  struct Case {
    std::string pointer;
    json value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"/threads/0/steps/0/src", "h9", "every-step: threads[0].steps[0]: copy: unknown buffer \"h9\""},
      {"/threads/0/steps/7/body/1/src", "d9",
       "every-step: threads[0].steps[7].body[1]: copy: unknown buffer \"d9\""},
      {"/threads/0/steps/0/bytes", 4194305, "threads[0].steps[0]: copy: 4194305 bytes overrun buffer \"d0\""},
      {"/threads/0/steps/4/dst_offset", 3145729,
       "threads[0].steps[4]: copy: 1048576 bytes at dst_offset 3145729 overrun buffer \"p0\""},
      {"/threads/0/steps/1/grid", 0, "threads[0].steps[1]: kernel: grid: 0 is below 1"},
      {"/threads/0/steps/1/block", 0, "threads[0].steps[1]: kernel: block: 0 is below 1"},
      {"/threads/0/steps/1/block", 2048, "kernel: block: 2048 threads is over 1024"},
      {"/threads/0/steps/1/us", -1, "threads[0].steps[1]: kernel: us: -1 is below"},
      {"/threads/0/steps/1/stream", "s7", "threads[0].steps[1]: kernel: unknown stream \"s7\""},
      {"/threads/0/steps/1/buffer", "h0", "kernel: buffer \"h0\": a kernel cannot touch pageable"},
      {"/threads/0/steps/1/touch_bytes", 8388608, "kernel: 8388608 bytes overrun buffer \"d0\""},
      {"/threads/0/steps/1/op", "launch", "threads[0].steps[1]: unknown op \"launch\""},
      {"/threads/0/steps/1/grdi", 3, "threads[0].steps[1]: kernel: unknown field \"grdi\""},
      {"/threads/0/steps/2/event", "e5", "threads[0].steps[2]: record: unknown event \"e5\""},
      {"/threads/0/steps/5/what", "context", "sync: what: \"context\" is not one of device, event, stream"},
      {"/threads/0/steps/5/stream", nullptr, "threads[0].steps[5]: sync: missing field \"stream\""},
      {"/threads/0/steps/6/buffer", "d0", "host_read: buffer \"d0\": the host cannot read device memory"},
      {"/threads/0/steps/7/count", -1, "threads[0].steps[7]: loop: count: -1 is below 0"},
      {"/threads/0/steps/7/body/3", json{{"op", "host"}, {"us", 1}},
       "threads[0].steps[7].body[0]: alloc: buffer \"t0\" is already alloc'ed"},
      {"/threads/0/steps/7/body/0/buffer", "d0",
       "threads[0].steps[7].body[0]: alloc: buffer \"d0\" is declared in buffers"},
      {"/threads/0/steps/7/body/3/buffer", "d1", "body[3]: free: buffer \"d1\" is declared, not alloc'ed"},
      {"/threads/1/steps/2", json{{"op", "free"}, {"buffer", "t0"}},
       "threads[1].steps[2]: free: buffer \"t0\" is alloc'ed by another thread"},
      {"/threads/0/steps/10/op", "memset", "threads[0].steps[10]: memset: unknown field \"graph\""},
      {"/threads/0/steps/10/graph", "g1", "threads[0].steps[10]: graph_launch: unknown graph \"g1\""},
      {"/threads/0/steps/13/buffer", "d0", "prefetch: buffer \"d0\" is not managed memory"},
      {"/threads/0/steps/13/to", "peer", "prefetch: to: \"peer\" is not one of device, host"},
      {"/threads/0/steps/9/buffer", "h0", "memset: buffer \"h0\": a memset cannot write pageable"},
      {"/graphs/0/body/1/stream", "s0", "graphs[0].body[1]: memset: not on the graph's stream \"s1\""},
      {"/graphs/0/body/2/async", false, "graphs[0].body[2]: copy: a graph body holds only kernel"},
      {"/graphs/0/body/0/op", "host", "graphs[0].body[0]: host: unknown field \"buffer\""},
      {"/graphs/0/stream", "null", "graphs[0]: stream: the legacy default stream cannot be captured"},
      {"/buffers/1/kind", "texture", "buffers[1]: kind: \"texture\" is not one of device, managed"},
      {"/buffers/1/bytes", 0, "buffers[1]: bytes: 0 is below 1"},
      {"/buffers/2/name", "h0", "buffers[2]: duplicate name \"h0\""},
      {"/streams/1/kind", "default", "streams[1]: kind: \"default\" is not one of blocking, legacy"},
      {"/streams/0/priority", "low", "streams[0]: priority: \"low\" is not high"},
      {"/streams/2/priority", "high", "streams[2]: priority: only a created (blocking or nonblocking) stream"},
      {"/events/0", "e0", "events[0]: not a JSON object"},
      {"/threads", json::array(), "every-step: threads: a program has at least one thread"},
      {"/schema", "cuoverlap-lab/2", "every-step: schema: \"cuoverlap-lab/2\" is not cuoverlap-lab/1"},
  };
  for (const Case& c : cases) {
    INFO(c.pointer << " = " << c.value.dump());
    std::string message = rejection(mutated(c.pointer, c.value));
    CHECK_THAT(message, Catch::Matchers::Contains(c.message));
  }
}

TEST_CASE("an alloc'ed buffer is freed by the end of its thread and used only while allocated") {
  json never_freed = everyStep();
  never_freed["threads"][0]["steps"][7]["body"].erase(3);
  never_freed["threads"][0]["steps"][7]["count"] = 1;
  CHECK(rejection(never_freed) == "every-step: threads[0]: buffer \"t0\" is alloc'ed and never freed");

  json use_after_free = everyStep();
  use_after_free["threads"][0]["steps"].push_back({{"op", "host_read"}, {"buffer", "t0"}});
  CHECK(rejection(use_after_free) ==
        "every-step: threads[0].steps[19]: host_read: buffer \"t0\" is not alloc'ed at this step");

  json hoisted = everyStep();  // the hoisting fix: alloc before the loop, free after it
  auto& steps = hoisted["threads"][0]["steps"];
  json body = steps[7]["body"];
  steps[7]["body"] = json::array({body[1], body[2]});
  steps.insert(steps.begin() + 8, body[3]);
  steps.insert(steps.begin() + 7, body[0]);
  CHECK(rejection(hoisted).empty());
}

TEST_CASE("corpus lines: every variant validated, errors name the variant and the line") {
  json line = {{"id", "g000017"}, {"seed", 7}, {"shape", "pipeline"},
               {"variants", {{"baseline", everyStep()}, {"pin-host", everyStep()}}}};
  auto input = cuoverlap::lab::parseCorpusLine(line, {}, "line 3");
  REQUIRE(input.variants.size() == 2);
  CHECK(input.variants[0].first == "baseline");
  CHECK(input.variants[1].first == "pin-host");
  CHECK(cuoverlap::lab::parseCorpusLine(line, {"pin-host"}, "line 3").variants.size() == 1);

  line["variants"]["pin-host"]["threads"][0]["steps"][0]["stream"] = "s9";
  try {
    cuoverlap::lab::parseCorpusLine(line, {}, "line 3");
    FAIL("accepted");
  } catch (const ProgramError& error) {
    CHECK(std::string(error.what()) ==
          "every-step: threads[0].steps[0]: copy: unknown stream \"s9\" (variant pin-host, line 3)");
  }
  line["variants"].erase("baseline");
  CHECK_THROWS_WITH(cuoverlap::lab::parseCorpusLine(line, {}, "line 3"),
                    Catch::Matchers::Contains("\"variants\" must be an object holding \"baseline\""));
}

TEST_CASE("a rep's variant order: as listed when fixed, a permutation of its own per rep when shuffled") {
  cuoverlap::lab::LabInput input{"g000017", {}};
  for (const char* name : {"baseline", "async-copy", "defer-read", "graph-capture", "pin-host", "remove-sync"}) {
    input.variants.emplace_back(name, cuoverlap::lab::Program{});
  }
  const std::vector<std::size_t> listed{0, 1, 2, 3, 4, 5};
  CHECK(cuoverlap::lab::repOrder(input, 1, false) == listed);
  CHECK(cuoverlap::lab::repOrder(input, 7, false) == listed);
  std::set<std::vector<std::size_t>> orders;
  std::vector<int> baseline_at(input.variants.size(), 0);  // per place: the reps that ran the baseline there
  for (int rep = 1; rep <= 60; ++rep) {
    std::vector<std::size_t> order = cuoverlap::lab::repOrder(input, rep, true);
    CHECK(order == cuoverlap::lab::repOrder(input, rep, true));  // the same draw every time
    orders.insert(order);
    ++baseline_at[static_cast<std::size_t>(std::find(order.begin(), order.end(), 0) - order.begin())];
    std::sort(order.begin(), order.end());
    CHECK(order == listed);  // each variant exactly once
  }
  CHECK(orders.size() > 40);  // 720 orders: 60 reps draw mostly different ones
  for (const int count : baseline_at) CHECK(count > 0);  // the baseline runs in every place
  cuoverlap::lab::LabInput other = input;
  other.id = "g000018";
  CHECK(cuoverlap::lab::repOrder(other, 1, true) != cuoverlap::lab::repOrder(input, 1, true));
  // Fixed by its definition, not by the standard library's: a recording can be repeated anywhere.
  CHECK(cuoverlap::lab::repOrder(input, 1, true) == (std::vector<std::size_t>{1, 5, 4, 2, 0, 3}));
}
