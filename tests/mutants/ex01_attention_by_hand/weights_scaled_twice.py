# Exercise 1 — SCORES already divided by 2, then the softmax taken of SCORES / 2 once more

SCORES = [
    [1.00, 0.00, 1.00],
    [0.00, 1.00, 1.00],
    [1.00, 1.00, 2.00],
]

WEIGHTS = [
    [0.38, 0.23, 0.38],
    [0.23, 0.38, 0.38],
    [0.27, 0.27, 0.45],
]

CONTEXT = [
    [4.95, 5.94, 6.93, 7.92],
    [5.55, 6.54, 7.53, 8.52],
    [5.67, 6.66, 7.65, 8.64],
]
