"""async-copy: every synchronous cudaMemcpy -> cudaMemcpyAsync on the thread's stream (sync-memcpy).

The stream is that of the nearest GPU op touching the same buffers (else the thread's own), and a
stream synchronize goes right before each host read that needed the copy to have completed. One fix
only: a pageable buffer stays pageable (its copy is still staged; pin-host is another transform).
"""
from ..program import NotApplicable
from .make_async import make_async

ID = "async-copy"
FINDING = "sync-memcpy"
DOES = ("cudaMemcpy -> cudaMemcpyAsync on the thread's stream, a stream synchronize only before "
        "a host read that needs it")


def apply(program):
    out = make_async(program, "copy")
    return out if out is not None else NotApplicable("no synchronous copy")
