"""Exercise 1: attention by hand.

Read exercises/ex01_attention_by_hand/statement.en.md (or statement.zh.md) first.

Work the three steps out on paper (or with a calculator) and write your answers below, replacing
each `None`. Keep the three names. Nested lists are fine, for example

    SCORES = [[..., ..., ...],
              [..., ..., ...],
              [..., ..., ...]]

Two decimals are enough; numpy arrays and torch tensors are accepted too.

    Q = K = [[1, 0, 1, 0],        V = [[1,  2,  3,  4],        d_k = 4
             [0, 1, 0, 1],             [5,  6,  7,  8],
             [1, 1, 1, 1]]             [9, 10, 11, 12]]
"""

# Step 1: the scaled scores Q Kᵀ / √d_k, a 3 × 3 matrix (row i: query i against every key).
SCORES = None

# Step 2: the attention weights, softmax of each row of SCORES, a 3 × 3 matrix.
WEIGHTS = None

# Step 3: the context vectors WEIGHTS · V, a 3 × 4 matrix (row 0 answers the lesson's question).
CONTEXT = None
