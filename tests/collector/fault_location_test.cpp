// mappedLocation: how the collector names where a fault happened (the session's fault_at).
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "lifecycle.h"

namespace cuoverlap::collector {
namespace {

__attribute__((noinline)) int localFunction(int x) { return x * 3 + 1; }

std::uintptr_t addressOf(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

std::string selfPath() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  REQUIRE(n > 0);
  return std::string(path, static_cast<std::size_t>(n));
}

TEST_CASE("a fault in this binary: its file and the offset addr2line takes, named as the collector's") {
  const std::uintptr_t address = addressOf(reinterpret_cast<const void*>(&localFunction)) + 4;
  Dl_info info{};
  REQUIRE(dladdr(reinterpret_cast<void*>(address), &info) != 0);
  char offset[32];
  std::snprintf(offset, sizeof offset, "+0x%jx",
                static_cast<std::uintmax_t>(address - addressOf(info.dli_fbase)));
  const std::string location = mappedLocation(address, address);
  CHECK(location == selfPath() + offset + " in the cuoverlap collector");
}

TEST_CASE("a fault in a shared library the collector is not: the library, without the collector's name") {
  void* libc_function = dlsym(RTLD_DEFAULT, "getpid");
  REQUIRE(libc_function != nullptr);
  Dl_info info{};
  REQUIRE(dladdr(libc_function, &info) != 0);
  const std::uintptr_t address = addressOf(libc_function);
  char offset[32];
  std::snprintf(offset, sizeof offset, "+0x%jx",
                static_cast<std::uintmax_t>(address - addressOf(info.dli_fbase)));
  const std::string location =
      mappedLocation(address, addressOf(reinterpret_cast<const void*>(&localFunction)));
  CHECK(location.find("libc") != std::string::npos);
  CHECK(location.find(offset) != std::string::npos);
  CHECK(location.find("collector") == std::string::npos);
}

TEST_CASE("an address nothing is mapped at (a call through a null function pointer)") {
  CHECK(mappedLocation(0x10, addressOf(reinterpret_cast<const void*>(&localFunction))) == "0x10 (unmapped)");
}

}  // namespace
}  // namespace cuoverlap::collector
