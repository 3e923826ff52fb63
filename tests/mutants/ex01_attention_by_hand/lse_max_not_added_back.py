"""Mutant: WEIGHTS by a log-sum-exp that leaves out the max: lse = log Σ e^(s − m).

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
# softmax in the log domain, w_j = exp(s_j − logsumexp(s)), the max pulled out for stability
WEIGHTS = []
for row in SCORES:
    m = max(row)
    lse = math.log(sum(math.exp(s - m) for s in row))  # log Σ e^(s − m)
    WEIGHTS.append([math.exp(s - lse) for s in row])
# (3, 3)

V = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]  # (3, 4)

# context row i = Σ_j WEIGHTS[i][j] · V[j]
CONTEXT = [
    [sum(w * v_row[col] for w, v_row in zip(w_row, V, strict=True)) for col in range(4)] for w_row in WEIGHTS
]  # (3, 4) ≈ [[5, 6, 7, 8], [6.0678, 7.0678, 8.0678, 9.0678], [6.4567, 7.4567, 8.4567, 9.4567]]
