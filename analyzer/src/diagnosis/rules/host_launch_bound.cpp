// host-launch-bound: the device idled between kernels because the host could not launch
// them fast enough. Fires when the device ran at least 20 kernels (of any median duration: the
// what-if below decides what a graph saves; the 50 µs median it once asked for stood in for a
// device-wide barrier waiting for a whole graph, lab c1 g000295, now in the schedule, and for
// loops taken for dispatchers, now told by their threads), and idle gaps between two kernels
// attributed to host-launch or host-busy (the host was late: launching, or in its own per-launch
// code; of any length) add up to at least 10% of the device span. Severity by share: a warning,
// an error from 25% of the span (as every warning).
// Without that idle time (the device busy back to back) it still fires where the graph what-if
// below saves at least 1% of the span through the graphs' shorter handoffs between kernel nodes,
// or in all where the device was busy for most of the span: info, a warning from 5%, its cost the
// whole what-if.
// Cost, when the advice is a graph: what capturing the launches in graphs saves, by the what-if
// schedule. A graph replay removes the launch calls, and the host code that only issues launches,
// not the host's own work. Per host thread, a run is the launches to one stream (kernels,
// asynchronous copies and memsets) until a blocking call of the thread or a launch to another
// stream; a run on a legacy default stream whose launch calls overlapped another thread's launch
// calls to it stays launches. When before the run's median launch the host spent longer in its own
// code than in the launch call, and the quickest quarter of its thread's launches (over all the
// thread's runs) still waited on host code for over kDispatchLowShare (0.35) of the thread's
// launch call, that code is per-launch logic (a framework's dispatcher: Python, PyTorch), and one
// graph launch replaces the run: the host gets back every other launch call, with the time before
// it. Otherwise (a loop that only launches) host code longer than a launch
// call between two launches is work of its own, which stays and starts a new graph. Either way a
// launch sequence the run repeats (a loop's body) is captured once and replayed per iteration:
// each repetition is a graph launch of its own. In a loop that only launches, copies to or from
// the host stay launches (as graph nodes they cost the graph launch about their own launch call's
// time): the launches between them form the graphs. The other launch calls go with the time before
// them. A graph launch is not free: it takes a typical launch call (the run's median: a first launch after a
// synchronize often took 2-3 times that) and a time per node beyond the first (measured from the
// trace's own graph launches, else as on an H100 scaled by the run's launch call against that
// host's), and a graph's first launch uploads it (as on an H100, scaled likewise), which is taken
// from what its launches give back, and the graph's nodes are submitted as it ends, so its first
// op is released that much later (less the microsecond the device gets them before the call is
// done); a run is captured only where the host time it gives back and its kernels' shorter
// handoffs outweigh that. A graph's kernels follow each other after the
// graph's node handoff (measured from the trace's own replays, else as on an H100), shorter than
// the stream's handoff between kernels launched one by one, which saves time also where the
// device was never idle for the host. The schedule (schedule_estimate.h, with the host's blocking
// calls and the stream waits) releases the later launches that much sooner; the cost is the span
// before minus after. Where: the gaps (on a busy device, the handoffs a graph would shorten).
// Advice: capture the launches in a CUDA graph, unless the kernels after most of that idle time
// already ran as graph nodes (a graph replay loop): then the host is late between replays, and the
// fix is more work per replay, not a graph, and the cost the idle gaps' total.
// Needs: launch calls.
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/host_time_given.h"
#include "diagnosis/idle_gaps.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/median.h"
#include "diagnosis/overlap_index.h"
#include "diagnosis/rules/allocation_holds.h"
#include "diagnosis/rules/legacy_threads.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr std::size_t kMinKernels = 20;
constexpr double kMinIdleShare = 0.1;
// A graph launch's host time per node after its first, where the trace launched no graph: under
// the collector on an H100, cudaGraphLaunch of 3 to 15 kernel nodes took a traced
// cudaLaunchKernel's time (6-7 µs) plus 1.3-2.5 µs per further node, median 1.8 µs (11 graphs of
// the lab's graph-capture variants, 2026-11-24); the nodes started 1.5-2 µs after it returned.
constexpr Ns kGraphNodeLaunchNs = 1'800;
// The traced cudaLaunchKernel of the host those graph launch times were measured on: 6.95 µs at the
// median over the one-thread programs' baselines of the lab's variant recordings (40 programs,
// 2026-11-25). The graph launch's own host work runs on that CPU as a launch call does, so where a
// run's typical launch call is faster or slower, its graph launch's costs below scale with it.
constexpr Ns kMeasuredLaunchCallNs = 7'000;
// What a graph launch's further node costs against the run's typical launch call (kc): over the
// 2,195 kernel-only graph launches of two or more nodes in the fixed programs' own traces of the six
// recorded corpora (/work/vt34, 2026-11-27; one-thread programs, relaunches 60-400 µs after the
// graph's last launch), the call took kc plus, per further node, 0.68 µs at kc 3.5-4.2 µs, 0.71 at
// 4.2-4.6, 0.97 at 4.6-5.0, 1.25 at 5.0-5.5, 1.36 at 5.5-6.0, 1.58 at 6.0-6.5 and 1.66 at 6.5-8:
// about kGraphNodeLaunchSlope per µs of kc beyond kGraphNodeFreeLaunchNs (the part of a traced
// launch call a node does not pay again), where kGraphNodeLaunchNs scaled by kc (1.08 µs at kc 4.2)
// charged low-kc hosts a third too much. Never more than that scaling, which holds where kc is
// itself long (launch calls held by other threads).
constexpr double kGraphNodeLaunchSlope = 0.35;
constexpr Ns kGraphNodeFreeLaunchNs = 2'200;
// A relaunch of a graph whose previous launch ended this long before takes longer than a relaunch
// soon after: over the same launches, beyond kc and the nodes' price above, +0.2 µs at the median
// 60-150 µs after, +0.8 µs 150-400 µs after, +2.6 µs 400-1000 µs after and +2.1 µs later, half of
// the program's kc (kGraphRelaunchShare; a graph's first launch, kGraphUploadNs, took 1.25 kc).
constexpr Ns kGraphRelaunchIdleNs = 400'000;
constexpr double kGraphRelaunchShare = 0.5;
// A graph's first launch uploads its work to the device (a program that does not call
// cudaGraphUpload after instantiating pays this at that launch): over the 185 kernel-only graph
// launches of one-thread programs in the lab's graph-capture variants (2026-11-25), a graph's first
// launch took 10.6 µs beyond a typical launch call and 1.8 µs a further node (33 launches), a
// relaunch 0.1 µs (within 60 µs of the graph's last launch, 73 launches) to 5.0 µs (after 400 µs,
// 51).
constexpr Ns kGraphUploadNs = 10'600;
// How much sooner than its nodes' time a graph launch releases its first op. On an idle device a
// graph's first node starts 2.12 µs after its cudaGraphLaunch returns, a launched kernel 2.31 µs
// after its cudaLaunchKernel (the median over 1,790 and 4,403 such calls in the fixed programs'
// own traces of 2026-11-27): the graph submits its work as the call ends, about 0.2 µs sooner.
// 500 ns (300-500 score the nine corpora the same; 0 and 700 lose cases). Before (1 µs, below)
// this also stood for the per-node price's excess at low kc. Earlier: the lab's loops of one
// kernel-only graph launch and a stream synchronize (2026-11-26, both recordings of the corpus; the
// loops of 7 to 41 iterations of ten programs) leave an iteration's first kernel later than the
// baseline's, by what the measured saving per iteration says against the baseline's kernel
// handoffs, than the call's time per further node would hold it by 1.1-2.6 µs at 3 to 6 nodes
// and 1.6-10 µs at 8 to 16: the device gets the graph's work before the call's per-node work is
// done. The least of them, rounded down.
constexpr Ns kGraphFirstOpEarlyNs = 500;
// The device's handoff between two kernel nodes of one graph launch, where the trace replays no
// graph: on an H100 under the collector, 415 ns at the median over the 1,156 queued node pairs of
// tests/data/frameworks/torch_launch_graphs.sqlite and the 5,778 of headline/graphs.sqlite
// (PyTorch CUDA graphs, 2026-11-23), whose same kernels launched on a stream in
// torch_launch_eager.sqlite and headline/eager.sqlite handed off after 960 and 1,216 ns.
constexpr Ns kGraphNodeHandoffNs = 415;
// What the device takes longer to start a graph launch's first kernel, queued behind an op of its
// stream, than a queued kernel launched on its own: in the fixed programs' own traces (/work/vt34,
// nvidia-h100-x1, 2026-11-27; the graph-capture variants of six corpora) a graph's first kernel
// started 2.88 µs after the kernel before it ended (median of 19 programs of the corpus) where the
// baseline's queued kernels started 1.2 µs after theirs; over the six corpora 1.63 µs more (58
// programs, 687 entries; quartiles 1.26-2.35 µs); after a copy the in-graph copy-to-kernel
// handoff is 2.4 µs longer than the stream's (7.1 against 4.7 µs, corpus and held out). 1.4-1.7
// µs score the nine corpora the same (1.0 and 2.0 lose cases).
constexpr Ns kGraphEntryNs = 1'600;
// Without idle time to speak of (the device busy back to back), the finding fires when the graphs'
// shorter node handoffs save this share of the span, as info below kWarningSavingShare of it in
// all (host-busy's and module-load's thresholds).
constexpr double kMinSavingShare = 0.01;
// The busy-device path's test of the node handoffs alone, now that a graph's entry is charged
// against them (kGraphEntryNs): 0.5% of the span (0.5-0.75% score the nine corpora alike; 0.35%
// names held-out g001031, 1% leaves c1 g000229 and c3 g000080 unnamed).
constexpr double kMinHandoffShare = 0.005;
constexpr double kWarningSavingShare = 0.05;
// The busy-device finding also fires on what capturing saves in all (not only through the node
// handoffs) where the device was busy for at least this share of the span: most of it, as the
// finding's premise says (the device ran the launches back to back). In the lab the devices it
// names are 83-99% busy; the whole-trace views of tests/data's framework traces, idle through
// module loads and warm-up, 0.1-1%: 25% and 75% score the four lab corpora the same.
constexpr double kBusyShare = 0.5;
// How long the host's own code before its thread's quickest quarter of launches must be, against
// the thread's typical launch call, for its runs to count as dispatched (dispatchedRun). Measured
// per thread over all its runs, the 77 framework and nsys traces fall in two groups: PyTorch's
// threads (eager, DDP, FSDP, compile, dataloader: 0.44-3.7 launch calls; DDP's forward threads
// the lowest, 0.44-0.50) and XLA's launch threads in the JAX traces (0.12-0.20: launches back to
// back); the lab's loops with host steps of their own sit at 0.1-0.3 (c9 g007023, g007073, c6
// g004014, c5 g003060, c2 g001022). 0.3-1.0 score the nine corpora alike (0.25 keeps c2 g001022
// dispatched, 0.2 also c5 g003060 and c9 g007023); the 77 traces' reports are alike from 0.2 to
// 0.43 (only jax_jit moves against the median test alone; 0.5 moves kineto DDP's forward threads,
// 1.0 headline_compile's too). Per run instead of per thread (lab58-hlb2) the same test cut
// through PyTorch's runs (FSDP's 11-launch runs: 0.18-0.25 of their launch call).
constexpr double kDispatchLowShare = 0.35;
// The fewest gaps between a thread's launches whose lower quartile says more than their minimum.
constexpr std::size_t kMinQuartileGaps = 4;

