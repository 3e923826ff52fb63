"""Mutant: the softmax step skipped: the weights are the scaled scores themselves."""

SCORES = [
    [1.00, 0.00, 1.00],
    [0.00, 1.00, 1.00],
    [1.00, 1.00, 2.00],
]

WEIGHTS = SCORES

CONTEXT = [
    [10.00, 12.00, 14.00, 16.00],
    [14.00, 16.00, 18.00, 20.00],
    [24.00, 28.00, 32.00, 36.00],
]
