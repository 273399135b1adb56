import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import cuoverlap
from cuoverlap import _capture as capture_module

# A stand-in for the CUDA runtime: counts the profiler calls, returns FAKE_STATUS.
FAKE_CUDART = r"""
#include <stdlib.h>
static int starts, stops;
static int status(void) { const char* s = getenv("FAKE_STATUS"); return s ? atoi(s) : 0; }
int cudaProfilerStart(void) { ++starts; return status(); }
int cudaProfilerStop(void) { ++stops; return status(); }
int fakeStarts(void) { return starts; }
int fakeStops(void) { return stops; }
"""

# Loads the stand-in as a CUDA program would have loaded libcudart, then opens a window.
PROGRAM = textwrap.dedent("""
    import ctypes, sys, warnings
    fake = ctypes.CDLL(sys.argv[1])
    import cuoverlap
    warnings.simplefilter("error" if len(sys.argv) > 2 else "default")
    try:
        with cuoverlap.capture() as window:
            inside = (fake.fakeStarts(), fake.fakeStops())
    except RuntimeWarning as warning:
        print("warning:", warning)
        raise SystemExit(0)
    print(window.backend, inside, (fake.fakeStarts(), fake.fakeStops()))
""")


def test_capture_without_cuda_is_a_no_op():
    if capture_module._loaded_library("libcudart.so") or capture_module._loaded_library("libcuda.so"):
        pytest.skip("this test process has CUDA loaded")
    with cuoverlap.capture() as window:
        pass
    assert window.backend is None

    @cuoverlap.capture()
    def step(x):
        return x + 1
    assert step(1) == 2


@pytest.fixture
def fake_cudart(tmp_path):
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build the stand-in libcudart")
    source = tmp_path / "fake_cudart.c"
    source.write_text(FAKE_CUDART)
    library = tmp_path / "libcudart.so.99"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return str(library)


def run_program(library, *args, status="0"):
    env = dict(os.environ, FAKE_STATUS=status)
    result = subprocess.run([sys.executable, "-c", PROGRAM, library, *args], capture_output=True,
                            text=True, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_capture_calls_the_loaded_cuda_runtime(fake_cudart):
    assert run_program(fake_cudart) == "cudart (1, 0) (1, 1)"


def test_capture_warns_when_the_runtime_fails(fake_cudart):
    assert run_program(fake_cudart, "strict", status="3") == (
        "warning: cudaProfilerStart returned CUDA error 3; the capture window may not have opened or closed")
