// A library the fork-exclusion test loads and unloads again and again: its static object with a
// destructor makes its load register an exit function and its unload run __cxa_finalize.
#include <string>

namespace {
std::string g_name = "loaded";
}

extern "C" int forkUnloadLibValue() { return static_cast<int>(g_name.size()); }
