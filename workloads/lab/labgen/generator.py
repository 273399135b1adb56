"""Random programs from a seed: defects drawn, then one or more shapes in one or more host
threads, kept under a GPU-time budget; every applicable transform applied."""
import random

from .grammar.budget import estimate_us, shrink
from .grammar.builder import Builder, log_uniform
from .grammar.shapes import SHAPES
from .program import NotApplicable
from .protect import protect
from .transforms import REGISTRY, finding_for
from .validate import validate

DEFECTS = {"pageable": 0.35, "sync_launch": 0.3, "sync_copy": 0.3, "sync_memset": 0.25,
           "legacy": 0.3, "blocking": 0.5, "spurious_wait": 0.6, "split": 0.25,
           "alloc_loop": 0.4, "host_between": 0.35}
SHAPE_WEIGHTS = {"pipeline": 4, "training": 3, "chain": 3, "loader": 2, "alloc-loop": 1.5,
                 "managed": 2.5, "launch-bound": 2}
BUDGET_US = (1200.0, 15000.0)  # each program is shrunk under a log-uniform draw of its serial estimate


def program_id(seed):
    return "g%06d" % seed


def draw_program(seed):
    """(shape, program) for one seed: drawn again (same random sequence, continued) while over
    the budget's ceiling."""
    rng = random.Random(seed)
    for _ in range(20):
        shape, program = _draw(rng, seed)
        if estimate_us(program) <= BUDGET_US[1] * 1.5:
            break
    return shape, program


def _draw(rng, seed):
    defects = {k: rng.random() < p for k, p in DEFECTS.items()}
    builder = Builder(rng, program_id(seed), defects)
    names = list(SHAPE_WEIGHTS)
    weights = [SHAPE_WEIGHTS[n] for n in names]
    if rng.random() < 0.2:
        shape = "threads"
        for _ in range(rng.randint(2, 4)):
            kind = rng.choices(["pipeline", "training", "loader"], [2, 2, 1])[0]
            builder.thread(SHAPES[kind](builder))
    else:
        picked = rng.choices(names, weights, k=1 if rng.random() < 0.55 else 2)
        shape = "+".join(picked)
        steps = []
        for kind in picked:
            steps += SHAPES[kind](builder)
        builder.thread(steps)
    program = builder.program
    protect(program, set())  # a synchronous copy after a kernel of a non-blocking stream waits for it
    budget = log_uniform(rng, *BUDGET_US)
    while estimate_us(program) > budget and shrink(program):
        pass
    return shape, program


def variants(program):
    """{variant name: (variant program, finding id)} for every transform that applies: its id, and
    `ID@PLACE` for the further places of a transform that applies at several (apply_each)."""
    out = {}
    for tid, module in REGISTRY.items():
        if hasattr(module, "apply_each"):
            for k, (place, result) in enumerate(module.apply_each(program)):
                out[tid if k == 0 else "%s@%s" % (tid, place)] = (result, finding_for(tid, program))
            continue
        result = module.apply(program)
        if not isinstance(result, NotApplicable):
            out[tid] = (result, finding_for(tid, program))
    return out


def corpus_line(seed):
    shape, program = draw_program(seed)
    errors = validate(program)
    if errors:
        raise ValueError("%s: %s" % (program["id"], errors[0]))
    applied = variants(program)
    return {"id": program["id"], "seed": seed, "shape": shape,
            "variants": dict([("baseline", program)] + [(k, v[0]) for k, v in applied.items()]),
            "findings": {k: v[1] for k, v in applied.items()}}
