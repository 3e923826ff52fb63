"""Exercise 1: attention by hand."""

# Q K^T = [[2,0,2],[0,2,2],[2,2,4]], divided by sqrt(4) = 2
SCORES = [[1, 0, 1],
          [0, 1, 1],
          [1, 1, 2]]

# softmax of every row, written as percentages (%)
WEIGHTS = [[42.23, 15.54, 42.23],
           [15.54, 42.23, 42.23],
           [21.19, 21.19, 57.61]]

# weighted sum of the rows of V
CONTEXT = [[5.00, 6.00, 7.00, 8.00],
           [6.07, 7.07, 8.07, 9.07],
           [6.46, 7.46, 8.46, 9.46]]