std::size_t kernelCount(const DeviceView& view) {
  std::size_t kernels = 0;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (view.kindAt(pos) == OpKind::kKernel) ++kernels;
  }
  return kernels;
}

// What a launch launched, as far as a loop repeats it: the op's kind, kernel, grid and block, or
// copy or memset size and direction. Equal launches get equal numbers.
using LaunchShape = std::uint32_t;

// A run of launches one host thread made in a row to one stream: per launch its call and shape,
// and per launch after the first the host time since the previous launch returned (its own code
// and calls that neither launch nor block).
struct LaunchRun {
  std::uint64_t stream = 0;
  std::vector<std::size_t> calls;
  std::vector<LaunchShape> shapes;
  std::vector<Ns> own_code;
};

// The period of a loop's launches: the length of the shortest launch sequence that `shapes`
// repeats at least twice (the last repetition may be cut short), or 0 where there is none of two
// or more launches (one launch repeated is one loop body, not many). O(n) by the prefix function
// (Knuth-Morris-Pratt): a sequence's shortest period is its length minus its longest proper
// prefix that is also its suffix.
std::size_t loopPeriod(const std::vector<LaunchShape>& shapes) {
  const std::size_t n = shapes.size();
  if (n < 4) return 0;
  std::vector<std::size_t> border(n, 0);
  for (std::size_t i = 1; i < n; ++i) {
    std::size_t k = border[i - 1];
    while (k > 0 && shapes[i] != shapes[k]) k = border[k - 1];
    if (shapes[i] == shapes[k]) ++k;
    border[i] = k;
  }
  const std::size_t period = n - border[n - 1];
  return period >= 2 && 2 * period <= n ? period : 0;
}

