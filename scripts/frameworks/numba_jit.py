"""Numba CUDA: the first launch of each @cuda.jit kernel compiles it (JIT) on the critical path."""
import time
import numpy as np
if not hasattr(np, "row_stack"):  # numba-cuda still names it; NumPy 2.5 removed it
    np.row_stack = np.vstack
from numba import cuda

@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]

@cuda.jit
def scale(x, f):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= f

n = 1 << 22
x = cuda.to_device(np.ones(n, np.float32)); y = cuda.to_device(np.ones(n, np.float32))
out = cuda.device_array(n, np.float32)
t0 = time.perf_counter()
for it in range(20):
    saxpy[(n + 255) // 256, 256](np.float32(2.0), x, y, out)
    if it == 10:
        scale[(n + 255) // 256, 256](out, np.float32(0.5))
res = out.copy_to_host()
print(f"numba_jit ms={(time.perf_counter() - t0) * 1e3:.3f} ok={bool(np.isfinite(res).all())}")
