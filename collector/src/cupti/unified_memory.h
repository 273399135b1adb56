// Unified-memory counters (CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER): migrations with bytes and
// direction, GPU page-fault groups, CPU page faults, thrashing and remote maps of managed memory.
#pragma once

namespace cuoverlap::collector::activity {

enum class UnifiedMemoryState { kOn, kRetryAtContext, kUnavailable };

// Configures every counter kind this system supports (all at once, else one by one) and enables
// the kind. Some systems refuse some kinds or all (no GPU page faults before Pascal, no counters
// without P2P between the GPUs, under virtualization or without permissions): what cannot be
// recorded is said once on stderr and tracing goes on without it. CUPTI may refuse before the
// driver made a context; then kRetryAtContext: call again when the first context exists (that call
// never asks for another retry).
UnifiedMemoryState enableUnifiedMemory(bool at_context);

}  // namespace cuoverlap::collector::activity
