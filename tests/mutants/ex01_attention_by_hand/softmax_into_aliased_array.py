"""Mutant: numpy WEIGHTS = SCORES, then np.exp(W, out=W) and W /= row sums: SCORES overwritten."""

import math

Q = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 1, 1]]
K = Q
V = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
import numpy as np

SCORES = np.array(Q, dtype=float) @ np.array(K, dtype=float).T / 2
WEIGHTS = SCORES
np.exp(WEIGHTS, out=WEIGHTS)
WEIGHTS /= WEIGHTS.sum(axis=1, keepdims=True)
CONTEXT = [[sum(w * c for w, c in zip(w_row, col)) for col in zip(*V)] for w_row in WEIGHTS]
