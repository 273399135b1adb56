// The PCIe link between the host and a GPU, recorded so that the analyzer can estimate what a
// pinned host<->device copy would achieve on it (pageable-memcpy's "faster copies" part).
#pragma once

#include <string>

namespace cuoverlap::collector {

struct PcieLink {
  int generation = 0;  // 1..6; 0 when unknown
  int width = 0;       // lanes; 0 when unknown
};

// The fastest the link can run: NVML's maximum for this device and system, loaded at run time
// (libnvidia-ml ships with the driver; nothing is linked); else from sysfs, the lower of the
// device's and its upstream port's maximum speed and width (a GPU idles at a lower generation, so
// the current one says little). `pci_bus_id` as cuDeviceGetPCIBusId writes it ("0000:1B:00.0").
// Unknown (zeros) when neither answers: a container without /sys/bus/pci, a virtual device.
PcieLink queryPcieLink(const std::string& pci_bus_id);

// The sysfs half of queryPcieLink under `sysfs_root` ("/sys"; a test passes a folder of its own).
PcieLink pcieLinkFromSysfs(const std::string& sysfs_root, const std::string& pci_bus_id);

// "32.0 GT/s PCIe" -> 5; 0 for text that names no known rate ("Unknown").
int pcieGenerationOfSpeed(const std::string& speed);

}  // namespace cuoverlap::collector
