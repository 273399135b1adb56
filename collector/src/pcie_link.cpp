#include "pcie_link.h"

#include <dlfcn.h>

#include "fork_exclusion.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <limits.h>

namespace cuoverlap::collector {
namespace {

std::string readLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// One sysfs PCI device's maximum link; zeros when its files are missing or say "Unknown".
PcieLink sysfsMaximum(const std::string& device_dir) {
  PcieLink link;
  link.generation = pcieGenerationOfSpeed(readLine(device_dir + "/max_link_speed"));
  link.width = std::atoi(readLine(device_dir + "/max_link_width").c_str());
  if (link.generation == 0 || link.width <= 0) return {};
  return link;
}

}  // namespace

PcieLink pcieLinkFromSysfs(const std::string& sysfs_root, const std::string& pci_bus_id) {
  std::string bus_id = pci_bus_id;
  std::transform(bus_id.begin(), bus_id.end(), bus_id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  char resolved[PATH_MAX];
  if (realpath((sysfs_root + "/bus/pci/devices/" + bus_id).c_str(), resolved) == nullptr) return {};
  const std::string device_dir = resolved;
  PcieLink link = sysfsMaximum(device_dir);
  if (link.generation == 0) return {};
  // The parent directory is the upstream port (a root port or a switch's downstream port).
  const PcieLink upstream = sysfsMaximum(device_dir.substr(0, device_dir.rfind('/')));
  if (upstream.generation > 0) {
    link.generation = std::min(link.generation, upstream.generation);
    link.width = std::min(link.width, upstream.width);
  }
  return link;
}

namespace {

// NVML through dlopen: the few entry points used, declared here (their ABI is stable). Loaded,
// used and unloaded with no fork() in between (fork_exclusion.h: a fork during the unload leaves
// the child unable to exit).
PcieLink fromNvml(const std::string& bus_id) {
  const ForkExclusion no_fork;
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) return {};
  using Init = int (*)();
  using HandleByBusId = int (*)(const char*, void**);
  using UintQuery = int (*)(void*, unsigned int*);
  auto init = reinterpret_cast<Init>(dlsym(nvml, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<Init>(dlsym(nvml, "nvmlShutdown"));
  auto handle_of = reinterpret_cast<HandleByBusId>(dlsym(nvml, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto max_gen = reinterpret_cast<UintQuery>(dlsym(nvml, "nvmlDeviceGetMaxPcieLinkGeneration"));
  auto max_width = reinterpret_cast<UintQuery>(dlsym(nvml, "nvmlDeviceGetMaxPcieLinkWidth"));
  PcieLink link;
  constexpr int kSuccess = 0;
  if (init != nullptr && shutdown != nullptr && handle_of != nullptr && max_gen != nullptr &&
      max_width != nullptr && init() == kSuccess) {
    void* device = nullptr;
    unsigned int generation = 0, width = 0;
    if (handle_of(bus_id.c_str(), &device) == kSuccess && max_gen(device, &generation) == kSuccess &&
        max_width(device, &width) == kSuccess && generation <= 6 && width <= 32) {
      link.generation = static_cast<int>(generation);
      link.width = static_cast<int>(width);
    }
    shutdown();
  }
  dlclose(nvml);
  return link;
}

}  // namespace

int pcieGenerationOfSpeed(const std::string& speed) {
  const double gt_per_s = std::atof(speed.c_str());
  constexpr struct {
    double rate;
    int generation;
  } kRates[] = {{2.5, 1}, {5.0, 2}, {8.0, 3}, {16.0, 4}, {32.0, 5}, {64.0, 6}};
  for (const auto& r : kRates) {
    if (gt_per_s > r.rate - 0.01 && gt_per_s < r.rate + 0.01) return r.generation;
  }
  return 0;
}

PcieLink queryPcieLink(const std::string& pci_bus_id) {
  if (pci_bus_id.empty()) return {};
  const PcieLink link = fromNvml(pci_bus_id);
  return link.generation > 0 ? link : pcieLinkFromSysfs("/sys", pci_bus_id);
}

}  // namespace cuoverlap::collector
