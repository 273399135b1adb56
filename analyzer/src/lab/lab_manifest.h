// A lab corpus's manifest (docs/lab.md), read into the programs that lab_score.cpp analyzes and
// judges: each program's baseline windows (the kept run, or several: baseline.windows_ns) and
// measured spans, and each variant's spans, finding ids and trace ids.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuoverlap/lab_score.h"
#include "cuoverlap/report.h"
#include "cuoverlap/units.h"

// In a namespace of its own: cuoverlap::lab::Program is the lab interpreter's program
// (workloads/lab/program.h).
namespace cuoverlap::lab::corpus {

struct Variant {
  std::string transform;              // the variant's name (lab::LabCase::variant)
  std::vector<std::string> findings;  // the ids the transform tests (usually one)
  Ns median_ns = 0;
  double median_error_ns = 0.0;       // standard error of median_ns
  std::vector<double> spans;          // the runs' spans in rep order
  // The baseline runs recorded with this variant where it was recorded after the program's
  // baseline (scripts/lab_merge.py --variants-only: a transform that newly applies), in rep order;
  // empty where the variant ran with the program's baseline.
  std::vector<double> baseline_spans;
  // The trace stream a one-stream transform acted on (multi-stream: the stream it split), where
  // the manifest names it (scripts/lab_streams.py).
  std::optional<std::uint32_t> stream_id;
  // The thread (its tid) whose loop it split where several threads shared that stream, where the
  // manifest names it (scripts/lab_streams.py).
  std::optional<std::uint32_t> thread_id;
  // The same per window where several are scored (ids differ from run to run); empty where the
  // manifest names none.
  std::vector<std::optional<std::uint32_t>> stream_ids;
  std::vector<std::optional<std::uint32_t>> thread_ids;
};

// One analyzed baseline run of a program.
struct Window {
  Ns start = 0;
  Ns end = 0;
  std::vector<Finding> findings;
  std::uint32_t waiting_threads = 0;  // FindingsExplained::waiting_threads, the most of any device
};

struct Program {
  std::string id;
  std::string trace;
  std::vector<Window> windows;        // the kept run first
  bool several_windows = false;       // windows_ns scored: cases list each window's claim
  Ns median_ns = 0;
  double median_error_ns = 0.0;
  std::vector<double> spans;          // the baseline runs' spans in rep order
  std::vector<Variant> variants;
  // Variants the manifest marks `stale` (recorded before their transform changed, so they measure
  // a fix the finding no longer advises: scripts/lab_stale.py), left out of `variants`.
  std::size_t stale_variants = 0;
};

// DIR/manifest.json, checked to be a lab corpus's. Throws UserError.
nlohmann::json readManifest(const std::string& dir);

// One entry of the manifest's programs (`where` names it in errors), with the windows `scored`
// asks for. Throws UserError on a malformed entry.
Program parseProgram(const nlohmann::json& entry, const std::string& where, LabWindows scored);

double median(std::vector<double> values);

// The standard error of the median of `v` (runs of one variant): 1.2533 σ / √n for a normal
// spread, σ estimated robustly as the interquartile range / 1.349. 0 for fewer than 2 runs.
double medianError(std::vector<double> v);

}  // namespace cuoverlap::lab::corpus
