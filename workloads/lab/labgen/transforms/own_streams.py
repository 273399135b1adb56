"""own-streams: each host thread issuing to the legacy default stream gets its own created
non-blocking stream instead (legacy-default-stream).

Every step of the thread naming the legacy stream (launches, records, waits, stream synchronizes)
names the new stream. Not applied when the thread also uses other streams and the legacy stream's
implicit ordering carries a data dependence between them (dropping it would race).
"""
from ..program import NotApplicable, clone, fresh_name, names, stream_kinds, walk
from ..hostread import unprotected_reads
from ..protect import protect
from .legacy_order import legacy_orders_data

ID = "own-streams"
FINDING = "legacy-default-stream"
DOES = "gives every host thread that issues to the legacy default stream its own non-blocking stream"


def apply(program):
    kinds = stream_kinds(program)
    legacy = {n for n, k in kinds.items() if k == "legacy"}
    out = clone(program)
    before = unprotected_reads(out)
    moved = 0
    for thread in out["threads"]:
        used = {s.get("stream") for s in walk(thread["steps"])} & legacy
        if not used:
            continue
        if legacy_orders_data(out, thread):
            return NotApplicable("thread %s relies on the legacy stream's ordering for its data"
                                 % thread["name"])
        new = fresh_name(names(out, "streams"), thread["name"] + "_own")
        out["streams"].append({"name": new, "kind": "nonblocking"})
        for step in walk(thread["steps"]):
            if step.get("stream") in used:
                step["stream"] = new
        moved += 1
    if not moved:
        return NotApplicable("no thread issues to the legacy default stream")
    protect(out, before)
    return out
