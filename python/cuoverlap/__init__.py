"""cuoverlap from Python: do your CUDA copies and kernels really overlap, and if not, why not?

    import cuoverlap
    report = cuoverlap.analyze("trace.sqlite")           # the JSON report as Python objects
    report["traces"][0]["devices"][0]["overlap_ratio"]
    cuoverlap.record(["python", "train.py"], output="train.sqlite")
    cuoverlap.report("train.sqlite")                      # shows as HTML in Jupyter
    with cuoverlap.capture(): ...                         # a cudaProfilerApi capture window

Each call runs the `cuoverlap` command bundled in this package (`python -m cuoverlap` is that
command); keyword options are its options (`gap_threshold="1ms"` is `--gap-threshold=1ms`, see
`cuoverlap analyze --help`). A failure raises CuoverlapError with the command's one-line message and
exit status. docs/python.md has the details.
"""

import json
import os

from . import _command
from ._command import CuoverlapError, CuoverlapWarning, binary
from ._capture import capture
from ._report import Report

__all__ = ["analyze", "record", "report", "capture", "Report", "CuoverlapError", "CuoverlapWarning",
           "binary"]


def analyze(paths, **options):
    """Analyzes one trace or several (the ranks of one job) and returns the JSON report (keys in
    docs/metrics.md) as dicts, lists and numbers."""
    _command.reject_options(options, "analyze", "format", "output", "o", "force")
    args = ["analyze", "--format", "json", *_command.option_args(options), *_command.path_args(paths)]
    return json.loads(_command.run(args))


def record(command, output="cuoverlap.sqlite", **options):
    """Runs `command` (a list: program and arguments) under `cuoverlap record` and returns the
    trace's path (`output`, which may hold %p or %r for one file per process).

    The program's output and the recording's summary show as they come. Raises CuoverlapError when
    the program exits with a non-zero status (the trace is still written) or cannot be run."""
    if isinstance(command, (str, bytes, os.PathLike)):
        raise TypeError("record() takes the command as a list: [program, argument, ...]")
    _command.reject_options(options, "record", "o")
    output = os.fsdecode(output)
    args = ["record", "--output", output, *_command.option_args(options), "--",
            *[_command.word(item) for item in command]]
    _command.run_streaming(args, lambda status: f"the recorded program exited with status {status}")
    return output


def report(paths, **options):
    """The analysis of `paths` as a Report: HTML in Jupyter, `.data` the JSON report, str() the text."""
    return Report(paths, **options)
