// The host link query's sysfs half on a folder laid out as /sys is, and the speed text it reads.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "pcie_link.h"

namespace cuoverlap::collector {
namespace {

namespace fs = std::filesystem;

void writeFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

// A root port at 0000:00:01.0 with a GPU at 0000:1b:00.0 below it, linked from
// bus/pci/devices as the kernel does.
struct FakeSysfs {
  fs::path root = fs::temp_directory_path() / ("cuoverlap-sysfs-" + std::to_string(::getpid()));
  fs::path port = root / "devices/pci0000:00/0000:00:01.0";
  fs::path gpu = port / "0000:1b:00.0";
  FakeSysfs() {
    fs::remove_all(root);
    fs::create_directories(gpu);
    fs::create_directories(root / "bus/pci/devices");
    fs::create_directory_symlink(gpu, root / "bus/pci/devices/0000:1b:00.0");
  }
  ~FakeSysfs() { fs::remove_all(root); }
  void link(const fs::path& device, const std::string& speed, const std::string& width) {
    writeFile(device / "max_link_speed", speed);
    writeFile(device / "max_link_width", width);
  }
};

TEST_CASE("PCIe speed text maps to its generation") {
  CHECK(pcieGenerationOfSpeed("2.5 GT/s PCIe") == 1);
  CHECK(pcieGenerationOfSpeed("8.0 GT/s PCIe") == 3);
  CHECK(pcieGenerationOfSpeed("32.0 GT/s PCIe") == 5);
  CHECK(pcieGenerationOfSpeed("64.0 GT/s PCIe") == 6);
  CHECK(pcieGenerationOfSpeed("Unknown") == 0);
  CHECK(pcieGenerationOfSpeed("") == 0);
}

TEST_CASE("the sysfs link is the lower of the GPU's and its upstream port's maximum") {
  FakeSysfs sys;
  sys.link(sys.gpu, "32.0 GT/s PCIe", "16");
  sys.link(sys.port, "16.0 GT/s PCIe", "16");
  // cuDeviceGetPCIBusId writes upper-case hex; sysfs names are lower case.
  PcieLink link = pcieLinkFromSysfs(sys.root.string(), "0000:1B:00.0");
  CHECK(link.generation == 4);
  CHECK(link.width == 16);
  sys.link(sys.port, "Unknown", "255");  // a virtual port that knows nothing: the GPU's own
  link = pcieLinkFromSysfs(sys.root.string(), "0000:1B:00.0");
  CHECK(link.generation == 5);
  CHECK(link.width == 16);
}

TEST_CASE("the sysfs link is unknown without the device or its link files") {
  FakeSysfs sys;
  CHECK(pcieLinkFromSysfs(sys.root.string(), "0000:1B:00.0").generation == 0);
  sys.link(sys.gpu, "Unknown", "16");
  CHECK(pcieLinkFromSysfs(sys.root.string(), "0000:1B:00.0").generation == 0);
  CHECK(pcieLinkFromSysfs(sys.root.string(), "0000:99:00.0").generation == 0);
  CHECK(pcieLinkFromSysfs(sys.root.string(), "").generation == 0);
}

}  // namespace
}  // namespace cuoverlap::collector
