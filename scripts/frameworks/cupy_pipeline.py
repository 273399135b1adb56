"""A CuPy multi-stream pipeline: chunks copied in, processed, copied out on 4 streams.
  --blocking      cp.asnumpy(...) per chunk (a blocking copy to pageable memory: serializes)
  --sync-get      pinned host buffers, but ndarray.get(stream=s, out=...) as CuPy defaults it,
                  blocking=True: a cudaStreamSynchronize per chunk
  (default)       pinned host buffers and asynchronous copies (get(..., blocking=False)), one
                  synchronize at the end"""
import argparse, time
import numpy as np
import cupy as cp

p = argparse.ArgumentParser()
p.add_argument("--blocking", action="store_true")
p.add_argument("--sync-get", action="store_true")
p.add_argument("--chunks", type=int, default=16)
p.add_argument("--mb", type=int, default=16)
a = p.parse_args()
n = a.mb * (1 << 20) // 4
streams = [cp.cuda.Stream(non_blocking=True) for _ in range(4)]
kernel = cp.ElementwiseKernel("float32 x", "float32 y", "y = sinf(x) * cosf(x) + sqrtf(fabsf(x))", "work")

def pinned(shape):
    mem = cp.cuda.alloc_pinned_memory(int(np.prod(shape)) * 4)
    return np.frombuffer(mem, np.float32, int(np.prod(shape))).reshape(shape)

host_in = [np.random.default_rng(i).standard_normal(n, dtype=np.float32) for i in range(4)]
if not a.blocking:
    pin_in = [pinned((n,)) for _ in range(4)]
    for i in range(4): pin_in[i][:] = host_in[i]
    pin_out = [pinned((n,)) for _ in range(a.chunks)]
dev_in = [cp.empty(n, cp.float32) for _ in range(4)]
dev_out = [cp.empty(n, cp.float32) for _ in range(4)]
kernel(dev_in[0], dev_out[0]); cp.cuda.Device().synchronize()  # compile the kernel first
t0 = time.perf_counter()
results = []
for c in range(a.chunks):
    s = streams[c % 4]; k = c % 4
    with s:
        if a.blocking:
            dev_in[k].set(host_in[k])
            for _ in range(4): kernel(dev_in[k], dev_out[k])
            results.append(cp.asnumpy(dev_out[k]))
        else:
            dev_in[k].set(pin_in[k], stream=s)
            for _ in range(4): kernel(dev_in[k], dev_out[k])
            dev_out[k].get(stream=s, out=pin_out[c], blocking=a.sync_get)
            results.append(pin_out[c])
cp.cuda.Device().synchronize()
ms = (time.perf_counter() - t0) * 1e3
print(f"cupy_pipeline blocking={int(a.blocking)} sync_get={int(a.sync_get)} chunks={a.chunks} MiB={a.mb} ms={ms:.3f}")