// The host time a graph launch takes per node after its first: the median over the trace's
// cudaGraphLaunch calls of two or more kernel nodes of the call's time beyond the trace's median
// kernel launch call, over its further nodes; none without both.
std::optional<Ns> graphNodeLaunchTime(const DeviceView& view) {
  std::unordered_map<std::size_t, Ns> nodes;  // launch call -> the kernels it launched
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (view.kindAt(pos) != OpKind::kKernel) continue;
    if (const auto launch = view.launchCall(view.op(view.ops()[pos]))) ++nodes[*launch];
  }
  std::vector<Ns> kernel_launch;
  std::vector<std::pair<Ns, Ns>> graph_launch;  // (duration, nodes)
  for (const auto& [call, count] : nodes) {
    const Ns duration = view.call(call).end - view.call(call).start;
    if (view.callName(call).rfind("cudaGraphLaunch", 0) == 0) {
      if (count >= 2) graph_launch.emplace_back(duration, count);
    } else if (count == 1) {
      kernel_launch.push_back(duration);
    }
  }
  if (graph_launch.empty() || kernel_launch.empty()) return std::nullopt;
  const Ns one_launch = medianOf(std::move(kernel_launch));
  std::vector<Ns> per_node;
  for (const auto& [duration, count] : graph_launch) {
    per_node.push_back(std::max<Ns>(0, duration - one_launch) / (count - 1));
  }
  return medianOf(std::move(per_node));
}

// The handoff between two kernel nodes of one graph: the trace's own, else the H100's.
Ns nodeHandoff(const DeviceView& view) {
  const Ns measured = view.graphNodeHandoff();
  return measured > 0 ? measured : kGraphNodeHandoffNs;
}

// What graph launches in place of a run give back: host time per call (the launch calls gone, less
// the graph launch's time per node), and per graph its first call, whose op the graph launch
// releases later by that time for its other nodes, less kGraphFirstOpEarlyNs (it submits them as
// it ends); and per launch call of a graph of two or more nodes the graph's number, whose kernels
// hand off to each other as a graph's nodes do. `handoff_gain`: what a kernel node following a
// kernel node gains over the stream's kernel-to-kernel handoff.
struct GraphWhatIf {
  std::optional<Ns> node_launch;  // the trace's own (graphNodeLaunchTime), else per run (scaled)
  Ns handoff_gain = 0;
  std::unordered_set<std::size_t> kernel_calls;  // launch calls of kernels
  std::unordered_set<std::size_t> host_copy_calls;  // launch calls of copies to or from the host
  std::vector<HostTimeGiven> given;
  std::vector<HostTimeGiven> later;
  std::unordered_map<std::size_t, std::int64_t> graph_of_call;
  std::int64_t graphs = 0;
  // Each graph launched (its launches' shapes): when its last launch's calls ended.
  std::map<std::vector<LaunchShape>, Ns> launched_graphs;
};

// Where in `run` a graph launch starts (true at its first launch): after host code of its own
// (longer than a launch call, where the launches are not dispatched), and, within a stretch of
// launches between such code, at each repetition of the loop body the stretch repeats
// (loopPeriod). A loop's body is captured once and replayed per iteration: the device starts an
// iteration's first op once that iteration's graph is launched, not once a graph of the whole
// loop has submitted every node.
std::vector<bool> graphStarts(const LaunchRun& run, bool dispatched, Ns typical_launch) {
  const std::size_t n = run.calls.size();
  std::vector<bool> starts(n, false);
  if (n > 0) starts[0] = true;
  for (std::size_t k = 1; k < n; ++k) starts[k] = !dispatched && run.own_code[k - 1] > typical_launch;
  std::vector<LaunchShape> shapes;
  for (std::size_t begin = 0; begin < n;) {
    std::size_t end = begin + 1;
    while (end < n && !starts[end]) ++end;
    shapes.assign(run.shapes.begin() + static_cast<std::ptrdiff_t>(begin),
                  run.shapes.begin() + static_cast<std::ptrdiff_t>(end));
    if (const std::size_t period = loopPeriod(shapes); period > 0) {
      for (std::size_t k = begin + period; k < end; k += period) starts[k] = true;
    }
    begin = end;
  }
  return starts;
}

// What a thread's launches look like over all its runs (launchesAGraphRemoves): the lower
// quartile of the host's own time before each launch that followed another of its run, and the
// median launch call of those runs.
struct ThreadLaunches {
  Ns low_gap = 0;
  Ns typical_launch = 0;
  std::size_t gaps = 0;
};

