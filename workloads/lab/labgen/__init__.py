"""labgen: random CUDA program descriptions (cuoverlap-lab/1) and their fix transforms.

The generator draws programs from a grammar of shapes real programs have, with injected defects;
each transform carries out the advice of one finding (docs/findings.md, "Each finding is a fix").
"""
