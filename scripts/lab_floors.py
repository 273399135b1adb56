#!/usr/bin/env python3
"""Writes the lab score's floors (tests/lab/score_floor.json) from a score (docs/lab.md).

  cuoverlap lab score tests/data/lab --format json | scripts/lab_floors.py > tests/lab/score_floor.json
  cuoverlap lab score tests/data/lab_fresh --format json \
    | scripts/lab_floors.py --corpus tests/data/lab_fresh > tests/lab/score_floor_fresh.json

The floors are the score as it stands: per finding id its cases, within at least, false findings
and missed cases at most, all false findings at most, and the one-thread cases whose claims differ
much between runs of one program at most (`claim_spread_at_most`, scripts/lab_claim_spread.py;
read with the corpus's manifest). Raise them whenever a change raises the score; lower them only
with the reason in the commit (a corpus recorded again, say).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab_claim_spread import spread_cases  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description="Writes the lab score's floors from a score on stdin.")
    parser.add_argument("--corpus", default="tests/data/lab", help="the corpus the score is of")
    args = parser.parse_args()
    score = json.load(sys.stdin)
    floors = {
        "corpus": args.corpus,
        "note": "Floors of the lab score on the committed corpus (docs/findings.md, 'The lab's score'): "
                "a change to the rules may raise them, never lower them without a reason in its commit.",
        "by_finding": {},
    }
    for row in score["by_finding"]:
        floors["by_finding"][row["key"]] = {
            "cases": row["cases"],
            "within_at_least": row["within"],
            "false_at_most": row["false_findings"],
            "missed_at_most": row["missed"],
        }
    floors["false_findings_at_most"] = sum(row["false_findings"] for row in score["by_finding"])
    with open(os.path.join(args.corpus, "manifest.json")) as f:
        shapes = {p["id"]: p.get("shape", "") for p in json.load(f)["programs"]}
    floors["claim_spread_at_most"] = len(spread_cases(score["cases"], shapes))
    json.dump(floors, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
