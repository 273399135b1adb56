#!/usr/bin/env python3
"""Do a kernel's GPU metrics alone predict how much longer it runs beside others?

Usage: scripts/lab_gpu_metrics_study.py VARIANTS_DIR
VARIANTS_DIR: variant traces recorded with GPU metrics (GPU_METRICS=100 VARIANT_TRACES=1
scripts/lab_record.sh; docs/lab.md, "Thirty-eighth session"). Every kernel of every fixed run is
matched to its baseline kernel (threads by the multiset of kernel shapes each launched, then
kernels by launch order within a thread and shape, as helper h4 did in the thirty-seventh session);
each baseline kernel that ran alone gets its samples' traffic as the analyzer attributes it (a
sample's amount split by the ops' shares of its busy time: docs/metrics.md, "GPU metrics"). Prints,
for kernels alone in the baseline (<2% overlapped) and beside others in a fixed run (>=5%) whose
blocks all fit (occupancy < 0.5), the fixed/alone duration ratio by the L2 traffic per launch of
the kernel and its partners (docs/findings.md, "Thirty-eighth session"). Diagnosis only."""
import bisect, collections, json, math, sqlite3, sys

SMS = 132  # H100 SXM


def slots_per_sm(threads, regs, smem):
    b = min(32, 2048 // max(threads, 1))
    if regs:
        per_warp = ((regs * 32 + 255) // 256) * 256
        b = min(b, 65536 // (per_warp * ((threads + 31) // 32)))
    if smem:
        b = min(b, (228 * 1024) // (smem + 1024))
    return max(b, 1)


def kernels(db, lo, hi):
    rows = db.execute("SELECT k.start, k.end, k.streamId, gridX*gridY*gridZ, blockX*blockY*blockZ, registersPerThread, "
                      "staticSharedMemory+dynamicSharedMemory, r.globalTid, k.correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                      "LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
                      "WHERE k.start >= ? AND k.start < ? ORDER BY k.start", (lo, hi)).fetchall()
    return [tuple(r[:8]) + (r[8] or 0,) for r in rows]


def thread_map(base, fixed):
    def shapes(ks):
        d = collections.defaultdict(collections.Counter)
        for k in ks:
            d[k[7]][(k[3], k[4])] += 1
        return d
    sb, sf = shapes(base), shapes(fixed)
    pairs = sorted(((sum((cf & cb).values()) / sum((cf | cb).values()), tf, tb)
                    for tf, cf in sf.items() for tb, cb in sb.items()), reverse=True)
    m, used = {}, set()
    for _, tf, tb in pairs:
        if tf not in m and tb not in used:
            m[tf] = tb
            used.add(tb)
    return m


def overlapped(ks):
    """Per kernel: the share of its time another kernel of the list ran (a sweep by start)."""
    out = []
    for i, k in enumerate(ks):
        s, e = k[0], k[1]
        ivs = sorted((max(o[0], s), min(o[1], e)) for j, o in enumerate(ks) if j != i and o[1] > s and o[0] < e)
        tot, cs, ce = 0, None, None
        for a, b in ivs:
            if ce is None or a > ce:
                tot += (ce - cs) if ce is not None else 0
                cs, ce = a, b
            else:
                ce = max(ce, b)
        tot += (ce - cs) if ce is not None else 0
        out.append(tot / max(e - s, 1))
    return out


def match(base, fixed):
    by = collections.defaultdict(list)
    for j, k in sorted(enumerate(fixed), key=lambda x: (x[1][8], x[1][0])):
        by[(k[7], k[3], k[4])].append(j)
    ptr, res = collections.defaultdict(int), [None] * len(base)
    for i, k in sorted(enumerate(base), key=lambda x: (x[1][8], x[1][0])):
        key = (k[7], k[3], k[4])
        if ptr[key] < len(by[key]):
            res[i] = by[key][ptr[key]]
            ptr[key] += 1
    return res


def alone_traffic(db):
    """(start -> {metric: amount}) for every kernel alone on the device, as the analyzer attributes it."""
    names = dict(((t, m), n) for t, m, n in db.execute("SELECT typeId, metricId, metricName FROM TARGET_INFO_GPU_METRICS"))
    series = collections.defaultdict(lambda: ([], []))
    for ts, t, m, v in db.execute("SELECT timestamp, typeId, metricId, value FROM GPU_METRICS ORDER BY timestamp"):
        if (t, m) in names:
            series[names[(t, m)]][0].append(ts)
            series[names[(t, m)]][1].append(v)
    ops = db.execute("SELECT start, end, 1 FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL SELECT start, end, 0 FROM "
                     "CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT start, end, 0 FROM CUPTI_ACTIVITY_KIND_MEMSET ORDER BY 1").fetchall()
    reach, r = [], 0
    for o in ops:
        r = max(r, o[1])
        reach.append(r)
    out = {}
    for k, o in enumerate(ops):
        if not o[2] or not ((k == 0 or reach[k - 1] <= o[0]) and (k + 1 >= len(ops) or ops[k + 1][0] >= o[1])):
            continue
        vals = {}
        for name, (times, vv) in series.items():
            i, amount, cov = max(0, bisect.bisect_right(times, o[0]) - 1), 0.0, 0
            while i < len(times) and times[i] < o[1]:
                a = times[i]
                b = min(times[i + 1] if i + 1 < len(times) else a + 100000, a + 150000)
                own = max(0, min(o[1], b) - max(o[0], a))
                if own > 0:
                    busy, j = own, k - 1
                    while j >= 0 and reach[j] > a:
                        busy += max(0, min(ops[j][1], b) - max(ops[j][0], a))
                        j -= 1
                    j = k + 1
                    while j < len(ops) and ops[j][0] < b:
                        busy += max(0, min(ops[j][1], b) - max(ops[j][0], a))
                        j += 1
                    amount += (vv[i] if name.endswith("[bytes]") else vv[i] * (b - a)) * own / busy
                    cov += own
                i += 1
            if cov:
                vals[name] = amount
        out[o[0]] = vals
    return out


def main():
    d = sys.argv[1]
    index = json.load(open(f"{d}/index.json"))
    rows = []
    traffic = {}
    for prog, info in sorted(index.items()):
        db = sqlite3.connect(f"{d}/{info['trace']}")
        if info["trace"] not in traffic:
            traffic[info["trace"]] = alone_traffic(db)
        metrics = traffic[info["trace"]]
        runs = info["runs"]
        base = kernels(db, *runs["baseline"]["window_ns"])
        base_ov = overlapped(base)
        for var, run in runs.items():
            if var == "baseline":
                continue
            fixed = kernels(db, *run["window_ns"])
            tm = thread_map(base, fixed)
            fixed = [k[:7] + (tm.get(k[7], -1), k[8]) for k in fixed]
            fixed_ov = overlapped(fixed)
            m = match(base, fixed)
            inv = {j: i for i, j in enumerate(m) if j is not None}
            for i, j in enumerate(m):
                if j is None or base_ov[i] >= 0.02 or fixed_ov[j] < 0.05 or base[i][0] not in metrics:
                    continue
                f, b = fixed[j], base[i]
                cap = slots_per_sm(f[4], f[5], f[6]) * SMS
                dur = f[1] - f[0]
                occ, partners = min(f[3], cap), 0.0
                for jj, o in enumerate(fixed):
                    if jj == j or o[1] <= f[0] or o[0] >= f[1]:
                        continue
                    share = (min(o[1], f[1]) - max(o[0], f[0])) / max(1, dur)
                    occ += min(o[3], cap) * share
                    pb = base[inv[jj]][0] if jj in inv else None
                    if pb in metrics:
                        partners += metrics[pb].get("L2 Traffic [bytes]", 0) * min(1.0, (min(o[1], f[1]) - max(o[0], f[0])) / max(1, o[1] - o[0]))
                if occ / cap >= 0.5:
                    continue
                rows.append((metrics[b[0]].get("L2 Traffic [bytes]", 0) + partners, dur / max(1, b[1] - b[0]), dur - (b[1] - b[0]), prog))
        db.close()
    print(f"{len(rows)} kernels alone in their baseline, beside others in a fixed run, blocks fitting")
    print("own + partners' L2 traffic per launch | kernels | median fixed/alone | q90 | extra ms")
    for lo, hi in [(0, 25), (25, 50), (50, 100), (100, 250), (250, 1e9)]:
        v = sorted(r[1] for r in rows if lo * 1e6 <= r[0] < hi * 1e6)
        if v:
            extra = sum(r[2] for r in rows if lo * 1e6 <= r[0] < hi * 1e6) / 1e6
            print(f"{lo:>5g}-{hi:<5g} MB | {len(v)} | {v[len(v) // 2]:.3f} | {v[min(len(v) - 1, int(0.9 * len(v)))]:.2f} | {extra:.1f}")


if __name__ == "__main__":
    main()
