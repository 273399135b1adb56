#!/usr/bin/env python3
"""Re-annotates a lab corpus with the finding ids the current transforms name (docs/lab.md).

  lab_refind.py CORPUS

Which finding a transform's saving tests is the transform's metadata (labgen.transforms.finding_for
on the baseline program), not part of the measurement: when that mapping changes, the recorded
spans stay valid and only the corpus lines' "findings" and the manifest's per-variant "finding"
change. Prints each change; rewrites programs.jsonl.gz and manifest.json in place (through
temporary files).
"""
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads", "lab"))
from labgen.transforms import finding_for  # noqa: E402

import lab_manifest  # noqa: E402  (how a manifest is written; this script's folder is on the path)


def main():
    corpus = sys.argv[1]
    manifest_path = os.path.join(corpus, "manifest.json")
    manifest = json.load(open(manifest_path))
    lines_path = os.path.join(corpus, manifest.get("corpus", "programs.jsonl.gz"))
    findings = {}
    out = []
    with gzip.open(lines_path, "rt") as f:
        for text in f:
            line = json.loads(text)
            for tid in line["findings"]:
                now = finding_for(tid, line["variants"]["baseline"])
                if now != line["findings"][tid]:
                    print(f"{line['id']} {tid}: {line['findings'][tid]} -> {now}")
                    line["findings"][tid] = now
            findings[line["id"]] = line["findings"]
            out.append(json.dumps(line, separators=(",", ":")) + "\n")
    with gzip.open(lines_path + ".tmp", "wt") as f:
        f.writelines(out)
    os.replace(lines_path + ".tmp", lines_path)
    for program in manifest["programs"]:
        for tid, variant in program["variants"].items():
            if tid in findings.get(program["id"], {}):
                variant["finding"] = findings[program["id"]][tid]
    with open(manifest_path + ".tmp", "w") as f:
        lab_manifest.dump(manifest, f)
    os.replace(manifest_path + ".tmp", manifest_path)


if __name__ == "__main__":
    main()
