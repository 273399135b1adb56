// The memory each kernel, copy and memset touches, from the driver's launch, copy and memset
// calls (CUOVERLAP_OP_BUFFERS, schema/trace_schema.h): what tells a cross-stream wait that orders a
// data dependence from one that orders nothing (docs/collector.md, "Which memory an op touches").
//
// The runtime issues its launches, copies and memsets through the driver with the same
// correlation id (cudaLaunchKernel -> cuLaunchKernel, cudaMemcpyAsync -> cuMemcpyDtoHAsync_v2:
// seen on an H200, driver 580, CUDA 13.0), so the driver calls alone cover runtime, driver and
// framework programs (CuPy, Triton, JAX launch through the driver). A copy's source and
// destination and a memset's destination are the call's own ranges. A kernel's arguments are
// read through the function's parameter layout (cuFuncGetParamInfo, or cuKernelGetParamInfo for
// the library kernels the runtime passes as its CUfunction); each 8-byte word that lies in an
// allocation (cuMemGetAddressRange: device, managed or page-locked host memory) names that whole
// allocation. Not covered: 2D/3D and array copies, peer copies, and the kernels of a graph launch
// (their arguments were set at capture or instantiation); the analyzer treats an op without rows as
// touching anything.
//
// Cost: one callback per launch, copy and memset call (enter site only); a launch looks its
// function's layout up once (cached) and resolves each argument word through a per-thread cache
// of recent allocations, emptied whenever memory is freed.
#pragma once

#include <cupti.h>

#include <string>

#include "writer_thread.h"

namespace cuoverlap::collector::op_buffers {

// Looks the driver functions up and enables the driver callbacks on `subscriber`. Returns "" or
// why op buffers are not recorded (tracing goes on without them).
std::string enable(CUpti_SubscriberHandle subscriber, WriterThread& writer);
// From the subscriber's callback, for every driver API callback (others are ignored).
void onDriverCallback(CUpti_CallbackId id, const CUpti_CallbackData& data);
// Rows are kept only while recording (a capture window's gaps record none).
void setRecording(bool on);
// Hands the rows still buffered to the writer (at the end of the session).
void flush();
// After fork(): the child hands nothing to the parent's writer.
void detachInForkedChild();

}  // namespace cuoverlap::collector::op_buffers