// Whether a run's launches are issued by per-launch logic (a framework's dispatcher): the host's
// own time before its median launch is longer than its median launch call, and its thread is a
// dispatcher's: the quickest quarter of the thread's launches, over all its runs, still waits on
// host code for more than kDispatchLowShare of the thread's typical launch call. A dispatcher runs
// its logic before every launch; a loop that only launches, with host work of its own between
// some of its launches, issues a quarter or more of them back to back (kDispatchLowShare). Per
// thread, not per run: a run's own quarter cut through PyTorch's runs (FSDP's 11-launch runs, a
// 17.8-25.5 ms stall inside, 0.18-0.25 of their launch call, on threads at 1.07-1.1), and a run of
// two or three launches has too few gaps to tell (lab c6 g004056's 2-launch runs around a 183-189
// µs host step of main's own, on a thread whose other launches follow after 0.9-1.1 µs; jax_jit's
// 2-launch run with a 9.7 ms host gap, on an XLA thread at 0.19).
bool dispatchedRun(const std::vector<Ns>& own_code, Ns typical_launch, const ThreadLaunches& thread) {
  if (own_code.empty() || medianOf(own_code) <= typical_launch) return false;
  return thread.gaps < kMinQuartileGaps ||
         static_cast<double>(thread.low_gap) >
             kDispatchLowShare * static_cast<double>(thread.typical_launch);
}

// What graph launches in place of `run` give the host back. When the run is dispatched
// (dispatchedRun: the host's own time before its median launch is longer than its median launch
// call, on a thread whose launches wait on host code), the launches are issued by per-launch
// logic (a framework's dispatcher: Python, PyTorch's autograd), which a replay does not run: one
// graph launch replaces the run (one per repetition of a loop's body: graphStarts), and every
// other launch call goes with the host time before it. Otherwise the launches follow each other
// faster than a launch takes (a loop that only launches), and host code longer than a launch call
// between two of them is work of its own that the graph cannot hold: a new graph starts after it,
// as at each repetition of the loop's body. Each launch that follows its predecessor sooner than
// that goes with the host time before it.
// A graph launch takes the run's typical (median) launch call, where its first launch call may have
// taken longer, and each node after its first costs it the trace's own time per node, else
// kGraphNodeLaunchSlope of the run's typical launch call beyond kGraphNodeFreeLaunchNs (at most
// kGraphNodeLaunchNs scaled by that call against kMeasuredLaunchCallNs); a graph's first launch (the
// first of its launches' shapes in the trace) also uploads it (kGraphUploadNs, scaled likewise), and
// a relaunch more than kGraphRelaunchIdleNs after its graph's last launch takes kGraphRelaunchShare
// of a typical launch call more: both are taken from what it gives back, and release its first
// op that much later, less kGraphFirstOpEarlyNs. Whether a run is worth capturing is judged
// without the upload, which a loop that replays the graph pays once.
// A run is captured unless its launch holds back its first op longer than its graph gains: the
// host time it gives back and its kernels' shorter handoffs against that node time. Where the
// launches are not dispatched, copies to or from the host are not captured: such a copy node costs
// cudaGraphLaunch about what the copy's own launch call took, or more (measured on HtoD and DtoH
// nodes; memset and device-to-device nodes, which the device runs itself, were not), so the graph
// gives nothing back for it (a dispatched copy still gives back the per-launch logic before it).
void giveBackRun(const DeviceView& view, const LaunchRun& run, GraphWhatIf& what,
                 const ThreadLaunches& thread) {
  if (run.calls.size() < 2) return;
  std::vector<Ns> launch_time;
  for (const std::size_t call : run.calls) {
    launch_time.push_back(view.call(call).end - view.call(call).start);
  }
  const Ns typical_launch = medianOf(launch_time);
  const bool dispatched = dispatchedRun(run.own_code, typical_launch, thread);
  const double host_speed = what.node_launch ? 1.0
                                             : static_cast<double>(typical_launch) /
                                                   static_cast<double>(kMeasuredLaunchCallNs);
  const Ns scaled_node = static_cast<Ns>(host_speed * static_cast<double>(kGraphNodeLaunchNs));
  const Ns node_launch = what.node_launch.value_or(std::min(
      scaled_node, std::max<Ns>(0, static_cast<Ns>(kGraphNodeLaunchSlope *
                                                   static_cast<double>(typical_launch - kGraphNodeFreeLaunchNs)))));
  const Ns relaunch_idle = static_cast<Ns>(kGraphRelaunchShare *
                                           static_cast<double>(std::min(typical_launch, kMeasuredLaunchCallNs)));
  const Ns upload = static_cast<Ns>(host_speed * static_cast<double>(kGraphUploadNs));
  std::size_t graph_start = 0;
  std::vector<HostTimeGiven> given;  // the graph's in progress
  const auto endGraph = [&](std::size_t end) {
    const Ns nodes_after_first = static_cast<Ns>(end - graph_start) - 1;
    const Ns held = std::max<Ns>(0, nodes_after_first * node_launch - kGraphFirstOpEarlyNs);
    Ns gain = 0;
    for (const HostTimeGiven& part : given) gain += part.amount;
    for (std::size_t k = graph_start + 1; k < end; ++k) {
      if (what.kernel_calls.count(run.calls[k - 1]) != 0 && what.kernel_calls.count(run.calls[k]) != 0) {
        gain += what.handoff_gain;
      }
    }
    // The graph launch takes a typical launch call, not the time its first launch call took (often
    // 2-3 times as long after a synchronize or a copy): the rest returns sooner, with its op.
    const Ns slow_first = std::max<Ns>(0, launch_time[graph_start] - typical_launch);
    gain += slow_first;
    if (nodes_after_first > 0 && gain >= held) {
      std::vector<LaunchShape> shapes(run.shapes.begin() + static_cast<std::ptrdiff_t>(graph_start),
                                      run.shapes.begin() + static_cast<std::ptrdiff_t>(end));
      // Its first launch uploads it, a relaunch long after the graph's last launch takes longer
      // too: the host gets that much less back, from its first calls on.
      const Ns calls_start = view.call(run.calls[graph_start]).start;
      const Ns calls_end = view.call(run.calls[end - 1]).end;
      const auto [last, added] = what.launched_graphs.try_emplace(std::move(shapes), calls_end);
      Ns first_launch = added ? upload : 0;
      if (!added) {
        if (calls_start - last->second > kGraphRelaunchIdleNs) first_launch = relaunch_idle;
        last->second = calls_end;
      }
      Ns left = first_launch;
      for (HostTimeGiven& part : given) {
        const Ns taken = std::min(left, std::max<Ns>(0, part.amount));
        part.amount -= taken;
        left -= taken;
      }
      what.later.push_back({run.calls[graph_start], held + first_launch});
      if (slow_first > 0) what.given.push_back({run.calls[graph_start], slow_first, true});
      what.given.insert(what.given.end(), given.begin(), given.end());
      for (std::size_t k = graph_start; k < end; ++k) what.graph_of_call[run.calls[k]] = what.graphs;
      ++what.graphs;
    }
    given.clear();
  };
  std::vector<bool> starts = graphStarts(run, dispatched, typical_launch);
  // In a loop that only launches, a copy to or from the host stays a launch: as a graph node it
  // costs the graph launch about the time its own launch call took, so the graph gives nothing back
  // for it. The launches around it are captured as graphs of their own. A dispatched run keeps its
  // copies: the per-launch logic before a copy is host time a replay skips too.
  for (std::size_t k = 1; k < run.calls.size() && !dispatched; ++k) {
    if (what.host_copy_calls.count(run.calls[k]) != 0 || what.host_copy_calls.count(run.calls[k - 1]) != 0) {
      starts[k] = true;
    }
  }
  for (std::size_t k = 1; k < run.calls.size(); ++k) {
    const Ns own = run.own_code[k - 1];
    if (starts[k]) {  // the next graph's launch
      endGraph(k);
      graph_start = k;
      continue;
    }
    // Given in the previous launch, so that launch k's own op is released sooner too.
    given.push_back({run.calls[k - 1], launch_time[k] + own - node_launch});
  }
  endGraph(run.calls.size());
}

