// One device's block in the HTML report: a heading that says which device (and rank) it is, the
// metric cards (communication's too when it ran NCCL kernels), engine use and the top kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "cuoverlap/report.h"

namespace cuoverlap::html {

// The ranks of the processes that ran ops on each device (empty: none has a rank).
using DeviceRanks = std::map<std::uint16_t, std::set<std::int32_t>>;
DeviceRanks deviceRanks(const Trace* trace);

// "device 0 · rank 1 · NVIDIA H100 80GB HBM3": what a card group and a heading name.
std::string deviceLabel(const DeviceMetrics& metrics, const DeviceRanks& ranks);

// The cards of one device, led by a card naming it (`label`).
void appendCards(std::string& out, const DeviceMetrics& metrics, const std::string& label);
void appendEngines(std::string& out, const DeviceMetrics& metrics);
// The first `rows` kernels by GPU time (render::kernelTable); nothing when `rows` is 0.
void appendKernelTable(std::string& out, const std::vector<KernelSummary>& kernels, std::size_t rows);

}  // namespace cuoverlap::html
