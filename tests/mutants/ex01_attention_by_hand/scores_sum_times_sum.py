"""Mutant: each score written sum(q) * sum(k) / 2, the product of the sums, not the dot product."""

import math

Q = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 1, 1]]
K = Q
V = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
SCORES = [[sum(q) * sum(k) / 2 for k in K] for q in Q]
WEIGHTS = []
for row in SCORES:
    exps = [math.exp(s) for s in row]
    WEIGHTS.append([e / sum(exps) for e in exps])
CONTEXT = [[sum(w * c for w, c in zip(w_row, col)) for col in zip(*V)] for w_row in WEIGHTS]