// The host time a graph would give back (above), per thread over its runs of launches to one
// stream (kernels not already launched from a graph, asynchronous copies and memsets), ended by a
// blocking call of the thread or its launch to another stream. A run on a legacy default stream
// stays launches where one of its launch calls overlapped another thread's launch call to that
// stream (threads launching to it at once, as g000083's): capture cannot begin there, and moving
// the run to a stream of its own would drop the order the legacy stream gives the other threads'
// work, which the fix would have to rebuild; a thread that launches to it while the others wait
// (PyTorch's forward on the main thread, its backward on the autograd thread) stays captured.
// Calls nested in another call of their thread (driver calls under a runtime call) are skipped.
GraphWhatIf launchesAGraphRemoves(const DeviceView& view, const HostTimeline& host) {
  std::vector<bool> blocking(view.trace().runtime_calls.size(), false);
  for (const HostBarrier& barrier : host.barriers) blocking[barrier.call] = true;
  GraphWhatIf what;
  what.node_launch = graphNodeLaunchTime(view);
  what.handoff_gain =
      std::max<Ns>(0, view.streamHandoff(Engine::kCompute, Engine::kCompute) - nodeHandoff(view));
  struct Launched {
    std::uint64_t stream = 0;  // its key
    LaunchShape shape = 0;
  };
  std::unordered_map<std::size_t, Launched> launched;  // per launch call
  // Per legacy default stream, its launch calls (start, end, pid, tid), by start.
  std::map<std::uint64_t, std::vector<std::tuple<Ns, Ns, std::uint32_t, std::uint32_t>>> on_legacy;
  std::map<std::tuple<int, StringId, std::uint32_t, std::uint16_t, std::uint64_t, int>, LaunchShape>
      shapes;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if ((op.flags & op_flag::kFromGraph) != 0) continue;
    const auto launch = view.launchCall(op);
    if (!launch || blocking[*launch]) continue;
    if (op.kind == OpKind::kKernel) what.kernel_calls.insert(*launch);
    if (op.kind == OpKind::kMemcpy && (op.copy_kind == CopyKind::kHtoD || op.copy_kind == CopyKind::kDtoH ||
                                       op.copy_kind == CopyKind::kHtoH)) {
      what.host_copy_calls.insert(*launch);
    }
    const auto shape = std::make_tuple(static_cast<int>(op.kind), op.name, op.grid_blocks,
                                       op.block_threads, op.bytes, static_cast<int>(op.copy_kind));
    const auto [it, added] = shapes.try_emplace(shape, static_cast<LaunchShape>(shapes.size()));
    launched.emplace(*launch, Launched{DeviceView::streamKey(op), it->second});
    if (view.onLegacyDefaultStream(op)) {
      const RuntimeCall& call = view.call(*launch);
      on_legacy[DeviceView::streamKey(op)].emplace_back(call.start, call.end, call.pid, call.tid);
    }
  }
  Ns longest_call = 0;  // of those launch calls: how far back one may still overlap a call
  for (auto it = on_legacy.begin(); it != on_legacy.end();) {
    auto& calls = it->second;
    const auto thread = [](const auto& call) {
      return std::make_pair(std::get<2>(call), std::get<3>(call));
    };
    const bool one_thread = std::all_of(calls.begin(), calls.end(), [&](const auto& other) {
      return thread(other) == thread(calls.front());
    });
    if (one_thread) {  // no other thread to overlap
      it = on_legacy.erase(it);
      continue;
    }
    std::sort(calls.begin(), calls.end());
    for (const auto& [start, end, pid, tid] : calls) {
      longest_call = std::max(longest_call, end - start);
    }
    ++it;
  }
  // Whether a launch call of `run` overlapped another thread's launch call to its legacy stream.
  const auto launchedAtOnce = [&](const LaunchRun& run) {
    const auto calls = on_legacy.find(run.stream);
    if (run.calls.size() < 2 || calls == on_legacy.end()) return false;
    for (const std::size_t index : run.calls) {
      const RuntimeCall& call = view.call(index);
      auto other = std::lower_bound(calls->second.begin(), calls->second.end(),
                                    std::make_tuple(call.start - longest_call, Ns{0}, 0u, 0u));
      for (; other != calls->second.end() && std::get<0>(*other) < call.end; ++other) {
        const bool same_thread = std::get<2>(*other) == call.pid && std::get<3>(*other) == call.tid;
        if (!same_thread && std::get<1>(*other) > call.start) return true;
      }
    }
    return false;
  };
  struct Thread {
    Ns last_end = 0;   // of the thread's last launch
    Ns nested_end = 0; // of the thread's last call that is no other call's part
    LaunchRun run;
  };
  std::map<std::pair<std::uint32_t, std::uint32_t>, Thread> threads;  // per (pid, tid)
  // The runs as they ended, with their thread: given back once every thread's launches are known.
  std::vector<std::pair<LaunchRun, std::pair<std::uint32_t, std::uint32_t>>> ended;
  for (const std::size_t index : view.calls()) {
    const RuntimeCall& call = view.call(index);
    Thread& thread = threads[{call.pid, call.tid}];
    if (call.start < thread.nested_end) continue;  // nested in the thread's previous call
    thread.nested_end = call.end;
    const auto launch = launched.find(index);
    LaunchRun& run = thread.run;
    if (launch == launched.end() && !blocking[index]) continue;  // host code, for a graph
    if (launch != launched.end() && !run.calls.empty() && run.stream == launch->second.stream) {
      run.calls.push_back(index);
      run.shapes.push_back(launch->second.shape);
      run.own_code.push_back(call.start - thread.last_end);
      thread.last_end = call.end;
      continue;
    }
    if (!launchedAtOnce(run)) ended.emplace_back(std::move(run), std::make_pair(call.pid, call.tid));
    run = LaunchRun{};
    thread.last_end = call.end;
    if (launch == launched.end()) continue;
    run.stream = launch->second.stream;
    run.calls.push_back(index);
    run.shapes.push_back(launch->second.shape);
  }
  for (auto& [key, thread] : threads) {
    if (!launchedAtOnce(thread.run)) ended.emplace_back(std::move(thread.run), key);
  }
  // Per thread, the host's own time before each launch that followed another of its run, and its
  // runs' launch calls (dispatchedRun).
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<std::vector<Ns>, std::vector<Ns>>> pooled;
  for (const auto& [run, key] : ended) {
    if (run.calls.size() < 2) continue;
    auto& [gaps, calls] = pooled[key];
    gaps.insert(gaps.end(), run.own_code.begin(), run.own_code.end());
    for (const std::size_t c : run.calls) calls.push_back(view.call(c).end - view.call(c).start);
  }
  std::map<std::pair<std::uint32_t, std::uint32_t>, ThreadLaunches> threads_launches;
  for (auto& [key, pair] : pooled) {
    auto& [gaps, calls] = pair;
    const std::size_t count = gaps.size();
    std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(count / 4), gaps.end());
    threads_launches[key] = ThreadLaunches{gaps[count / 4], medianOf(std::move(calls)), count};
  }
  for (const auto& [run, key] : ended) giveBackRun(view, run, what, threads_launches[key]);
  return what;
}

