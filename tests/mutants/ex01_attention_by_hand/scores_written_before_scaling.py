# Exercise 1 — the raw dot products written as SCORES; the 1/2 applied only inside the softmax

SCORES = [
    [2.00, 0.00, 2.00],
    [0.00, 2.00, 2.00],
    [2.00, 2.00, 4.00],
]

WEIGHTS = [
    [0.42, 0.16, 0.42],
    [0.16, 0.42, 0.42],
    [0.21, 0.21, 0.58],
]

CONTEXT = [
    [5.00, 6.00, 7.00, 8.00],
    [6.04, 7.04, 8.04, 9.04],
    [6.48, 7.48, 8.48, 9.48],
]
