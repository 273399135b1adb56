"""async-memset: every synchronous cudaMemset -> cudaMemsetAsync on the thread's stream (sync-memset)."""
from ..program import NotApplicable
from .make_async import make_async

ID = "async-memset"
FINDING = "sync-memset"
DOES = "cudaMemset -> cudaMemsetAsync on the thread's stream"


def apply(program):
    out = make_async(program, "memset")
    return out if out is not None else NotApplicable("no synchronous memset")
