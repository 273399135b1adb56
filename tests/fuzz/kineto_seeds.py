#!/usr/bin/env python3
"""Kineto (PyTorch profiler JSON) seeds for the libFuzzer target, beside the SQLite mutants.

From each trace in tests/data/kineto: the .json.gz as it is, its JSON cut to its first events
(so that the fuzzer mutates text it can still parse), and that JSON truncated; then hostile
inputs that the JSON importer must refuse in one line or read: deep nesting, huge and
non-finite numbers, duplicate keys, odd types, a gzip bomb, two gzip members, a BOM.

Usage: tests/fuzz/kineto_seeds.py DIR
"""
import glob
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KINETO = os.path.join(HERE, "..", "data", "kineto")
EVENTS_KEPT = 200


def cut(trace):
    """The trace with its first EVENTS_KEPT events and every other top-level key."""
    small = {k: v for k, v in trace.items() if k != "traceEvents"}
    small["traceEvents"] = trace.get("traceEvents", [])[:EVENTS_KEPT]
    return json.dumps(small, separators=(",", ":")).encode()


def hostile(event):
    """Inputs built around one real event."""
    e = json.dumps(event, separators=(",", ":"))
    wrap = lambda body: ('{"traceEvents":[' + body + ']}').encode()
    return {
        "nested": b'{"traceEvents":[' + b"[" * 5000 + b"]" * 5000 + b"]}",
        "nested_args": wrap(e[:-1] + ',"args":' + '{"a":' * 300 + "1" + "}" * 300 + "}"),
        "huge_numbers": wrap(e.replace('"ts":', '"ts":1e400,"x":').replace('"dur":', '"dur":99999999999999999999999,"y":')),
        "nan": wrap(e.replace('"ts":', '"ts":NaN,"z":').replace('"dur":', '"dur":-Infinity,"w":')),
        "negative": wrap(e.replace('"dur":', '"dur":-5,"v":')),
        "duplicate_keys": wrap(e[:-1] + ',"ts":1,"ts":"2","name":3,"name":null}'),
        "odd_types": wrap('{"ph":5,"name":[1],"ts":{},"dur":true,"pid":"x","tid":-1.5,"args":[]}'),
        "truncated": wrap(e)[:-7],
        "bom": b"\xef\xbb\xbf" + wrap(e),
        "strings": wrap(e.replace('"name":"', '"name":"\\u0000\\ud83d\\ude00\\u202e\\u001b]0;x\\u0007\xff')),
        "lone_surrogate": wrap(e.replace('"name":"', '"name":"\\ud800')),
    }


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    count = 0

    def write(name, data):
        nonlocal count
        with open(os.path.join(out, f"kineto_{count:03d}_{name}"), "wb") as f:
            f.write(data)
        count += 1

    example = None
    for path in sorted(glob.glob(os.path.join(KINETO, "*.json.gz"))):
        base = os.path.basename(path)[: -len(".json.gz")]
        with open(path, "rb") as f:
            write(base + ".json.gz", f.read())
        with gzip.open(path, "rb") as f:
            trace = json.load(f)
        small = cut(trace)
        write(base + ".json", small)
        write(base + "_truncated.json", small[: len(small) // 2])
        if example is None:
            example = next((ev for ev in trace.get("traceEvents", []) if ev.get("ph") == "X"), None)
    if example is None:
        sys.exit(f"no Kineto traces with complete events under {KINETO}")
    for name, data in hostile(example).items():
        write(name + ".json", data)
    # 64 MiB of spaces in 64 KiB: decompressed in chunks, never held whole.
    write("gzip_bomb.json.gz", gzip.compress(b'{"traceEvents":[' + b" " * (64 << 20) + b"]}", 9))
    write("two_members.json.gz", gzip.compress(cut(trace)[:100]) + gzip.compress(b"]}"))
    print(f"wrote {count} Kineto seeds to {out}")


if __name__ == "__main__":
    main()
