"""Mutant: dot products over range(len(Q)) = 3 features, not 4 (holdout10).

Q = K = [[1,0,1,0], [0,1,0,1], [1,1,1,1]], V = [[1,2,3,4], [5,6,7,8], [9,10,11,12]], d_k = 4.
Each value is written the way it is derived by hand, kept exact (no rounding).
"""

import math

E = math.e

Q = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 1, 1]]
K = Q
# q_i · k_j / √d_k, summed feature by feature
SCORES = [[sum(Q[i][f] * K[j][f] for f in range(len(Q))) / 2 for j in range(3)] for i in range(3)]  # (3, 3)

# softmax of each row: e^s_j / Σ_k e^s_k
WEIGHTS = []
for row in SCORES:
    total = sum(math.exp(s) for s in row)
    WEIGHTS.append([math.exp(s) / total for s in row])  # (3, 3)

V = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]  # (3, 4)

# context row i = Σ_j WEIGHTS[i][j] · V[j]
CONTEXT = [
    [sum(w * v_row[col] for w, v_row in zip(w_row, V, strict=True)) for col in range(4)] for w_row in WEIGHTS
]  # (3, 4) ≈ [[5, 6, 7, 8], [6.0678, 7.0678, 8.0678, 9.0678], [6.4567, 7.4567, 8.4567, 9.4567]]
