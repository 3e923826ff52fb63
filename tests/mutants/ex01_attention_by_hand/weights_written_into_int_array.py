"""Mutant: WEIGHTS filled into np.zeros((3, 3), dtype=int): every weight cut down to 0."""

import math

Q = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 1, 1]]
K = Q
V = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
import numpy as np

SCORES = [[sum(a * b for a, b in zip(q, k)) / 2 for k in K] for q in Q]
WEIGHTS = np.zeros((3, 3), dtype=int)
for i, row in enumerate(SCORES):
    exps = [math.exp(s) for s in row]
    for j, e in enumerate(exps):
        WEIGHTS[i, j] = e / sum(exps)
CONTEXT = [[sum(float(w) * c for w, c in zip(w_row, col)) for col in zip(*V)] for w_row in WEIGHTS]
