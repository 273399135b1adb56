"""The histogram `python3 -m labgen stats` prints: shapes, transforms applied, GPU-time estimates."""
from .grammar.budget import device_bytes, estimate_us
from .transforms import REGISTRY


def print_stats(lines):
    n = len(lines)
    cases = sum(len(l["findings"]) for l in lines)
    print("programs %d, (program, transform) cases %d, %.2f per program" % (n, cases, cases / n))
    print("transform            programs  finding ids")
    for tid in REGISTRY:
        found = [l["findings"][tid] for l in lines if tid in l["findings"]]
        by = {}
        for f in found:
            by[f] = by.get(f, 0) + 1
        print("%-20s %5d     %s" % (tid, len(found), ", ".join("%s %d" % kv for kv in sorted(by.items()))))
    shapes = {}
    for l in lines:
        for s in l["shape"].split("+"):
            shapes[s] = shapes.get(s, 0) + 1
    print("shapes: " + ", ".join("%s %d" % kv for kv in sorted(shapes.items())))
    est = sorted(estimate_us(l["variants"]["baseline"]) / 1000 for l in lines)
    print("baseline estimate ms: min %.2f median %.2f p90 %.2f max %.2f; all variants %.0f ms"
          % (est[0], est[n // 2], est[int(n * 0.9)], est[-1],
             sum(estimate_us(v) for l in lines for v in l["variants"].values()) / 1000))
    mem = max(device_bytes(v) for l in lines for v in l["variants"].values())
    print("largest device+managed memory of a variant: %.1f MiB" % (mem / 2**20))
