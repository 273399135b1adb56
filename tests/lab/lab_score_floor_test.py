"""The lab's score on the committed corpus never falls below its recorded floors.

Usage: lab_score_floor_test.py CUOVERLAP CORPUS FLOORS.json
Runs `cuoverlap lab score CORPUS --format json` and compares each finding's row with the floors:
cases equal (the corpus is fixed), within at least, false findings and missed cases at most; the
variants the manifest marks stale are the ones the score leaves out.
Where FLOORS.json has `claim_spread_at_most`, the cases of one-thread programs whose claims differ
much between the corpus's runs of one program (scripts/lab_claim_spread.py, its defaults) are at
most that many: such a program's runs differ little, so a claim that moves much between them hung
on a threshold one run's jitter crossed (docs/findings.md, forty-fourth and forty-fifth sessions).
The issue's targets themselves (90% within, ...) are not met yet; `lab score --check` says which.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from lab_claim_spread import spread_cases  # noqa: E402


def main():
    cli, corpus, floors_path = sys.argv[1:4]
    out = subprocess.run([cli, "lab", "score", corpus, "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    score = json.loads(out)
    floors = json.load(open(floors_path))
    rows = {row["key"]: row for row in score["by_finding"]}
    failures = []
    for finding, floor in floors["by_finding"].items():
        row = rows.get(finding)
        if row is None:
            failures.append(f"{finding}: no cases any more")
            continue
        if row["cases"] != floor["cases"]:
            failures.append(f"{finding}: {row['cases']} cases, the corpus has {floor['cases']}")
        if row["within"] < floor["within_at_least"]:
            failures.append(f"{finding}: {row['within']} within ±30%, floor {floor['within_at_least']}")
        if row["false_findings"] > floor["false_at_most"]:
            failures.append(f"{finding}: {row['false_findings']} false findings, at most {floor['false_at_most']}")
        if row["missed"] > floor["missed_at_most"]:
            failures.append(f"{finding}: {row['missed']} missed, at most {floor['missed_at_most']}")
    # Variants recorded before their transform changed (scripts/lab_stale.py) are left out, counted.
    with open(os.path.join(corpus, "manifest.json")) as f:
        marked = sum("stale" in v for p in json.load(f)["programs"] for v in p["variants"].values())
    if score.get("stale_variants", 0) != marked:
        failures.append(f"{score.get('stale_variants')} stale variants left out, the manifest marks {marked}")
    total_false = sum(row["false_findings"] for row in score["by_finding"])
    if total_false > floors["false_findings_at_most"]:
        failures.append(f"false findings: {total_false}, at most {floors['false_findings_at_most']}")
    if "claim_spread_at_most" in floors:
        with open(os.path.join(corpus, "manifest.json")) as f:
            shapes = {p["id"]: p.get("shape", "") for p in json.load(f)["programs"]}
        spread = spread_cases(score["cases"], shapes)
        if len(spread) > floors["claim_spread_at_most"]:
            names = ", ".join(f"{c['program']} {c['variant']}" for c in spread)
            failures.append(f"{len(spread)} one-thread cases whose claims differ much between runs, "
                            f"at most {floors['claim_spread_at_most']}: {names}")
    for failure in failures:
        print("FAIL", failure)
    within = sum(row["within"] for row in score["by_finding"])
    cases = sum(row["cases"] for row in score["by_finding"])
    print(f"{within} of {cases} cases within ±30%; {len(failures)} floor(s) broken")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
