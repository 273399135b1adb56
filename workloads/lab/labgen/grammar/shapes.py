"""Shapes: each returns a host thread's steps, built on a Builder whose defects it consults.

A defect is injected where a real program would have it: d["sync_launch"] a synchronize after each
launch, d["sync_copy"] cudaMemcpy, d["sync_memset"] cudaMemset, d["split"] one transfer in many
small copies, d["alloc_loop"] allocation each iteration, d["host_between"] host compute between
launches, d["spurious_wait"] waits on events that order nothing, d["pageable"] / d["legacy"] /
d["blocking"] through the Builder's buffers and streams.
"""
from .builder import (KIB, MIB, copies, copy, copy_bytes, kernel, kernel_us, log_uniform, loop,
                      memset, sync_device, sync_stream)


def _after_launch(b, stream):
    return [sync_stream(stream)] if b.defects.get("sync_launch") and b.rng.random() < 0.7 else []


def _host_between(b):
    if b.defects.get("host_between") and b.rng.random() < 0.6:
        return [{"op": "host", "us": int(log_uniform(b.rng, 5, 400))}]
    return []


def pipeline(b):
    """Copy-in / kernel / copy-out tiles over 1-4 streams (one stream: a loop over tiles)."""
    rng, d = b.rng, b.defects
    nstreams = rng.choice([1, 1, 1, 1, 2, 3, 4])
    tiles = rng.randint(2, 12)
    nbytes = copy_bytes(rng, 64 * KIB, 16 * MIB)
    us = kernel_us(rng, 5, 800)
    streams = [b.work_stream()] + [b.created_stream() for _ in range(nstreams - 1)]
    host_in = b.host_buffer(nbytes)
    outs = [b.host_buffer(nbytes) for _ in streams]
    dev = [b.buffer("device", nbytes) for _ in streams]
    serial = nstreams > 1 and d.get("spurious_wait") and rng.random() < 0.6
    sync = d.get("sync_copy") and rng.random() < 0.4
    steps = []
    if d.get("sync_memset"):
        steps.append(memset(dev[0], nbytes, streams[0], sync=True))

    def tile(i):
        s, buf = streams[i % nstreams], dev[i % nstreams]
        body = copies(rng, host_in, buf, nbytes, s, sync, d.get("split"))
        body += [kernel(rng, s, buf, lo=us, hi=us + 1)] + _after_launch(b, s)
        body.append(copy(buf, outs[i % nstreams], nbytes, s, sync))
        if serial and i + 1 < tiles:  # the next tile waits for this one: orders nothing
            event = b.event()
            body += [{"op": "record", "event": event, "stream": s},
                     {"op": "wait", "event": event, "stream": streams[(i + 1) % nstreams]}]
        return body

    if nstreams == 1:
        steps.append(loop(tiles, tile(0)))
        steps += [sync_stream(streams[0]), {"op": "host_read", "buffer": outs[0]}]
    else:
        barrier = tiles // 2 if d.get("legacy") and rng.random() < 0.7 else -1
        for i in range(tiles):
            if i == barrier:  # a scratch memset on the legacy stream, among the tiles' streams
                scratch = b.buffer("device", 4 * KIB)
                steps.append(memset(scratch, 4 * KIB, b.stream("legacy")))
            steps += tile(i)
        steps += [sync_device()] + [{"op": "host_read", "buffer": o} for o in outs]
    return steps


def training(b):
    """Training steps: input H2D, many kernels, loss D2H + host read, optimizer kernels."""
    rng, d = b.rng, b.defects
    s = b.work_stream()
    nbytes = copy_bytes(rng, 16 * KIB, 8 * MIB)
    host_in, loss = b.host_buffer(nbytes), b.host_buffer(4 * KIB)
    dev, params = b.buffer("device", nbytes), b.buffer("device", copy_bytes(rng, 64 * KIB, 32 * MIB))
    small = rng.random() < 0.5
    body = copies(rng, host_in, dev, nbytes, s, False, d.get("split"))
    if d.get("alloc_loop") and rng.random() < 0.5:
        tmp = b.alloc_name()
        kind = rng.choice(["device", "device", "pinned"])
        body = [{"op": "alloc", "buffer": tmp, "kind": kind, "bytes": nbytes}] + body
        body.append(kernel(rng, s, tmp if kind == "device" else dev, small, 2, 200))
        body.append({"op": "free", "buffer": tmp})
    for _ in range(rng.randint(3, 12)):
        body += [kernel(rng, s, rng.choice([dev, params]), small, 2, 300)]
        body += _after_launch(b, s) + _host_between(b)
    sync = d.get("sync_copy") and rng.random() < 0.6
    body.append(copy(dev, loss, 4 * KIB, s, sync))
    if not sync:
        body.append(sync_stream(s) if rng.random() < 0.6 else sync_device())
    body.append({"op": "host_read", "buffer": loss})
    if rng.random() < 0.5:
        body.append({"op": "host", "us": int(log_uniform(rng, 5, 300))})
    if d.get("sync_memset"):
        body.append(memset(params, min(1 * MIB, _bytes(b, params)), s, sync=True))
    body += [kernel(rng, s, params, small, 2, 100) for _ in range(rng.randint(1, 3))]
    return [loop(rng.randint(2, 20), body), sync_device()]


