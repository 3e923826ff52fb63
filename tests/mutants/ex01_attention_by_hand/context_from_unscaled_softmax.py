# Exercise 1 — WEIGHTS right, CONTEXT from the softmax of the raw dot products

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

CONTEXT = [
    [5.00, 6.00, 7.00, 8.00],
    [6.62, 7.62, 8.62, 9.62],
    [7.72, 8.72, 9.72, 10.72],
]
