#!/usr/bin/env python3
"""lab_show.py ID [--json] [--program] [--corpus DIR] [--window K]: analyze one lab program's kept
baseline window (with --window, its K-th scored window: a case's claims_ns are the windows' claims
in this order) and print its variants' savings. Run from a checkout root with build/cli/cuoverlap built. --corpus:
another recording of a corpus (its manifest.json and traces; default tests/data/lab), e.g. the
replica /work/rp21/rp_corpus/corpus."""
import json, subprocess, sys, gzip, os, statistics
root = os.getcwd()
corpus = os.path.join(root, 'tests/data/lab')
if '--corpus' in sys.argv:
    corpus = sys.argv[sys.argv.index('--corpus') + 1]
pid = sys.argv[1]
m = json.load(open(os.path.join(corpus, 'manifest.json')))
p = next(x for x in m['programs'] if x['id'] == pid)
w = p['baseline']['window_ns']
if '--window' in sys.argv:
    windows = p['baseline'].get('windows_ns', [w])
    k = int(sys.argv[sys.argv.index('--window') + 1])
    if not 0 <= k < len(windows):
        sys.exit(f"lab_show: {pid} has {len(windows)} scored window(s), not {k}")
    w = windows[k]
print(f"{pid} shape={p['shape']} trace={p['trace']} baseline median {p['baseline']['median_ns']/1e6:.3f} ms")
for t, v in p['variants'].items():
    s = v['spans_ns']
    b = v.get('baseline_spans_ns', p['baseline']['spans_ns'])  # a re-recorded variant's own baseline runs
    if len(s) == len(b):
        diffs = sorted(x - y for x, y in zip(b, s))
        sav = statistics.median(diffs)
    else:
        sav = statistics.median(b) - v['median_ns']
    print(f"  {t:22s} finding={v['finding']!s:28s} saved {sav/1e6:8.3f} ms")
if '--program' in sys.argv:
    with gzip.open(os.path.join(corpus, 'programs.jsonl.gz'), 'rt') as f:
        for line in f:
            d = json.loads(line)
            if d.get('id') == pid:
                print(json.dumps(d.get("program", d), indent=1))
fmt = ['--format', 'json'] if '--json' in sys.argv else []
subprocess.run([os.environ.get('CUOVERLAP', os.path.join(root, 'build/cli/cuoverlap')), 'analyze', os.path.join(corpus, p['trace']),
                '--window', f'{w[0]}:{w[1]}'] + fmt)
