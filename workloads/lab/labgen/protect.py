"""Put back the synchronizes a transform's change made necessary: before each host read (or
synchronous copy) that the change left reading a buffer GPU work may still write, a synchronize of
the stream that writes it, as a programmer making that change would."""
from .hostread import unprotected_details
from .program import walk_lists


def protect(program, before):
    """Insert stream synchronizes in program (in place) for reads unprotected now but not in
    `before` (ids of steps of program that were already unprotected)."""
    for _ in range(8):
        new = {k: v for k, v in unprotected_details(program).items() if k not in before}
        if not new:
            return
        for thread in program["threads"]:
            for steps in walk_lists(thread["steps"]):
                for i in range(len(steps) - 1, -1, -1):
                    for stream in sorted(new.get(id(steps[i]), ())):
                        steps.insert(i, {"op": "sync", "what": "stream", "stream": stream})
