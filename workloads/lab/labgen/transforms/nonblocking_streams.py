"""nonblocking-streams: created blocking streams -> non-blocking, so that ops on the legacy default
stream no longer serialize with them (legacy-default-stream: a null-stream op among blocking
streams). Not applied when that implicit barrier orders a data dependence."""
from ..program import NotApplicable, clone, stream_kinds, walk
from ..hostread import unprotected_reads
from ..protect import protect
from .legacy_order import legacy_orders_data

ID = "nonblocking-streams"
FINDING = "legacy-default-stream"
DOES = "makes created blocking streams non-blocking where the legacy stream also has work"


def apply(program):
    kinds = stream_kinds(program)
    if "blocking" not in kinds.values():
        return NotApplicable("no created blocking stream")
    if not _legacy_work(program, kinds):
        return NotApplicable("nothing runs on the legacy default stream")
    for thread in program["threads"]:
        if legacy_orders_data(program, thread):
            return NotApplicable("the legacy stream's barrier orders data in thread %s"
                                 % thread["name"])
    out = clone(program)
    before = unprotected_reads(out)
    for stream in out["streams"]:
        if stream["kind"] == "blocking":
            stream["kind"] = "nonblocking"
    protect(out, before)
    return out


def _legacy_work(program, kinds):
    for thread in program["threads"]:
        for step in walk(thread["steps"]):
            if step["op"] in ("copy", "memset", "kernel"):
                if not step.get("async", True) or kinds.get(step["stream"]) == "legacy":
                    return True
    return False
