"""Lab corpus traces on disk: plain SQLite (BATCH.sqlite) or gzip-compressed (BATCH.sqlite.gz, as
the committed corpora store theirs, a quarter of the size; `cuoverlap` reads both).

  plain(path)                 context manager: a plain SQLite file with path's content
  connect(path, stack)        a read-only sqlite3 connection, its inflated copy kept while stack lives
  connect(path)               the same, kept until the process exits (short scripts)
  write_compressed(src, dst)  dst = src gzip-compressed, byte-for-byte the same for the same src
"""
import atexit
import contextlib
import gzip
import os
import shutil
import sqlite3
import tempfile


def compressed(path):
    return path.endswith(".gz")


@contextlib.contextmanager
def plain(path):
    """Yields path itself, or a temporary inflated copy of a .gz trace (removed afterwards)."""
    if not compressed(path):
        yield path
        return
    fd, copy = tempfile.mkstemp(prefix="lab_trace.", suffix=".sqlite")
    try:
        with os.fdopen(fd, "wb") as out, gzip.open(path, "rb") as source:
            shutil.copyfileobj(source, out, 1 << 20)
        yield copy
    finally:
        os.unlink(copy)


_PROCESS = contextlib.ExitStack()
atexit.register(_PROCESS.close)


def connect(path, stack=None):
    """Read-only connection to trace `path`; `stack` (contextlib.ExitStack, default: one closed at
    exit) owns it and its inflated copy."""
    stack = _PROCESS if stack is None else stack
    source = stack.enter_context(plain(path))
    db = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    stack.callback(db.close)
    return db


def write_compressed(src, dst):
    """gzip src into dst (no name, time 0 in the header: the same trace gives the same bytes)."""
    with open(src, "rb") as f, open(dst, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as out:
            shutil.copyfileobj(f, out, 1 << 20)
