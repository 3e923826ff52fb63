"""Mutant: a def per row made in a loop, reading the loop variable when called: every row the last one's."""

import math

Q = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 1, 1]]
K = Q
V = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
SCORES = [[sum(a * b for a, b in zip(q, k)) / 2 for k in K] for q in Q]
rows = []
for scores_row in SCORES:
    def softmax_row():
        exps = [math.exp(s) for s in scores_row]
        return [e / sum(exps) for e in exps]
    rows.append(softmax_row)
WEIGHTS = [f() for f in rows]
CONTEXT = [[sum(w * c for w, c in zip(w_row, col)) for col in zip(*V)] for w_row in WEIGHTS]
