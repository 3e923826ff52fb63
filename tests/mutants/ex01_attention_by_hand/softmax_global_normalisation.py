"""Mutant: exp of every score divided by the sum over the whole 3×3 matrix (np.exp(S) / np.exp(S).sum())."""

SCORES = [
    [1.00, 0.00, 1.00],
    [0.00, 1.00, 1.00],
    [1.00, 1.00, 2.00],
]

WEIGHTS = [
    [0.11, 0.04, 0.11],
    [0.04, 0.11, 0.11],
    [0.11, 0.11, 0.29],
]

CONTEXT = [
    [1.30, 1.56, 1.82, 2.08],
    [1.58, 1.84, 2.10, 2.36],
    [3.27, 3.78, 4.29, 4.80],
]
