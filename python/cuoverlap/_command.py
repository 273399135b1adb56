"""Runs the `cuoverlap` command bundled in this package (bin/cuoverlap beside this file).

Keyword options become command-line options: `gap_threshold="1ms"` is `--gap-threshold=1ms`,
True is a bare flag, False and None leave the option out, a list or tuple repeats it.
"""

import os
import subprocess
import sys
import warnings
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


class CuoverlapError(RuntimeError):
    """The command failed: `message` is its one-line error, `returncode` its exit status."""

    def __init__(self, message, returncode, stderr=""):
        super().__init__(message, returncode)
        self.message = message
        self.returncode = returncode
        self.stderr = stderr

    def __str__(self):
        return f"{self.message} (exit status {self.returncode})"


class CuoverlapWarning(UserWarning):
    """A warning the command printed while it succeeded (a trace read up to its last commit, ...)."""


def binary():
    """Path of the bundled `cuoverlap` executable."""
    path = _PACKAGE_DIR / "bin" / "cuoverlap"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: this cuoverlap module was not installed from "
                                "its wheel (`pip install .` at the repository's root builds one)")
    return str(path)


def path_args(paths):
    """One path or an iterable of paths, as command-line words (never read as options: the
    command's own `--` would cost it its message for a mistyped option)."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    words = [os.fsdecode(p) for p in paths]
    words = ["./" + word if word.startswith("-") else word for word in words]
    if not words:
        raise ValueError("no trace given")
    return words


def option_args(options):
    """Keyword options as `--name=value` words (a value may start with a dash: --window=-5ms:0)."""
    words = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            words.append(flag)
        elif isinstance(value, (list, tuple)):
            words += [f"{flag}={word(item)}" for item in value]
        else:
            words.append(f"{flag}={word(value)}")
    return words


def word(value):
    return os.fsdecode(value) if isinstance(value, (bytes, os.PathLike)) else str(value)


def reject_options(options, command, *names):
    for name in names:
        if name in options:
            raise TypeError(f"{command}() sets --{name.replace('_', '-')} itself")


def error_from(returncode, stderr, otherwise=None):
    """The exception for a failed run: its message is the command's last error line, else
    `otherwise`, else the last line it printed."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("cuoverlap: error:")]
    if errors:
        message = errors[-1]
    else:
        message = otherwise or (lines[-1] if lines else f"cuoverlap exited with status {returncode}")
    return CuoverlapError(message, returncode, stderr)


def run(args):
    """Runs the command and returns its standard output (bytes); raises CuoverlapError on failure.

    What it printed on standard error while succeeding comes back as CuoverlapWarning."""
    completed = subprocess.run([binary(), *args], stdin=subprocess.DEVNULL, capture_output=True)
    stderr = completed.stderr.decode("utf-8", "replace")
    if completed.returncode != 0:
        raise error_from(completed.returncode, stderr)
    for line in stderr.splitlines():
        if line.strip():
            warnings.warn(line, CuoverlapWarning, stacklevel=3)
    return completed.stdout


def run_streaming(args, otherwise):
    """Runs the command with its standard error shown as it comes, through sys.stderr so that a
    notebook shows it; raises CuoverlapError (message `otherwise` without an error line) on failure."""
    process = subprocess.Popen([binary(), *args], stderr=subprocess.PIPE)
    lines = []
    with process.stderr:
        for raw in process.stderr:
            line = raw.decode("utf-8", "replace")
            sys.stderr.write(line)
            sys.stderr.flush()
            lines.append(line)
    returncode = process.wait()
    if returncode != 0:
        raise error_from(returncode, "".join(lines), otherwise(returncode))
