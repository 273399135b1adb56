// Scoped NVTX push/pop range: phases show up in traces under the names users read (h2d, compute,
// d2h, tile N).
#pragma once

#include <string>

#include <nvtx3/nvToolsExt.h>

namespace cuoverlap {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  explicit NvtxRange(const std::string& name) { nvtxRangePushA(name.c_str()); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace cuoverlap
