"""Whether the legacy default stream's implicit barrier orders a data dependence in a thread."""
from ..ordering import ISSUING
from ..program import conflicts, effects, stream_kinds, unroll


def legacy_orders_data(program, thread):
    """True when an asynchronous op on the legacy stream and an op of another blocking stream
    touch a buffer one of them writes (only the barrier orders them)."""
    kinds = stream_kinds(program)
    legacy_ops, other_ops = [], []
    for step in unroll(thread["steps"]):
        if step["op"] not in ISSUING or not step.get("async", True):
            continue
        kind = kinds.get(step["stream"])
        eff = effects(step, program)
        if kind == "legacy":
            legacy_ops.append(eff)
        elif kind in ("blocking", "per-thread"):
            other_ops.append(eff)
    return any(conflicts(a, b) for a in _unique(legacy_ops) for b in _unique(other_ops))


def _unique(effs):
    seen = {}
    for r, w in effs:
        seen[(frozenset(r), frozenset(w))] = (r, w)
    return list(seen.values())
