// The CUPTI half of the capture window (capture_window.h): the callbacks that feed it (NVTX
// ranges of the default domain, cudaProfilerStart/Stop and the driver's cuProfilerStart/Stop) and
// the switch of the recorded kinds when it opens or closes.
#pragma once

#include <cupti.h>

#include "capture_window.h"

namespace cuoverlap::collector::activity {

// The subscriber activity_tracing.cpp holds.
CUpti_SubscriberHandle subscriber();
// Called from the subscriber's callback for every enabled callback id.
void onCaptureCallback(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data);

}  // namespace cuoverlap::collector::activity
