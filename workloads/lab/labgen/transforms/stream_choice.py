"""Which stream a synchronous copy or memset goes to when it is made asynchronous."""
from ..program import effects, fresh_name, names, step_stream, thread_stream, unroll


def stream_for(program, thread, step):
    """The stream of the nearest GPU op of the thread touching the same buffers (the next one
    first, then the previous one), else the thread's own stream; None when the thread has none."""
    ops = list(unroll(thread["steps"]))
    at = next(i for i, s in enumerate(ops) if s is step)
    touched = set().union(*effects(step, program))
    for i in list(range(at + 1, len(ops))) + list(range(at - 1, -1, -1)):
        other = ops[i]
        stream = step_stream(other)
        if stream is not None and other["op"] not in ("record", "wait") \
                and touched & set().union(*effects(other, program)):
            return stream
    return thread_stream(program, thread)


def thread_own_stream(program, thread):
    """The thread's stream, creating a non-blocking one when it issues to none."""
    stream = thread_stream(program, thread)
    if stream is None:
        stream = fresh_name(names(program, "streams"), thread["name"] + "_stream")
        program["streams"].append({"name": stream, "kind": "nonblocking"})
    return stream
