"""How the lab's scripts write a corpus manifest (and the variant traces' index): indented JSON,
with every list of numbers (run spans, windows, reps) on one line. The committed corpora's
manifests are most of their size, and a number a line had made them 1.6x larger; any JSON reader
reads both forms.

  dump(value, f)   writes value to the open text file f, ending with a newline
"""
import json
import re

# A JSON list holding numbers only: what json.dumps(indent=1) spreads over one line per number.
NUMBER_LIST = re.compile(r"\[\s*(-?\d[-\d.eE+,\s]*?)\s*\]")


def dump(value, f):
    text = json.dumps(value, indent=1)
    f.write(NUMBER_LIST.sub(lambda m: "[" + ", ".join(n.strip() for n in m.group(1).split(",")) + "]", text))
    f.write("\n")
