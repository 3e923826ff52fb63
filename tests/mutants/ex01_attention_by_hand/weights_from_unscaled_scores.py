"""Mutant: SCORES correctly scaled, but the softmax was taken of the unscaled dot products."""

SCORES = [
    [1.00, 0.00, 1.00],
    [0.00, 1.00, 1.00],
    [1.00, 1.00, 2.00],
]

WEIGHTS = [
    [0.47, 0.06, 0.47],
    [0.06, 0.47, 0.47],
    [0.11, 0.11, 0.79],
]

CONTEXT = [
    [5.00, 6.00, 7.00, 8.00],
    [6.64, 7.64, 8.64, 9.64],
    [7.77, 8.78, 9.79, 10.80],
]
