// Host threads that each issue GPU work and wait for it, side by side: where a fix's saving is
// least sure. A what-if starts from the turns such threads took in the driver as the trace
// recorded them (which thread's call went first, which waited behind another's), and those turns
// change from run to run; a fix that moves one thread's work changes the others' turns too. On
// the lab's generated programs (docs/findings.md, "Several host threads"), the findings' savings
// held within ±30% of what their fixes saved for about two in three findings of programs of
// several such threads, against more than nine in ten with one.
#pragma once

#include <cstdint>

#include "diagnosis/device_view.h"

namespace cuoverlap::diagnosis {

// How many host threads of the processes that ran the view's work issued GPU work and blocked on
// it themselves (a synchronize, or a synchronous copy or memset) while another such thread was
// active too (from its first such call's start to its last one's end); 0 where fewer than two.
std::uint32_t waitingThreads(const DeviceView& view);

}  // namespace cuoverlap::diagnosis