// Synchronous copies and memsets (not from pageable memory) of other threads that the launch
// calls a graph removes held in the driver: launch calls of several threads take turns there, and
// such a call beside them was let through late, its op submitted later than its thread's calls
// of its kind that overlapped no other thread's launch call (lab g005016: worker2's 333
// synchronous 4 KB cudaMemcpy calls took 14.2 µs at the median, 66 of them over twice that, 60 of
// those beside the other threads' launch calls, 3.13 ms beyond the median; with the other threads'
// loops replayed as graphs 18 ran long, 1.04 ms beyond, and the span fell 7949 -> 6798 µs). Each
// call is timed from when its stream's previous op ended (a wait for that op is no hold). Such a
// call gets back its time beyond that typical time (their median; the shortest of its contended
// calls where none was alone), at most what the removed launch calls (a graph's calls after its
// first, of other threads) covered of it, as timeHeldByStaging does for calls held behind staged
// copies. Asynchronous calls are left alone: given back the same way they made the what-if claim
// 0.3-0.7 ms where the graphs saved nothing or lost (lab g000083, g000284: the graph launches
// still take turns with them).
std::vector<HostTimeGiven> callsHeldByRemovedLaunches(const DeviceView& view, const GraphWhatIf& what) {
  std::unordered_set<std::size_t> graph_launches;  // each graph's first call: stays
  for (const HostTimeGiven& first : what.later) graph_launches.insert(first.call);
  std::unordered_set<std::size_t> seen;
  std::vector<std::size_t> calls;  // launch calls, in their ops' order
  std::vector<OtherThreadCalls::Call> launches, removed;
  // Per call, from when it could have been let through: a synchronous copy or memset waited
  // first for its stream's previous op, which is no hold.
  std::unordered_map<std::size_t, Ns> from;
  std::unordered_map<std::uint64_t, Ns> stream_end;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    const auto [previous, first] = stream_end.try_emplace(DeviceView::streamKey(op), scoped.end);
    const Ns previous_end = first ? std::numeric_limits<Ns>::min() : previous->second;
    previous->second = std::max(previous->second, scoped.end);
    const auto launch = view.launchCall(op);
    if (!launch || !seen.insert(*launch).second) continue;
    from[*launch] = std::max(view.call(*launch).start, std::min(previous_end, scoped.start));
    calls.push_back(*launch);
    const RuntimeCall& c = view.call(*launch);
    launches.push_back({c.start, c.end, threadKey(c)});
    if (what.graph_of_call.count(*launch) != 0 && graph_launches.count(*launch) == 0) {
      removed.push_back({c.start, c.end, threadKey(c)});
    }
  }
  if (removed.empty()) return {};
  const OverlapIndex<OtherThreadCalls::Call> removed_at(removed);
  const OtherThreadCalls others(std::move(launches));
  const std::vector<std::size_t> pageable = pageableCopyCalls(view);
  struct Held {
    std::size_t call = 0;
    std::pair<std::uint64_t, ApiKind> key;  // (thread, kind)
    Ns covered = 0;
  };
  std::vector<Held> candidates;
  std::map<std::pair<std::uint64_t, ApiKind>, std::vector<Ns>> alone, contended;
  for (const std::size_t call : calls) {
    if (what.graph_of_call.count(call) != 0) continue;
    const ApiKind kind = view.callKind(call);
    if (kind != ApiKind::kMemcpySync && kind != ApiKind::kMemsetSync) continue;
    if (std::binary_search(pageable.begin(), pageable.end(), call)) continue;
    const RuntimeCall& c = view.call(call);
    const Ns begin = from[call];
    const std::uint64_t thread = threadKey(c);
    const std::pair<std::uint64_t, ApiKind> key{thread, kind};
    if (!others.overlap(begin, c.end, thread)) {
      alone[key].push_back(c.end - begin);
      continue;
    }
    contended[key].push_back(c.end - begin);
    const Ns covered = coveredLength(removed_at, begin, c.end,
                                     [&](const OtherThreadCalls::Call& r) { return r.thread != thread; });
    if (covered > 0) candidates.push_back({call, key, covered});
  }
  std::vector<HostTimeGiven> given;
  for (const Held& x : candidates) {
    const auto it = alone.find(x.key);
    const Ns typical = typicalTime(it != alone.end() ? &it->second : nullptr, contended[x.key]);
    const Ns amount = std::min(x.covered, view.call(x.call).end - from[x.call] - typical);
    if (amount > 0) given.push_back({x.call, amount, /*in_call=*/true});
  }
  return given;
}

