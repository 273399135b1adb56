// The fault-free durations of the kernels that faulted managed memory in on demand
// (managed-page-faults' estimate, defined at the top of managed_page_faults.cpp), shared with
// implicit-sync-call, whose kept managed buffers spare the kernels their re-faults.
#pragma once

#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {

// Each kernel run of the view during which a GPU page-fault group of its process began, at its
// fault-free duration (the prefetch that managed-page-faults' fix adds left out), in op order.
std::vector<FasterOp> faultFreeKernels(const DeviceView& view);

}  // namespace cuoverlap::diagnosis
