"""`with cuoverlap.capture():` opens a capture window from inside the traced program.

The window is CUDA's own profiler API (cudaProfilerStart/cudaProfilerStop), which `cuoverlap record
--capture cudaProfilerApi` and Nsight Systems' `--capture-range=cudaProfilerApi` listen to. It is
called through what the program already uses, never loading CUDA itself:
  - torch.cuda.profiler, when the program imported torch and torch sees a GPU;
  - else the CUDA runtime (libcudart) when it is loaded in this process;
  - else the driver's cuProfilerStart/cuProfilerStop when libcuda is loaded;
  - else nothing: outside a CUDA program the window is a no-op.
"""

import contextlib
import ctypes
import os
import sys
import warnings


class capture(contextlib.ContextDecorator):
    """Context manager (and decorator) around a capture window; `backend` names what it called:
    "torch", "cudart", "cuda", or None when no CUDA was loaded as the window opened."""

    def __init__(self):
        self.backend = None
        self._stop = None

    def __enter__(self):
        self.backend, start, self._stop = _profiler_api()
        if start is not None:
            start()
        return self

    def __exit__(self, *exc_info):
        if self._stop is not None:
            self._stop()
            self._stop = None
        return False


def _profiler_api():
    """(backend, start, stop) of the first profiler API this process has loaded."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return "torch", torch.cuda.profiler.start, torch.cuda.profiler.stop
    for backend, library, prefix in (("cudart", "libcudart.so", "cuda"), ("cuda", "libcuda.so", "cu")):
        path = _loaded_library(library)
        if path is not None:
            handle = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            return (backend, _checked(handle, prefix + "ProfilerStart"),
                    _checked(handle, prefix + "ProfilerStop"))
    return None, None, None


def _loaded_library(name):
    """Path of the loaded shared library `name` (any version: libcudart.so.12, ...), or None."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) == 6:
                    path = fields[5].strip()
                    base = os.path.basename(path)
                    if base == name or base.startswith(name + "."):
                        return path
    except OSError:
        pass
    return None


def _checked(handle, name):
    function = getattr(handle, name)
    function.restype = ctypes.c_int
    function.argtypes = []

    def call():
        status = function()
        if status != 0:
            warnings.warn(f"{name} returned CUDA error {status}; the capture window may not have "
                          "opened or closed", RuntimeWarning, stacklevel=3)
    return call
