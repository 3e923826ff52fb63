"""Mutant: each row of CONTEXT adds up the rows of V, the weights left out."""

import math

SCORES = [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 2.0]]
WEIGHTS = [[math.exp(s) / sum(math.exp(t) for t in row) for s in row] for row in SCORES]

V = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
CONTEXT = []
for w_row in WEIGHTS:
    CONTEXT.append([V[0][c] + V[1][c] + V[2][c] for c in range(4)])
