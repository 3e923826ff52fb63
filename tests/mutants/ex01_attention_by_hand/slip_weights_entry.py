"""Mutant: one weight miscopied (0.58 written as 0.85); the context is computed from the miscopied weights."""

SCORES = [
    [1.00, 0.00, 1.00],
    [0.00, 1.00, 1.00],
    [1.00, 1.00, 2.00],
]

WEIGHTS = [
    [0.42, 0.16, 0.42],
    [0.16, 0.42, 0.42],
    [0.21, 0.21, 0.85],
]

CONTEXT = [
    [5.00, 6.00, 7.00, 8.00],
    [6.04, 7.04, 8.04, 9.04],
    [8.91, 10.18, 11.45, 12.72],
]
