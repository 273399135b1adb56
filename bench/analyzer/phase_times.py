#!/usr/bin/env python3
"""phase_times.py [--steps] COMMAND...: how long each phase of a cuoverlap command takes, from its progress line.

Runs COMMAND with CUOVERLAP_PROGRESS=always (the progress line whatever stderr is, docs/reports.md),
timestamps every rewrite of the line and prints, per phase (the line without its percentage), when it
was first shown and how long it lasted until the next phase; then the command's wall time.
docs/BENCHMARKS.md ("Real traces cost more per op") uses it.
"""
import os
import re
import subprocess
import sys
import time

MARK = b"\r\x1b[K"


def main():
    steps = sys.argv[1] == "--steps"  # every percentage step, not only each phase
    if steps:
        del sys.argv[1]
    env = dict(os.environ, CUOVERLAP_PROGRESS="always")
    started = time.monotonic()
    child = subprocess.Popen(sys.argv[1:], stderr=subprocess.PIPE, env=env)
    phases, pending = [], b""  # phases: [name, first seen]
    while True:
        chunk = os.read(child.stderr.fileno(), 65536)
        if not chunk:
            break
        # Each rewrite is one write of MARK + text: a chunk ends with a whole line.
        parts = (pending + chunk).split(MARK)
        pending = b""
        if not parts[0].strip():
            parts.pop(0)  # nothing before the first rewrite
        now = time.monotonic() - started
        for part in parts:
            text = part.decode(errors="replace").strip()
            name = text.removeprefix("cuoverlap: ")
            if not steps:
                name = re.sub(r"( [0-9]+%|\.\.\.)$", "", name)
            name = re.sub(r"\S*/", "", name)  # file names without their folders
            if not text and not phases:
                continue
            if not text:
                name = "(line erased: the rest, e.g. rendering the report)"
            if not phases or phases[-1][0] != name:
                phases.append([name, now])
    child.wait()
    total = time.monotonic() - started
    print(f"{'phase':<64} {'from s':>8} {'for s':>8}")
    for i, (name, at) in enumerate(phases):
        until = phases[i + 1][1] if i + 1 < len(phases) else total
        print(f"{name[:64]:<64} {at:8.2f} {until - at:8.2f}")
    print(f"{'(exit ' + str(child.returncode) + ', wall)':<64} {'':>8} {total:8.2f}")
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
