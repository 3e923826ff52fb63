# Exercise 1 — by hand; CONTEXT written with only its first two columns

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
    [5.00, 6.00],
    [6.04, 7.04],
    [6.48, 7.48],
]