// A held call's op that started after its hold (submitted once the driver let its call through,
// as launchesHeldBeforeSubmitting's kernels) is released that much sooner.
void heldOpsReleasedSooner(const DeviceView& view, const std::vector<HostTimeGiven>& held,
                           std::vector<Ns>& earlier) {
  std::unordered_map<std::size_t, Ns> amount;
  for (const HostTimeGiven& h : held) amount[h.call] += h.amount;
  opsHeldInCallReleasedSooner(view, amount, earlier);
}

// Whether the synchronous copies on the legacy stream (`classes`: barrierClasses') blocked for
// less than kHoldingCallNs at the median: calls that short do not hold other threads'
// submissions in the driver (allocation_holds.h), so the threads submit their legacy-stream and
// blocking-stream work in the order they issue it (barrierFollowsIssueOrder).
bool shortSynchronousCopies(const DeviceView& view, const std::vector<std::int64_t>& classes) {
  std::vector<Ns> durations;
  for (std::size_t p = 0; p < classes.size(); ++p) {
    if (classes[p] < 0 || classes[p] % 2 != 0) continue;
    const auto call = view.launchCall(view.op(view.ops()[p]));
    if (!call || view.callKind(*call) != ApiKind::kMemcpySync) continue;
    durations.push_back(view.call(*call).end - view.call(*call).start);
  }
  return !durations.empty() && medianOf(std::move(durations)) < kHoldingCallNs;
}

// What capturing the launch runs in graphs saves: the span; of it, what the graphs' shorter
// handoffs between kernel nodes save (the span with the host time given back alone minus with
// both); and the kernels that would follow a kernel of their own graph on their stream, each with
// that kernel (positions in view.ops()).
struct GraphSaving {
  Ns span = 0;
  Ns by_handoffs = 0;
  std::vector<std::pair<std::size_t, std::size_t>> handoffs;  // (previous node, node)
};

// The span the device would save if the launch runs were graph launches (above): the host time
// given back, and each graph's kernels handing off to each other as graph nodes
// (DeviceView::graphNodeHandoff, else kGraphNodeHandoffNs), which saves time also where the device
// ran them back to back.
GraphSaving graphLaunchSaving(const DeviceView& view) {
  const HostTimeline& host = buildHostTimeline(view);
  const GraphWhatIf what = launchesAGraphRemoves(view, host);
  if (what.later.empty()) return {};
  // The legacy default stream's implicit barriers stay (legacyBarrierEdges, as in the other
  // schedule what-ifs): graphs change when launches are released, not what orders their work.
  // Without them a synchronous copy on the legacy stream, released sooner with its thread's host
  // time, started before the blocking stream's kernel it had waited for (g000312).
  std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
  const std::vector<OrderEdge> barriers = legacyBarrierEdges(view);
  waits.insert(waits.end(), barriers.begin(), barriers.end());
  const std::vector<HostTimeGiven> held = callsHeldByRemovedLaunches(view, what);
  // Where the graphs give other threads' held calls their hold back, the legacy stream's barrier
  // is decided as the what-if issues the work (withBarrierIssueOrder), if the threads submit in
  // the order they issue: a thread whose held copies return sooner queues its legacy-stream work
  // before another thread's issued later (g005016's worker2 passes the other threads' legacy
  // copies). Kept in the recorded order otherwise, where the legacy stream's synchronous copies
  // blocked long enough to hold other threads' submissions, and where no call is held: deciding
  // it by issue order for every trace whose threads submit in issue order moved 22 of the 77
  // framework and nsys traces' claims (up to 3.8x) with one lab case to show for it.
  const std::vector<std::int64_t> classes = barrierClasses(view);
  const bool by_issue = !held.empty() &&
                        (barrierFollowsIssueOrder(view, classes) ||
                         (barrierFollowsIssueOrder(view, classes, ApiKind::kMemcpySync) &&
                          shortSynchronousCopies(view, classes)));
  const BarrierIssue issued = by_issue ? barrierIssueTimes(view) : BarrierIssue{};
  const ScheduleModel model = by_issue ? ScheduleModel(view, host, waits).withBarrierIssueOrder(classes, issued)
                                       : ScheduleModel(view, host, waits);
  std::vector<HostTimeGiven> given = what.given;
  given.insert(given.end(), held.begin(), held.end());
  std::vector<CallChange> changed;
  barriersGivenBack(view, given, host, changed);
  std::vector<Ns> earlier = hostTimeGivenBack(view, given, host);
  heldOpsReleasedSooner(view, held, earlier);
  std::unordered_map<std::size_t, Ns> later;  // a graph's first call -> its op's later release
  for (const HostTimeGiven& first : what.later) later.emplace(first.call, first.amount);
  GraphSaving saving;
  std::vector<std::int64_t> graph(model.size(), -1);
  std::unordered_map<std::uint64_t, std::size_t> last_on_stream;
  std::size_t position = 0;
  for (const ScopedOp& scoped : view.ops()) {
    const std::size_t at = position++;
    const GpuOp& op = view.op(scoped);
    const auto [previous, first] = last_on_stream.try_emplace(DeviceView::streamKey(op), at);
    const std::size_t before = previous->second;
    previous->second = at;
    const auto launch = view.launchCall(op);
    if (!launch) continue;
    if (const auto it = later.find(*launch); it != later.end()) earlier[at] -= it->second;
    const auto it = what.graph_of_call.find(*launch);
    if (it == what.graph_of_call.end()) continue;
    graph[at] = it->second;
    if (!first && graph[before] == graph[at] && op.kind == OpKind::kKernel &&
        view.op(view.ops()[before]).kind == OpKind::kKernel) {
      saving.handoffs.emplace_back(before, at);
    }
  }
  const ScheduleModel as_graphs =
      by_issue ? ScheduleModel(view, host, waits)
                     .withBarrierIssueOrder(classes, issued, model.issueReleases(waits))
                     .withGraphNodes(graph, nodeHandoff(view), kGraphEntryNs)
               : model.withGraphNodes(graph, nodeHandoff(view), kGraphEntryNs);
  const Ns after = as_graphs.span(waits, earlier, {}, changed);
  saving.span = std::max<Ns>(0, model.span(waits) - after);
  if (saving.span > 0) {
    saving.by_handoffs = std::max<Ns>(0, model.span(waits, earlier, {}, changed) - after);
  }
  return saving;
}

