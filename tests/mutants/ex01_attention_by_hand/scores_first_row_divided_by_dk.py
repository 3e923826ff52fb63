"""Mutant: the first row of SCORES divided by d_k = 4 instead of √d_k; the rest follows from it."""

import math

QKT = [[2.0, 0.0, 2.0], [0.0, 2.0, 2.0], [2.0, 2.0, 4.0]]
SCORES = [[s / 4 for s in QKT[0]], [s / 2 for s in QKT[1]], [s / 2 for s in QKT[2]]]

WEIGHTS = []
for row in SCORES:
    exps = [math.exp(s) for s in row]
    WEIGHTS.append([e / sum(exps) for e in exps])

V = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
CONTEXT = [[sum(w * V[j][c] for j, w in enumerate(row)) for c in range(4)] for row in WEIGHTS]
