#include "diagnosis/rules/synchronous_transfer.h"

namespace cuoverlap::diagnosis {
namespace {

bool issuedSynchronously(const DeviceView& view, const GpuOp& op, ApiKind sync_kind) {
  if (auto call = view.launchCall(op)) return view.callKind(*call) == sync_kind;
  return (op.flags & op_flag::kAsyncKnown) != 0 && (op.flags & op_flag::kAsync) == 0;
}

}  // namespace

void addSynchronousTransfers(const DeviceView& view, OpKind kind, ApiKind sync_kind,
                             FindingBuilder& builder) {
  const auto& ops = view.ops();
  for (std::size_t pos = 1; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    if (op.kind != kind || !issuedSynchronously(view, op, sync_kind)) continue;
    const auto next = view.firstOpStartingAtOrAfter(ops[pos].end);
    if (!next) continue;
    const Ns idle = view.idleWithin(ops[pos].end, ops[*next].start);
    builder.add(idle, evidenceForOp(view, op, describeOp(view, op) + " blocked the host"));
  }
}

}  // namespace cuoverlap::diagnosis
