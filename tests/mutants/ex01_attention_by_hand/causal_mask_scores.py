"""Mutant: a causal (GPT-style) mask written into the scores: future positions set to -inf."""

SCORES = [
    [1.00, float("-inf"), float("-inf")],
    [0.00, 1.00, float("-inf")],
    [1.00, 1.00, 2.00],
]

WEIGHTS = [
    [1.00, 0.00, 0.00],
    [0.27, 0.73, 0.00],
    [0.21, 0.21, 0.58],
]

CONTEXT = [
    [1.00, 2.00, 3.00, 4.00],
    [3.92, 4.92, 5.92, 6.92],
    [6.48, 7.48, 8.48, 9.48],
]
