"""`python -m cuoverlap ARGS` is `cuoverlap ARGS`: the bundled command replaces this process, so
its output, exit status and signals are the command's own."""

import os
import sys

from ._command import binary


def main():
    path = binary()
    os.execv(path, [path, *sys.argv[1:]])


if __name__ == "__main__":
    main()
