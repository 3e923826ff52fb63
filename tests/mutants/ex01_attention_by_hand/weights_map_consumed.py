"""Mutant: the exponentials kept in a map() iterator: sum() uses it up, every weight row is empty."""

import math

Q = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 1, 1]]
K = Q
V = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
SCORES = [[sum(a * b for a, b in zip(q, k)) / 2 for k in K] for q in Q]
WEIGHTS = []
for row in SCORES:
    exps = map(math.exp, row)
    total = sum(exps)
    WEIGHTS.append([e / total for e in exps])
CONTEXT = [[sum(w * c for w, c in zip(w_row, col)) for col in zip(*V)] for w_row in WEIGHTS]