// Where the device waited little for the host (it ran the launches back to back, idle mostly in
// the stream's handoffs): a finding when the graphs' shorter handoffs save kMinSavingShare of the
// span, or capturing saves that in all where the device was busy for most of the span (a device
// idle for other reasons, a trace's module loads and warm-up, is not one the launches held back),
// its cost what capturing saves in all, info below kWarningSavingShare, its instances the handoffs
// a graph's nodes would shorten.
std::optional<Finding> busyDeviceFinding(const DeviceView& view) {
  const GraphSaving saving = graphLaunchSaving(view);
  const double span = static_cast<double>(view.spanLength());
  const double busy = span - static_cast<double>(view.idleWithin(view.spanStart(), view.spanEnd()));
  const Ns in_all = busy >= kBusyShare * span ? saving.span : 0;
  const bool by_handoffs = static_cast<double>(saving.by_handoffs) >= kMinHandoffShare * span;
  if (!by_handoffs && static_cast<double>(in_all) < kMinSavingShare * span) return std::nullopt;
  const bool warn = static_cast<double>(saving.span) >= kWarningSavingShare * span;
  const Ns node_handoff = nodeHandoff(view);
  FindingBuilder builder(view, "host-launch-bound", warn ? Severity::kWarning : Severity::kInfo);
  const auto& ops = view.ops();
  for (const auto& [previous, node] : saving.handoffs) {
    const Interval handoff{ops[previous].end, ops[node].start};
    if (handoff.length() <= node_handoff) continue;
    const GpuOp& op = view.op(ops[node]);
    Evidence evidence = evidenceForOp(
        view, op, fmt::format("{} started {} after the kernel before it on its stream ended (a graph "
                              "node's handoff: {})", describeOp(view, op),
                              units::formatDuration(handoff.length()),
                              units::formatDuration(node_handoff)));
    builder.add(handoff, std::move(evidence));
  }
  builder.estimateSaving(saving.span);
  return builder.build(
      fmt::format(by_handoffs ? "{} kernels started a stream handoff after the kernel before "
                                "them; as nodes of CUDA graphs they would follow each other sooner "
                                "({:.1f}% of the span)"
                              : "{} kernels started a stream handoff after the kernel before "
                                "them; captured in CUDA graphs, their launches would save {:.1f}% "
                                "of the span (the launch calls and the nodes' shorter handoffs)",
                  builder.count(), 100.0 * static_cast<double>(saving.span) / span),
      "Capture the launch sequence in a CUDA graph (cudaStreamBeginCapture / cudaGraphLaunch): "
      "a graph's kernels start sooner after each other than kernels launched one by one");
}

}  // namespace

std::optional<Finding> findHostLaunchBound(const DeviceView& view) {
  if (!view.hasRuntimeData() || kernelCount(view) < kMinKernels) return std::nullopt;
  const auto& ops = view.trace().ops;
  FindingBuilder builder(view, "host-launch-bound", Severity::kWarning);
  Ns before_graph_nodes = 0;  // idle time before kernels launched as CUDA graph nodes
  for (const IdleGap& gap : attributeGaps(view, 1)) {
    const bool host_late = gap.cause == GapCause::kHostLaunch || gap.cause == GapCause::kHostBusy;
    if (!host_late || !gap.prev_op || !gap.next_op) continue;
    const GpuOp& next = ops[*gap.next_op];
    if (ops[*gap.prev_op].kind != OpKind::kKernel || next.kind != OpKind::kKernel) continue;
    Evidence evidence = evidenceForOp(view, next,
                                      fmt::format("device idle {} before {}",
                                                  units::formatDuration(gap.duration()),
                                                  describeOp(view, next)));
    evidence.time = gap.start;
    builder.add(Interval{gap.start, gap.end}, std::move(evidence));
    if ((next.flags & op_flag::kFromGraph) != 0) before_graph_nodes += gap.duration();
  }
  if (static_cast<double>(builder.time()) < kMinIdleShare * static_cast<double>(view.spanLength())) {
    return busyDeviceFinding(view);
  }
  const double share = static_cast<double>(builder.time()) / static_cast<double>(view.spanLength());
  if (2 * before_graph_nodes >= builder.time()) {
    // The advice is more work per replay, not a graph: the idle time itself stays the cost.
    return builder.build(
        fmt::format("the device waited for the host {} times between kernels ({:.0f}% of the "
                    "span), most of it before CUDA graph replays: the kernels already run as graph "
                    "nodes", builder.count(), 100.0 * share),
        "Give each graph launch more work: capture several steps, or the host code between "
        "replays (input copies, optimizer steps), in one graph, and do more work per kernel (fuse or "
        "batch small kernels); the launches are already graphs, so capturing them again saves nothing");
  }
  builder.estimateSaving(graphLaunchSaving(view).span);
  return builder.build(
      fmt::format("the device waited for kernel launches {} times between kernels ({:.0f}% "
                  "of the span)", builder.count(), 100.0 * share),
      "Do more work per kernel (fuse or batch small kernels), or capture the launch sequence in a "
      "CUDA graph (cudaStreamBeginCapture / cudaGraphLaunch) to cut per-launch overhead");
}

}  // namespace cuoverlap::diagnosis
