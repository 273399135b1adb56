// TraceWriter: CUPTI unified-memory counter records into the tables nsys exports them to.
//   - migrations (BYTES_TRANSFER_HTOD/DTOH/DTOD) -> CUPTI_ACTIVITY_KIND_MEMCPY rows with copyKind
//     11/12/13 (ENUM_CUDA_MEMCPY_OPER's "Unified" kinds), managed memory on both sides, the
//     migration cause and the pages' virtual address, no stream (CUPTI's is invalid) and no
//     correlation id (the driver moved them, no API call did);
//   - GPU page-fault groups -> CUDA_UM_GPU_PAGE_FAULT_EVENTS (the device is the record's srcId);
//   - CPU page faults -> CUDA_UM_CPU_PAGE_FAULT_EVENTS (CUPTI's value is the faulting PC);
//   - thrashing and remote maps -> CUOVERLAP_UM_THRASHING_EVENTS (nsys has no table for them).
#include "trace_schema.h"
#include "trace_writer.h"

namespace cuoverlap::collector {
namespace {

constexpr auto kManaged = static_cast<int>(schema::MemKind::kManaged);

int copyKindOf(UnifiedMemoryKind kind) {
  switch (kind) {
    case UnifiedMemoryKind::kBytesHtoD: return static_cast<int>(schema::CopyKind::kUvmHtoD);
    case UnifiedMemoryKind::kBytesDtoH: return static_cast<int>(schema::CopyKind::kUvmDtoH);
    default: return static_cast<int>(schema::CopyKind::kUvmDtoD);
  }
}

}  // namespace

void TraceWriter::writeMigration(const UnifiedMemoryRow& r) {
  // CUPTI numbers the host (CPU) as a processor id too; the device of the row is the GPU end.
  const std::uint32_t device = r.kind == UnifiedMemoryKind::kBytesDtoH ? r.src_id : r.dst_id;
  std::optional<std::uint32_t> src_device, dst_device;
  if (r.kind == UnifiedMemoryKind::kBytesDtoD) {
    src_device = r.src_id;
    dst_device = r.dst_id;
  }
  begin();
  memcpy_->run({r.start, r.end, device, 0, 0, std::nullopt,
                schema::encodeGlobalPid(r.process_id != 0 ? r.process_id : pid_), r.value,
                copyKindOf(r.kind), std::nullopt, kManaged, kManaged, src_device, std::nullopt,
                dst_device, std::nullopt, r.flags, std::nullopt, r.address, std::nullopt,
                std::nullopt});
  count(RecordKind::kUmMigration);
}

void TraceWriter::onUnifiedMemory(const UnifiedMemoryRow& r) {
  const std::uint64_t global_pid = schema::encodeGlobalPid(r.process_id != 0 ? r.process_id : pid_);
  switch (r.kind) {
    case UnifiedMemoryKind::kBytesHtoD:
    case UnifiedMemoryKind::kBytesDtoH:
    case UnifiedMemoryKind::kBytesDtoD:
      if (r.end < r.start || r.start == 0) return count(RecordKind::kIncomplete);
      return writeMigration(r);
    case UnifiedMemoryKind::kGpuPageFault:
      if (r.end < r.start || r.start == 0) return count(RecordKind::kIncomplete);
      begin();
      um_gpu_fault_->run({r.start, r.end, global_pid, r.src_id, r.address, r.value, r.flags});
      return count(RecordKind::kUmGpuFault);
    case UnifiedMemoryKind::kCpuPageFault: {
      const std::int64_t unresolved = intern("");
      begin();
      um_cpu_fault_->run({r.start, global_pid, r.address, r.value, unresolved});
      return count(RecordKind::kUmCpuFault);
    }
    case UnifiedMemoryKind::kThrashing:
    case UnifiedMemoryKind::kRemoteMap:
      begin();
      um_thrashing_->run({r.start, global_pid, r.address, r.value, r.devices,
                          r.kind == UnifiedMemoryKind::kThrashing ? 0 : 1});
      return count(RecordKind::kUmThrashing);
    case UnifiedMemoryKind::kOther: return count(RecordKind::kUnknown);
  }
}

}  // namespace cuoverlap::collector
