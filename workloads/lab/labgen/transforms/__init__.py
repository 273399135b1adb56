"""The fix transforms: each carries out one finding's advice on a program description.

Each module has ID, FINDING (the finding id whose cost its measured saving tests), DOES (one line)
and apply(program) -> program | NotApplicable; it never changes its input. A module may have
apply_each(program) -> [(place, program)] where the transform applies at several places each a
fix of its own (multi-stream, copy-ahead: one stream's loop per variant; apply() is the first). It may have
finding(program) naming a more specific finding for that program (drop-wait, hoist-alloc).
"""
from . import (async_copy, async_memset, copy_ahead, defer_read, drop_wait, graph_capture,
               hoist_alloc, merge_copies, multi_stream, nonblocking_streams, overlap_host, own_streams,
               pin_host, prefetch_managed, remove_sync, stream_priority)

MODULES = (remove_sync, defer_read, pin_host, async_copy, async_memset, own_streams,
           nonblocking_streams, drop_wait, merge_copies, hoist_alloc, prefetch_managed,
           graph_capture, overlap_host, multi_stream, copy_ahead, stream_priority)
REGISTRY = {m.ID: m for m in MODULES}


def base_id(variant):
    """The transform id of a variant name: `multi-stream@s3` (a transform applied to one of several
    places, apply_each) is a `multi-stream` variant."""
    return variant.split("@", 1)[0]


def finding_for(transform_id, program):
    """The finding id a transform's saving on this (baseline) program tests."""
    module = REGISTRY[base_id(transform_id)]
    return module.finding(program) if hasattr(module, "finding") else module.FINDING


def all_findings(transform_id):
    transform_id = base_id(transform_id)
    module = REGISTRY[transform_id]
    extra = {"drop-wait": ["cross-stream-kernel-wait"]}
    return [module.FINDING] + extra.get(transform_id, [])
