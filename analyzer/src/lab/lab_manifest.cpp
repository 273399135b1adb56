// Reading a lab corpus's manifest (lab_manifest.h). A malformed entry is a UserError naming it.
#include "lab_manifest.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "cuoverlap/error.h"

namespace cuoverlap::lab::corpus {
namespace {

using nlohmann::json;

std::vector<double> spansOf(const json& spans) {
  std::vector<double> v;
  if (spans.is_array()) {
    for (const json& x : spans) {
      if (x.is_number()) v.push_back(x.get<double>());
    }
  }
  return v;
}

std::vector<std::string> findingIds(const json& value) {
  std::vector<std::string> ids;
  if (value.is_string()) ids.push_back(value.get<std::string>());
  if (value.is_array()) {
    for (const json& id : value) {
      if (id.is_string()) ids.push_back(id.get<std::string>());
    }
  }
  return ids;
}

// A variant's id field (a trace stream's or thread's) where the manifest names one.
std::optional<std::uint32_t> optionalId(const json& variant, const char* key) {
  const auto id = variant.find(key);
  if (id == variant.end()) return std::nullopt;
  return id->get<std::uint32_t>();
}

// baseline.windows_ns: a non-empty list of [start, end] pairs of integers.
std::vector<Window> windowsOf(const json& windows, const std::string& where) {
  const auto pair = [](const json& w) {
    return w.is_array() && w.size() == 2 && w[0].is_number_integer() && w[1].is_number_integer();
  };
  if (!windows.is_array() || windows.empty() || !std::all_of(windows.begin(), windows.end(), pair)) {
    throw UserError(where + ": baseline.windows_ns is not a list of [start, end] pairs");
  }
  std::vector<Window> out;
  for (const json& w : windows) out.push_back({w[0].get<Ns>(), w[1].get<Ns>(), {}});
  return out;
}

// A variant's per-window ids (stream_ids, thread_ids): one id or null per window.
std::vector<std::optional<std::uint32_t>> windowIds(const json& variant, const char* key,
                                                    std::size_t windows, const std::string& where) {
  std::vector<std::optional<std::uint32_t>> ids;
  const auto found = variant.find(key);
  if (found == variant.end()) return ids;
  if (!found->is_array() || found->size() != windows) {
    throw UserError(where + ": " + key + " is not one id (or null) per window of windows_ns");
  }
  for (const json& id : *found) {
    ids.push_back(id.is_null() ? std::nullopt : std::optional<std::uint32_t>(id.get<std::uint32_t>()));
  }
  return ids;
}

}  // namespace

json readManifest(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  std::ifstream in(path);
  if (!in) throw UserError(path + ": cannot open the lab corpus manifest");
  json manifest = json::parse(in, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object()) {
    throw UserError(path + ": not a JSON object");
  }
  if (manifest.value("schema", "") != "cuoverlap-lab-corpus/1") {
    throw UserError(path + ": schema is not cuoverlap-lab-corpus/1");
  }
  return manifest;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
}

double medianError(std::vector<double> v) {
  if (v.size() < 2) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double sigma = (v[(3 * n) / 4] - v[n / 4]) / 1.349;
  return 1.2533 * sigma / std::sqrt(static_cast<double>(n));
}

Program parseProgram(const json& entry, const std::string& where, LabWindows scored) {
  try {
    Program program;
    program.id = entry.at("id").get<std::string>();
    program.trace = entry.at("trace").get<std::string>();
    const json& baseline = entry.at("baseline");
    program.windows.push_back({baseline.at("window_ns").at(0).get<Ns>(),
                               baseline.at("window_ns").at(1).get<Ns>(), {}});
    const auto windows = baseline.find("windows_ns");
    if (windows != baseline.end()) {
      std::vector<Window> all = windowsOf(*windows, where);
      if (scored == LabWindows::kAll) {
        program.windows = std::move(all);
        program.several_windows = true;
      }
    }
    program.median_ns = baseline.at("median_ns").get<Ns>();
    program.spans = spansOf(baseline.value("spans_ns", json()));
    program.median_error_ns = medianError(program.spans);
    for (const auto& [transform, variant] : entry.at("variants").items()) {
      if (variant.contains("stale")) {
        ++program.stale_variants;
        continue;
      }
      std::vector<double> spans = spansOf(variant.value("spans_ns", json()));
      const double error = medianError(spans);
      std::vector<std::optional<std::uint32_t>> stream_ids;
      std::vector<std::optional<std::uint32_t>> thread_ids;
      if (program.several_windows) {
        const std::string at = where + ": variants." + transform;
        stream_ids = windowIds(variant, "stream_ids", program.windows.size(), at);
        thread_ids = windowIds(variant, "thread_ids", program.windows.size(), at);
      }
      program.variants.push_back({transform, findingIds(variant.at("finding")),
                                  variant.at("median_ns").get<Ns>(), error, std::move(spans),
                                  spansOf(variant.value("baseline_spans_ns", json())),
                                  optionalId(variant, "stream_id"), optionalId(variant, "thread_id"),
                                  std::move(stream_ids), std::move(thread_ids)});
    }
    return program;
  } catch (const json::exception& error) {
    throw UserError(where + ": " + error.what());
  }
}

}  // namespace cuoverlap::lab::corpus
