#!/usr/bin/env python3
"""lab_compress.py CORPUS_DIR: store a lab corpus's traces gzip-compressed, in place (docs/lab.md).

Each plain trace the manifest names (BATCH.sqlite) becomes BATCH.sqlite.gz (scripts/lab_trace.py:
a quarter of the size; `cuoverlap lab score` and the lab scripts read either), the manifest names
the new files (written atomically, after them), and the plain files are removed. A corpus already
compressed is left as it is.
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab_manifest  # noqa: E402
import lab_trace  # noqa: E402


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__.strip().splitlines()[0])
    corpus = argv[1]
    path = os.path.join(corpus, "manifest.json")
    with open(path) as f:
        manifest = json.load(f)
    renamed = {}
    for program in manifest["programs"]:
        trace = program["trace"]
        if lab_trace.compressed(trace):
            continue
        if trace not in renamed:
            renamed[trace] = trace + ".gz"
            lab_trace.write_compressed(os.path.join(corpus, trace), os.path.join(corpus, renamed[trace]))
        program["trace"] = renamed[trace]
    for entry in manifest.get("replaced", []):
        entry["trace"] = renamed.get(entry.get("trace"), entry.get("trace"))
    fd, tmp = tempfile.mkstemp(dir=corpus, prefix=".manifest.", suffix=".json")
    with os.fdopen(fd, "w") as f:
        lab_manifest.dump(manifest, f)
    os.replace(tmp, path)
    for trace in renamed:
        os.remove(os.path.join(corpus, trace))
    print(f"lab_compress: {len(renamed)} traces of {corpus} compressed")


if __name__ == "__main__":
    try:
        main(sys.argv)
    except (OSError, ValueError, KeyError) as error:
        sys.exit(f"lab_compress: {type(error).__name__}: {error}")
