"""Mutant: CONTEXT built with numpy, V's columns rolled by one (np.roll(V, -1, axis=1))."""

import numpy as np

SCORES = [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 2.0]]

exps = np.exp(np.array(SCORES))
WEIGHTS = (exps / exps.sum(axis=1, keepdims=True)).tolist()

V = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
CONTEXT = (np.array(WEIGHTS) @ np.roll(np.array(V, dtype=float), -1, axis=1)).tolist()
