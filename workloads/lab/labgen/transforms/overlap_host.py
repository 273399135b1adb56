"""overlap-host: host compute that does not depend on the GPU result of the same iteration runs
while the GPU works: moved after the step list's last launch before its first blocking step
(host-busy).

In a loop body, host work before the first launch prepares that iteration's input (a data loader):
it is software-pipelined (made one iteration ahead: once before the loop for the first input, then
after each iteration's launches for the next, the last iteration peeled so it makes none), so the
host work is done as many times as before. Host work between launches simply moves after them,
also between the launches that follow a blocking step (host-busy prices those too: g009155's host
steps between kernels after a cudaMallocHost). Host work after a host read, synchronize or
synchronous call and before the next launch depends on the GPU and stays. A copy to or from
pageable host memory is such a call: a download returns only once the GPU work before it and the
copy are done, an upload once it is staged (g020288: host steps moved past a pageable download ran
after it, 0.9 ms slower).
"""
import copy

from ..program import NotApplicable, buffers, clone, walk_lists

ID = "overlap-host"
FINDING = "host-busy"
DOES = "moves host compute that does not depend on this iteration's GPU result to run while the GPU works"
LAUNCH = ("copy", "memset", "kernel", "record", "wait", "graph_launch", "prefetch")


def _launch(step, pageable):
    if step["op"] == "copy" and (step["src"] in pageable or step["dst"] in pageable):
        return False
    return step["op"] in LAUNCH and step.get("async", True)


def _first_blocking(body, pageable, start=0):
    """The index of the first blocking step of body at or after start (len(body): none)."""
    return next((i for i in range(start, len(body)) if _blocking(body[i], pageable)), len(body))


def _plan(body, pageable):
    """(index after the last launch before the first blocking step, pre, mid) or None."""
    first_block = _first_blocking(body, pageable)
    launches = [i for i in range(first_block) if _launch(body[i], pageable)]
    if not launches:
        return None
    first, last = launches[0], launches[-1]
    pre = [i for i in range(first) if body[i]["op"] == "host"]
    mid = [i for i in range(first, last) if body[i]["op"] == "host"]
    return (last + 1, pre, mid) if pre or mid else None


def _blocking(step, pageable):
    return not _launch(step, pageable) and step["op"] != "host"


def _later_runs(body, pageable):
    """The body with the host steps between two launches of each run of launches after its first
    blocking step (up to the next one) moved after that run's last launch, and whether any moved."""
    first_block = _first_blocking(body, pageable)
    out, changed, i = list(body[:first_block]), False, first_block
    while i < len(body):
        out.append(body[i])
        end = _first_blocking(body, pageable, i + 1)
        run = body[i + 1:end]
        launches = [j for j, s in enumerate(run) if _launch(s, pageable)]
        mid = [j for j in range(launches[0], launches[-1]) if run[j]["op"] == "host"] if launches else []
        if mid:
            last = launches[-1]
            kept = [s for j, s in enumerate(run[:last + 1]) if j not in mid]
            run = kept + [run[j] for j in mid] + run[last + 1:]
            changed = True
        out += run
        i = end
    return out, changed


def _moved(body, plan, take):
    end, pre, mid = plan
    moved = [i for i in pre + mid if i in take]
    hosts = [body[i] for i in moved]
    rest = [s for i, s in enumerate(body[:end]) if i not in moved]
    return rest + hosts + body[end:]


def apply(program):
    out = clone(program)
    pageable = {name for name, b in buffers(out).items() if b["kind"] == "pageable"}
    changed = 0
    for thread in out["threads"]:
        for steps in list(walk_lists(thread["steps"])):
            changed += _in_list(steps, pageable)
    if not changed:
        return NotApplicable("no host compute runs before or between the launches it could overlap")
    return out


def _in_list(steps, pageable):
    changed = 0
    for i in range(len(steps) - 1, -1, -1):
        loop = steps[i]
        if loop["op"] != "loop":
            continue
        later, moved_later = _later_runs(loop["body"], pageable)
        loop["body"][:] = later  # in place: walk_lists handed out this list for its nested loops
        changed += moved_later
        plan = _plan(loop["body"], pageable)
        if plan is None:
            continue
        body, (end, pre, mid) = loop["body"], plan
        if not mid and (loop["count"] < 2 or end == len(body)):
            continue  # one iteration, or a body that never waits: the same order either way
        prologue = [body[j] for j in pre]
        piped = _moved(body, plan, set(pre + mid))
        rest = [copy.deepcopy(s) for j, s in enumerate(body) if j not in pre]
        rest_plan = _plan(rest, pageable) or (0, [], [])
        last = _moved(rest, rest_plan, set(rest_plan[2]))
        replacement = prologue
        if loop["count"] > 1:
            replacement.append({"op": "loop", "count": loop["count"] - 1, "body": piped})
        replacement += last if pre else []
        if not pre:
            replacement = [{"op": "loop", "count": loop["count"], "body": piped}]
        steps[i:i + 1] = replacement
        changed += 1
    return changed

