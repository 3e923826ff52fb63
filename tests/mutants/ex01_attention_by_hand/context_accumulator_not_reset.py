"""Mutant: CONTEXT by a running total that is never reset between rows.

Q = K = [[1,0,1,0], [0,1,0,1], [1,1,1,1]], V = [[1,2,3,4], [5,6,7,8], [9,10,11,12]], d_k = 4.
Each value is written the way it is derived by hand, kept exact (no rounding).
"""

import math

E = math.e

# QKᵀ = [[2,0,2], [0,2,2], [2,2,4]] (row i, column j: q_i · k_j), divided by √d_k = 2
SCORES = [
    [1.0, 0.0, 1.0],
    [0.0, 1.0, 1.0],
    [1.0, 1.0, 2.0],
]  # (3, 3)

# softmax of each row: e^s_j / Σ_k e^s_k
WEIGHTS = [
    [E / (2 * E + 1), 1 / (2 * E + 1), E / (2 * E + 1)],  # ≈ [0.4223, 0.1554, 0.4223]
    [1 / (2 * E + 1), E / (2 * E + 1), E / (2 * E + 1)],  # ≈ [0.1554, 0.4223, 0.4223]
    [E / (2 * E + E * E), E / (2 * E + E * E), E * E / (2 * E + E * E)],  # ≈ [0.2119, 0.2119, 0.5761]
]  # (3, 3)

V = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]  # (3, 4)

# context row i = Σ_j WEIGHTS[i][j] · V[j]
CONTEXT = []
acc = [0.0] * 4
for w_row in WEIGHTS:
    for w, v_row in zip(w_row, V, strict=True):
        for col in range(4):
            acc[col] += w * v_row[col]
    CONTEXT.append(
        list(acc)
    )  # (3, 4) ≈ [[5, 6, 7, 8], [6.0678, 7.0678, 8.0678, 9.0678], [6.4567, 7.4567, 8.4567, 9.4567]]
