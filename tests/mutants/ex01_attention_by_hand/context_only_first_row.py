"""Mutant: CONTEXT given only for the first token, as a single vector."""

SCORES = [
    [1.00, 0.00, 1.00],
    [0.00, 1.00, 1.00],
    [1.00, 1.00, 2.00],
]

WEIGHTS = [
    [0.42, 0.16, 0.42],
    [0.16, 0.42, 0.42],
    [0.21, 0.21, 0.58],
]

CONTEXT = [5.00, 6.00, 7.00, 8.00]