def chain(b):
    """Kernels across 2-3 streams ordered by events; with spurious_wait, some waits order nothing."""
    rng, d = b.rng, b.defects
    streams = [b.created_stream() for _ in range(rng.randint(2, 3))]
    bufs = [b.buffer("device", copy_bytes(rng, 4 * KIB, 4 * MIB)) for _ in streams]
    small = rng.random() < 0.7
    all_spurious = d.get("spurious_wait") and rng.random() < 0.8
    body = []
    for i in range(rng.randint(2, 6)):
        src, dst = i % len(streams), (i + 1) % len(streams)
        body.append(kernel(rng, streams[src], bufs[src], small, 10, 800))
        event = b.event()
        body.append({"op": "record", "event": event, "stream": streams[src]})
        body.append({"op": "wait", "event": event, "stream": streams[dst]})
        spurious = all_spurious or (d.get("spurious_wait") and rng.random() < 0.3)
        body.append(kernel(rng, streams[dst], bufs[dst] if spurious else bufs[src], small, 10, 800))
    if rng.random() < 0.5:
        body = _prefetch_waits(b, streams, all_spurious) + body
    steps = [loop(rng.randint(1, 8), body), sync_device()]
    if rng.random() < 0.4:
        host = b.host_buffer(_bytes(b, bufs[0]))
        steps += [copy(bufs[0], host, _bytes(b, bufs[0]), streams[0], d.get("sync_copy")),
                  sync_device(), {"op": "host_read", "buffer": host}]
    return steps


def _prefetch_waits(b, streams, spurious):
    """The next input's copy on a copy stream, which the compute stream waits for; with
    spurious_wait the copy also waits for the last stream's kernels (buffers it does not touch;
    else for the compute stream: it reuses the buffer the compute stream's kernel read)."""
    rng = b.rng
    nbytes = copy_bytes(rng, 16 * KIB, 4 * MIB)
    host, dev = b.host_buffer(nbytes), b.buffer("device", nbytes)
    copier = b.created_stream()
    steps = []
    if b.defects.get("spurious_wait"):
        done = b.event()
        steps += [{"op": "record", "event": done, "stream": streams[-1] if spurious else streams[0]},
                  {"op": "wait", "event": done, "stream": copier}]
    ready = b.event()
    steps += [copy(host, dev, nbytes, copier), {"op": "record", "event": ready, "stream": copier},
              {"op": "wait", "event": ready, "stream": streams[0]},
              kernel(rng, streams[0], dev, True, 10, 300)]
    return steps


def loader(b):
    """A data loader: the host makes each batch, copies it in, kernels consume it."""
    rng, d = b.rng, b.defects
    s = b.work_stream()
    nbytes = copy_bytes(rng, 16 * KIB, 8 * MIB)
    host, dev = b.host_buffer(nbytes), b.buffer("device", nbytes)
    body = [{"op": "host", "us": int(log_uniform(rng, 20, 1500))}]
    body += copies(rng, host, dev, nbytes, s, d.get("sync_copy") and rng.random() < 0.5,
                   d.get("split"))
    for _ in range(rng.randint(1, 4)):
        body += [kernel(rng, s, dev, lo=10, hi=1000)] + _host_between(b)
    if rng.random() < 0.5:
        out = b.host_buffer(4 * KIB)
        body += [copy(dev, out, 4 * KIB, s), sync_stream(s), {"op": "host_read", "buffer": out}]
    elif rng.random() < 0.6:
        body.append(sync_stream(s))
    return [loop(rng.randint(2, 16), body), sync_device()]


def alloc_loop(b):
    """Temporary buffers allocated and freed each iteration."""
    rng = b.rng
    s = b.work_stream()
    nbytes = copy_bytes(rng, 64 * KIB, 16 * MIB)
    dev = b.buffer("device", nbytes)
    kind = rng.choice(["device", "pinned", "pinned", "managed", "pageable"])
    tmp = b.alloc_name()
    body = [{"op": "alloc", "buffer": tmp, "kind": kind, "bytes": nbytes}]
    if kind == "device":
        body += [copy(dev, tmp, nbytes, s), kernel(rng, s, tmp, lo=5, hi=500)]
    elif kind == "managed":
        body += [kernel(rng, s, tmp, lo=5, hi=300), sync_stream(s)]
    else:
        body += [copy(tmp, dev, nbytes, s), kernel(rng, s, dev, lo=5, hi=500), sync_stream(s)]
    body.append({"op": "free", "buffer": tmp})
    return [loop(rng.randint(2, 12), body), sync_device()]


def managed(b):
    """A consumer of managed memory the host reads back between steps."""
    rng = b.rng
    s = b.created_stream() if rng.random() < 0.8 else b.work_stream()
    m = b.buffer("managed", copy_bytes(rng, 4 * KIB, 8 * MIB))
    body = [kernel(rng, s, m, lo=5, hi=500) for _ in range(rng.randint(1, 3))]
    body += [sync_stream(s), {"op": "host_read", "buffer": m}]
    if rng.random() < 0.5:
        body.append({"op": "host", "us": int(log_uniform(rng, 5, 300))})
    return [loop(rng.randint(1, 6), body), sync_device()]


def launch_bound(b):
    """A loop of tiny kernels, launch-bound."""
    rng = b.rng
    s = b.created_stream() if rng.random() < 0.8 else b.work_stream()
    dev = b.buffer("device", copy_bytes(rng, 4 * KIB, 1 * MIB))
    body = []
    for _ in range(rng.randint(3, 16)):
        body.append(kernel(rng, s, dev, True, 2, 30))
        body += _host_between(b) if rng.random() < 0.3 else []
    if rng.random() < 0.5 or b.defects.get("sync_launch"):
        body.append(sync_stream(s))
    return [loop(rng.randint(5, 50), body), sync_device()]


def _bytes(b, name):
    return next(x["bytes"] for x in b.program["buffers"] if x["name"] == name)


SHAPES = {"pipeline": pipeline, "training": training, "chain": chain, "loader": loader,
          "alloc-loop": alloc_loop, "managed": managed, "launch-bound": launch_bound}
