"""The corpus lines the tests check: seeds 0-499, generated once per test run."""
from labgen.generator import corpus_line
from labgen.program import graph_body, unroll

SEEDS = range(500)
_lines = None


def lines():
    global _lines
    if _lines is None:
        _lines = [corpus_line(seed) for seed in SEEDS]
    return _lines


def executed(program):
    """Every thread's steps in execution order, graph launches expanded into their bodies."""
    out = []
    for thread in program["threads"]:
        for step in unroll(thread["steps"]):
            if step["op"] == "graph_launch":
                out += graph_body(program, step["graph"])
            else:
                out.append(step)
    return out


def work(program):
    """(kernel us x grid, bytes copied, copies, host us) over the program's execution."""
    steps = executed(program)
    return (sum(s["us"] * s["grid"] for s in steps if s["op"] == "kernel"),
            sum(s["bytes"] for s in steps if s["op"] == "copy"),
            sum(1 for s in steps if s["op"] == "copy"),
            sum(s["us"] for s in steps if s["op"] == "host"))
