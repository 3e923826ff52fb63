"""Checks for exercise 1: attention worked out by hand on the lesson's three tokens.

The answers are three constants (lists, tuples, numpy arrays or tensors). Answers worked out by hand
and rounded to two decimals earn full marks: scores and weights are compared with an absolute
tolerance of 0.006, context vectors (entries near 10) with 0.01, and a context computed from the
student's own rounded weights is accepted as well as one computed from the exact weights.

Each step is graded on the student's own answer to the step before (error carried forward):
WEIGHTS against the softmax of the student's SCORES, CONTEXT against the student's WEIGHTS times V;
the hidden checks grade SCORES itself, in two halves: the dot products (whatever the scale) and the
scale (read off the student's numbers). So a missing 1/√d_k costs the scale's points and nothing
else. The answer is the answer: no message shows an expected number, only which entries are wrong
and how they relate to the student's own answers.
"""

import math

import torch

from graders import attention as A
from graders.harness import Text, check
from graders.harness.core import expect
from graders.harness.core.errors import StudentFault, StudentNotImplemented
from graders.harness.core.i18n import say

Q = torch.tensor([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 1, 1]], dtype=torch.float64)  # (3, 4)
K = Q
V = torch.arange(1, 13, dtype=torch.float64).reshape(3, 4)  # (3, 4)
D_K = 4
KEY_SUBSETS = [[0], [1], [2], [0, 1], [0, 2], [1, 2]]  # a weighted sum that leaves keys out
SHAPES = {"SCORES": (3, 3), "WEIGHTS": (3, 3), "CONTEXT": (3, 4)}
CONTEXT_SHAPES = {
    "context_one_row": [(4,), (1, 4)],
    "context_transposed": (4, 3),
    "context_columns_missing": [(3, 1), (3, 2), (3, 3)],  # a loop over columns that stops early
}
SCORES_SHAPES = {"scores_transposed_product": (4, 4)}  # QᵀK instead of QKᵀ
ATOL = 0.006  # two-decimal rounding of scores and weights
CONTEXT_ATOL = 0.01  # two-decimal rounding of context entries near 10
ROW_SUM_ATOL = 0.016  # three weights, each rounded to two decimals

RAW = Q @ K.T  # (3, 3) unscaled dot products
# (Σ of q_i's entries)·(Σ of k_j's entries): every entry of q times every entry of k, as two nested
# loops `sum(a * b for a in q for b in k)` or sum(q) * sum(k) compute it, instead of matching pairs
SUM_PRODUCTS = Q.sum(-1, keepdim=True) @ K.sum(-1, keepdim=True).T
# a row of a table left empty: built from a generator or iterator a first pass had used up
EMPTY_ROWS = {"iterator_used_twice": [(3, 0), (0,)]}
# the dot products over 3 of the 4 features: a loop over range(len(Q)) (the 3 tokens) or range(1, d_k)
SHORT_PRODUCTS = [Q[:, :3] @ K[:, :3].T, Q[:, 1:] @ K[:, 1:].T]
WEIGHT_VARIANTS = {
    "no_scaling": torch.softmax(RAW, dim=-1),
    "divide_by_dk": torch.softmax(RAW / D_K, dim=-1),
    "softmax_wrong_axis": A.attention(Q, K, V, softmax_dim=-2)[1],
    "scale_after_softmax": torch.softmax(RAW, dim=-1) / D_K**0.5,
    "no_exp": RAW / RAW.sum(-1, keepdim=True),
    "no_softmax": RAW / D_K**0.5,
    "exp_divided_by_count": torch.exp(RAW / D_K**0.5) / RAW.shape[-1],
    # Σ exp(s) written as exp(Σ s)
    "exp_of_sum_denominator": torch.exp(RAW / D_K**0.5) / torch.exp((RAW / D_K**0.5).sum(-1, keepdim=True)),
    # the row's max taken out of the denominator only (a log-sum-exp without the max added back)
    "accumulator_not_reset": torch.exp(RAW / D_K**0.5)
    / torch.exp(RAW / D_K**0.5).sum(-1, keepdim=True).cumsum(0),
    "max_shift_in_denominator_only": torch.softmax(RAW / D_K**0.5, dim=-1)
    * torch.exp((RAW / D_K**0.5).amax(-1, keepdim=True)),
}

ROWS_TEXT = Text(
    zh="WEIGHTS 的每一行应非负且和为 1（允许 ±{atol} 的四舍五入误差）；"
    "你的行和为 {sums}，最小元素为 {low:.4g}。",
    en="Each row of WEIGHTS should be non-negative and sum to 1 (±{atol} for rounding); "
    "your row sums are {sums} and the smallest entry is {low:.4g}.",
)
SOFTMAX_HINT = Text(
    zh="WEIGHTS 的每一行应是你的 SCORES 同一行的 softmax：exp(s_j) 除以该行所有 exp(s_k) 之和。",
    en="Each row of WEIGHTS should be the softmax of the same row of your SCORES: exp(s_j) divided by"
    " the sum of exp(s_k) over that row.",
)
CONTEXT_HINT = Text(
    zh="CONTEXT 的第 i 行应是 V 的三行按你的 WEIGHTS 第 i 行加权求和。",
    en="Row i of CONTEXT should be the rows of V weighted by row i of your WEIGHTS and added up.",
)
NOT_DOT_PRODUCTS_TEXT = Text(
    zh="SCORES 中有 {count} 个元素不是 q_i·k_j 乘以同一个系数（其余元素一致认可的系数是 {factor:.4g}）：{entries}。",
    en="{count} entries of SCORES are not q_i·k_j times the factor the other entries agree on ({factor:.4g}):"
    " {entries}.",
)
NOT_TIMES_V_TEXT = Text(
    zh="你的 WEIGHTS 形状为 {shape}，无法与 V（3×4）相乘：每一行要对 V 的 3 行加权。",
    en="Your WEIGHTS, of shape {shape}, cannot multiply V (3×4): each row weighs the 3 rows of V.",
)
NO_FACTOR_TEXT = Text(
    zh="从你的 SCORES 中读不出统一的缩放系数：它们不是点积 q_i·k_j 乘以同一个数。",
    en="No common factor can be read off your SCORES: they are not the dot products q_i·k_j times one number.",
)
ROWS_SCALE_TEXT = Text(
    zh="你的 SCORES 每一行都是点积 q_i·k_j 乘以一个数，但各行乘的数不同：第 {rows} 行（从 0 数起）乘的是 {got}，与其他行不同。",
    en="Each row of your SCORES is the dot products q_i·k_j times a number, but not the same number: row {rows} (counting from 0) is times {got}, unlike the others.",
)
NOT_PAIRS_TEXT = Text(
    zh="你的 SCORES 的每个元素都是 (q_i 各元素之和)·(k_j 各元素之和) 乘以同一个数，而不是点积 q_i·k_j。",
    en="Every entry of your SCORES is (the sum of q_i's entries)·(the sum of k_j's entries) times one"
    " number, not the dot product q_i·k_j.",
)
SCALE_TEXT = Text(
    zh="你的 SCORES 是点积 q_i·k_j 乘以 {factor}；缩放应为 1/√d_k。",
    en="Your SCORES are the dot products q_i·k_j times {factor}; the scale should be 1/√d_k.",
)


def answer(student, name: str, *, as_meant: bool = False) -> torch.Tensor:
    """The student's constant `name` as a float64 tensor of the exact expected shape, or with
    `as_meant` any 2-D table: how the answers agree with each other is judged on the tables the
    student wrote, whatever their shape (`answer_shapes` charges a shape)."""
    value = getattr(student, name)
    if value is None:
        raise StudentNotImplemented(say("check.not_implemented", name=name))
    if isinstance(value, torch.Tensor) and value.dtype in (torch.int8, torch.int16, torch.int32, torch.int64):
        value = value.double()  # whole numbers such as the scores may come as an integer tensor
    wrong_shapes = {"CONTEXT": {**CONTEXT_SHAPES, **EMPTY_ROWS}, "SCORES": {**SCORES_SHAPES, **EMPTY_ROWS},
                    "WEIGHTS": EMPTY_ROWS}.get(name, {})  # fmt: skip
    if as_meant:
        table = expect.tensor(value, name, convert=True, finite=False).detach().double()
        if table.dim() != 2:  # not a table: say how it differs from the one asked for
            expect.tensor(table, name, SHAPES[name], shape_variants=wrong_shapes, finite=False)
        return table
    return expect.tensor(value, name, SHAPES[name], convert=True, finite=False,
                         shape_variants=wrong_shapes).detach().double()  # fmt: skip


def common_factor(
    scores: torch.Tensor, raw: torch.Tensor = RAW
) -> tuple[tuple[float, float] | None, torch.Tensor]:
    """The range of factors c with SCORES ≈ c · QKᵀ (each entry within rounding) that most entries
    agree on, and the entries that do not agree.

    Each entry with q_i·k_j ≠ 0 allows c in [(s - ATOL) / (q_i·k_j), (s + ATOL) / (q_i·k_j)]; the
    range shared by the most entries wins (a slip in one or two entries does not move it); entries
    with q_i·k_j = 0 must be 0. None when fewer than five of the seven nonzero entries agree.
    """
    if scores.shape != raw.shape:
        return None, torch.ones(scores.shape, dtype=torch.bool)
    nonzero = raw != 0
    ends = ((scores - ATOL) / raw)[nonzero], ((scores + ATOL) / raw)[nonzero]  # swapped where raw < 0
    lows, highs = torch.minimum(*ends).tolist(), torch.maximum(*ends).tolist()
    best: tuple[int, float, float] = (0, 0.0, 0.0)
    for c in lows:  # the best range starts where some entry's range starts
        agree = [(lo, hi) for lo, hi in zip(lows, highs, strict=True) if lo <= c + 1e-12 and c <= hi + 1e-12]
        if len(agree) > best[0]:
            best = (len(agree), max(lo for lo, _ in agree), min(hi for _, hi in agree))
    count, low, high = best
    if low <= 0 <= high:  # "times 0" is no factor: zeros where the products are not zero
        count = 0
    factor = (low + high) / 2
    off = torch.where(nonzero, (scores - factor * raw).abs() > ATOL + (high - low) / 2 * raw.abs(),
                      scores.abs() > ATOL)  # fmt: skip
    return ((low, high) if count >= int(nonzero.sum()) - 2 else None), off


def row_factors(scores: torch.Tensor, raw: torch.Tensor = RAW) -> list[tuple[float, float]] | None:
    """The range of factors c_i with row i of SCORES ≈ c_i · (row i of QKᵀ), one per row (every
    entry of the row within rounding, zeros where the products are zero); None when some row has
    no such factor (or only 0). Each row the dot products times a number of its own."""
    if scores.shape != raw.shape:
        return None
    out = []
    for row, products in zip(scores, raw, strict=True):
        nonzero = products != 0
        if not bool(nonzero.any()) or bool((row[~nonzero].abs() > ATOL).any()):
            return None
        ends = (row - ATOL)[nonzero] / products[nonzero], (row + ATOL)[nonzero] / products[nonzero]
        low, high = float(torch.minimum(*ends).max()), float(torch.maximum(*ends).min())
        if low > high or low <= 0 <= high:
            return None
        out.append((low, high))
    return out


def uneven_rows(scores: torch.Tensor) -> list[tuple[float, float]] | None:
    """`row_factors` when every row has a factor of its own and no one factor fits them all (a row
    scaled unlike the others), else None."""
    rows = row_factors(scores)
    if rows is None or max(low for low, _ in rows) <= min(high for _, high in rows):
        return None
    return rows


def weights_if_given(student) -> torch.Tensor | None:
    """The student's WEIGHTS as a table, or None when there is none to read (a check of SCORES
    does not depend on them: they only help name a mistake)."""
    try:
        return answer(student, "WEIGHTS", as_meant=True)
    except StudentFault:
        return None


def scores_are_weights(scores: torch.Tensor, weights: torch.Tensor | None) -> bool:
    """SCORES hold exactly the numbers of WEIGHTS, rows of a softmax (non-negative, summing to 1):
    `WEIGHTS = SCORES` names one list twice, so a softmax written into WEIGHTS in place overwrote
    SCORES as well."""
    if weights is None or weights.shape != scores.shape or not bool(torch.isfinite(scores).all()):
        return False
    sums = weights.sum(-1)
    return (
        bool((weights >= -ATOL).all())
        and torch.allclose(sums, torch.ones_like(sums), atol=ROW_SUM_ATOL)
        and expect.largest_difference(scores, weights) <= 1e-9
    )


def centred(m: torch.Tensor) -> torch.Tensor:
    """Each row minus its mean: what the softmax sees of a row (it ignores a constant added to it)."""
    return m - m.mean(-1, keepdim=True)


def rows_reordered(expected: torch.Tensor, name: str, atol: float):
    """An estimator naming rows that are right but in another order (row i belongs to token i)."""

    def estimate(got: torch.Tensor):
        if got.shape != expected.shape:
            return None
        order = []
        for row in got:
            hits = [i for i, want in enumerate(expected) if torch.allclose(row, want, rtol=0, atol=atol)]
            if not hits:
                return None
            order.append(hits[0])
        is_permutation = sorted(order) == list(range(len(order)))
        return ("rows_reordered", {"name": name}) if is_permutation and order != sorted(order) else None

    return estimate


def sorted_rows_factor(scores: torch.Tensor) -> list[tuple[float, float]]:
    """[the factor range] where each row of SCORES, sorted, is the same row of c · QKᵀ sorted for
    one c > 0 with every entry fitting (the right numbers in another order within rows), else []."""
    if scores.shape != RAW.shape:
        return []
    found, off = common_factor(scores.sort(-1).values, RAW.sort(-1).values)
    return [found] if found is not None and not bool(off.any()) and found[0] > 0 else []


def reordered_rows(got: torch.Tensor, expected: torch.Tensor, off: torch.Tensor) -> str:
    """The rows (as "0, 2") holding the wrong entries `off`, where each of them holds its right
    numbers in another order (a row sorted in place, say); "" where some wrong row does not."""
    wrong = [i for i in range(got.shape[0]) if bool(off[i].any())]
    for i in wrong:
        mine, right = got[i].sort().values, expected[i].sort().values
        if not torch.allclose(mine, right, rtol=0, atol=ATOL):
            return ""
    return ", ".join(str(i) for i in wrong)


def softmax_base(scores: torch.Tensor):
    """An estimator naming weights that are b^SCORES normalised per row with b ≠ e (e taken as 3,
    2^s, e^(−s), …): the base is read off the weights by least squares on their logarithms."""

    def estimate(got: torch.Tensor):
        if got.shape != scores.shape or not bool((got > 0).all()) or not bool(torch.isfinite(scores).all()):
            return None
        rows = got.sum(-1)
        if not torch.allclose(rows, torch.ones_like(rows), atol=ROW_SUM_ATOL):
            return None
        y = torch.log(got) - torch.log(got).mean(-1, keepdim=True)
        x = scores - scores.mean(-1, keepdim=True)
        if float((x * x).sum()) < 1e-9:
            return None
        slope = float((x * y).sum() / (x * x).sum())  # ln b
        if float((y - slope * x).abs().max()) > 0.05 or abs(slope - 1) < 0.02:
            return None
        return "softmax_wrong_base", {"base": f"{math.exp(slope):.3g}"}

    return estimate


def one_list_rows(expected: torch.Tensor) -> dict[str, torch.Tensor]:
    """A table whose rows all come out as the last row (one list [[0.0] * n] * 3 filled row by row
    with `=`, or rows computed by functions made in a loop that read the loop variable when called,
    after the loop: either way), or as the sum of all rows (one list filled with `+=`)."""
    return {"rows_all_the_last": expected[-1].expand_as(expected),
            "rows_share_one_list": expected.sum(0).expand_as(expected)}  # fmt: skip


def weights_above_one(weights: torch.Tensor):
    """An estimator naming weights larger than 1, which no softmax gives (each is exp(s_j) over a sum
    that contains it): a weight typed with a denominator missing its parentheses, say."""

    def estimate(got: torch.Tensor):
        big = (weights > 1 + ATOL).nonzero().tolist()
        if not big:
            return None
        entries = ", ".join(str(tuple(i)) for i in big[:4])
        return "weights_above_one", {"entries": entries}

    return estimate


def few_entries_off(expected: torch.Tensor, name: str, atol: float):
    """An estimator naming a slip: all entries right but one or two, or a few in one row or column (a
    miscopied number); it says which, never what they should be."""

    def estimate(got: torch.Tensor):
        off = (got - expected).abs() > atol
        one_line = any(int(off.any(dim).sum()) == 1 for dim in (0, 1))  # all in one row or one column
        if 1 <= int(off.sum()) <= 2 or (one_line and int(off.sum()) <= 4):
            entries = ", ".join(str(tuple(i)) for i in off.nonzero().tolist())
            return "wrong_entries", {"name": name, "entries": entries}
        return None

    return estimate


def format_sums(sums: torch.Tensor) -> str:
    return "[" + ", ".join(f"{float(s):.3f}" for s in sums) + "]"


# ---------------------------------------------------------------- visible: the answers agree


@check("answer_shapes")
def test_answer_shapes(student):
    for name in SHAPES:
        answer(student, name)


@check("weights_rows_sum_to_one")
def test_weights_rows_sum_to_one(student):
    weights = answer(student, "WEIGHTS", as_meant=True)
    if weights.numel() == 0:  # rows left empty: no row sums to 1
        expect.tensor(weights, "WEIGHTS", SHAPES["WEIGHTS"], shape_variants=EMPTY_ROWS, finite=False)
    sums = weights.sum(-1)
    text = ROWS_TEXT.format(atol=ROW_SUM_ATOL, sums=format_sums(sums), low=float(weights.min()))
    expect.true(bool((weights >= -ATOL).all()), text)
    variants = {name: w.sum(-1) for name, w in WEIGHT_VARIANTS.items()}
    variants["rows_share_one_list"] = torch.full_like(sums, float(len(sums)))  # each row the sum of all (+=)
    variants["weights_in_integer_array"] = torch.zeros_like(sums)  # each weight below 1 cut down to 0
    expect.close(sums, torch.ones_like(sums), "WEIGHTS.sum(-1)", rtol=0, atol=ROW_SUM_ATOL,
                 variants=variants, estimators=[weights_above_one(weights)])  # fmt: skip


@check("weights_match_scores")
def test_weights_match_scores(student, evidence):
    scores, weights = answer(student, "SCORES", as_meant=True), answer(student, "WEIGHTS", as_meant=True)
    if weights.numel() == 0:  # rows left empty: no softmax of anything
        expect.tensor(weights, "WEIGHTS", SHAPES["WEIGHTS"], shape_variants=EMPTY_ROWS, finite=False)
    expected = torch.softmax(scores, dim=-1)
    evidence.heatmap("WEIGHTS", weights, expected)
    # WEIGHTS equal to SCORES: no softmax at all, or (rows of a softmax) SCORES overwritten by it
    same = "scores_overwritten_by_weights" if scores_are_weights(scores, weights) else "no_softmax"
    variants = {
        "softmax_wrong_axis": torch.softmax(scores, dim=-2),
        "scaled_inside_softmax": torch.softmax(scores / D_K**0.5, dim=-1),
        "exp_zero_as_zero": torch.where(scores == 0, 0.0, torch.exp(scores))
        / torch.where(scores == 0, 0.0, torch.exp(scores)).sum(-1, keepdim=True),
        "exp_divided_by_count": torch.exp(scores) / scores.shape[-1],
        # rows of SCORES that already sum to 1 are their own normalisation: told apart by `same`
        "no_exp": scores / scores.sum(-1, keepdim=True) if same == "no_softmax" else None,
        same: scores,
        "scale_after_softmax": expected / D_K**0.5,
        "softmax_whole_matrix": torch.exp(scores) / torch.exp(scores).sum(),
        "sigmoid_not_softmax": torch.sigmoid(scores),
        "log_softmax": torch.log_softmax(scores, dim=-1),
        "weights_from_unscaled": torch.softmax(RAW, dim=-1) if scores.shape == RAW.shape else None,
        "exp_not_normalised": torch.exp(scores),
        "normalised_by_max": torch.exp(scores) / torch.exp(scores).amax(-1, keepdim=True),
        "weights_in_percent": 100 * expected,
        "rounded_too_coarsely": expected.round(decimals=1),
        "softmax_plus_one": torch.exp(scores) / (1 + torch.exp(scores).sum(-1, keepdim=True)),
        "divided_by_sum_of_scores": torch.exp(scores) / scores.sum(-1, keepdim=True),
        "exp_of_sum_denominator": torch.exp(scores) / torch.exp(scores.sum(-1, keepdim=True)),
        "softmax_of_negated_scores": torch.softmax(-scores, dim=-1),
        "hard_attention": (scores == scores.amax(-1, keepdim=True)).double()
        / (scores == scores.amax(-1, keepdim=True)).sum(-1, keepdim=True),
        "l2_normalised": torch.exp(scores) / torch.exp(scores).norm(dim=-1, keepdim=True),
        "max_shift_in_numerator_only": torch.exp(scores - scores.amax(-1, keepdim=True))
        / torch.exp(scores).sum(-1, keepdim=True),
        # a softmax whose running total of exp() is not reset per row: row i divided by rows 0..i's sum
        "accumulator_not_reset": torch.exp(scores) / torch.exp(scores).sum(-1, keepdim=True).cumsum(0),
        "max_shift_in_denominator_only": torch.exp(scores)
        / torch.exp(scores - scores.amax(-1, keepdim=True)).sum(-1, keepdim=True),
        **one_list_rows(expected),
        "weights_in_integer_array": expected.trunc(),
        "diagonal_masked": torch.softmax(
            scores.masked_fill(torch.eye(*scores.shape, dtype=torch.bool), float("-inf")), -1
        )
        if scores.shape[0] == scores.shape[1]
        else None,
    }
    expect.close(weights, expected, "WEIGHTS vs softmax(SCORES)", rtol=0, atol=ATOL, variants=variants,
                 estimators=[rows_reordered(expected, "WEIGHTS", ATOL), softmax_base(scores),
                             weights_above_one(weights), few_entries_off(expected, "WEIGHTS", ATOL)], reveal=False,
                 hint=SOFTMAX_HINT)  # fmt: skip


@check("context_matches_weights")
def test_context_matches_weights(student):
    scores, weights, context = (answer(student, name, as_meant=True) for name in SHAPES)
    expect.true(weights.shape[-1] == V.shape[0], NOT_TIMES_V_TEXT.format(shape=tuple(weights.shape)),
                "iterator_used_twice" if weights.numel() == 0 else None)  # fmt: skip
    expect.tensor(
        context, "CONTEXT", (weights.shape[0], V.shape[1]), shape_variants=CONTEXT_SHAPES, finite=False
    )
    variants = {
        "transposed_in_context": weights.T @ V if weights.shape[0] == V.shape[0] else None,
        "context_without_softmax": scores @ V if scores.shape[-1] == V.shape[0] else None,
        "context_from_q": weights @ Q,
        "context_rounded": [(weights @ V).round(), (weights @ V).trunc()],  # rounded, or cut off
        "context_values_reversed": weights @ V.flip(0),
        "context_values_shifted": [weights @ V.roll(-1, 0), weights @ V.roll(1, 0)],
        "context_columns_shifted": [weights @ V.roll(1, 1), weights @ V.roll(-1, 1)],  # v[c - 1], v[c + 1]
        "context_ignores_weights": [
            V.mean(0).expand(weights.shape[0], -1),
            V.sum(0).expand(weights.shape[0], -1),
        ],
        "context_is_v": V,
        **one_list_rows(weights @ V),
        "context_averaged": weights @ V / weights.shape[-1],
        "accumulator_not_reset": (weights @ V).cumsum(0),  # row i: the right rows 0..i added up
        "context_plus_v": weights @ V + V,
        "context_plus_q": weights @ V + Q,
        "context_from_coarser_weights": weights.round(decimals=1) @ V,
        "context_scaled": weights @ V / D_K**0.5,
        "context_from_exp": torch.exp(scores) @ V if scores.shape[-1] == V.shape[0] else None,
        "context_from_other_weights": [
            torch.softmax(RAW, dim=-1) @ V,
            torch.softmax(RAW / D_K, dim=-1) @ V,
            torch.softmax(RAW / D_K**0.5, dim=-1) @ V,
        ],
        # row i: WEIGHTS[i][i] · V[i] alone, the token's own value (the diagonal, not the sum over keys)
        "context_only_self_weight": torch.diagonal(weights)[:, None] * V
        if weights.shape[0] == weights.shape[1] == V.shape[0]
        else None,
        "context_misses_keys": [weights[:, keys] @ V[keys] for keys in KEY_SUBSETS]
        if weights.shape[-1] == V.shape[0]
        else None,
    }
    expect.close(context, weights @ V, "CONTEXT vs WEIGHTS·V", rtol=0, atol=CONTEXT_ATOL, variants=variants,
                 readings=[torch.softmax(scores, dim=-1) @ V if scores.shape[-1] == V.shape[0] else None],
                 reveal=False, hint=CONTEXT_HINT,
                 estimators=[rows_reordered(weights @ V, "CONTEXT", CONTEXT_ATOL),
                             few_entries_off(weights @ V, "CONTEXT", CONTEXT_ATOL)])  # fmt: skip


# ---------------------------------------------------------------- hidden: SCORES themselves


@check("scores_dot_products")
def test_scores_dot_products(student):
    scores = answer(student, "SCORES")
    if uneven_rows(scores) is not None:  # each row q_i·k_j times a number of its own
        return  # dot products, whatever the scale: `scores_scaled` judges the scales
    factors, off = common_factor(scores)
    sums_fit = common_factor(scores, SUM_PRODUCTS)
    if sums_fit[0] is not None and not bool(sums_fit[1].any()):  # every entry (Σq_i)(Σk_j) times one number
        expect.fail(NOT_PAIRS_TEXT, "scores_product_of_sums")
    if scores_are_weights(scores, weights_if_given(student)):
        expect.fail(NO_FACTOR_TEXT, "scores_overwritten_by_weights")
    if factors is None:  # no common factor of q·kᵀ: another product, or another similarity?
        other = {"scores_from_values": [Q @ V.T], "scores_transposed_product": [Q.T @ K],
                 "scores_features_missing": SHORT_PRODUCTS}  # fmt: skip
        named = next((d for d, raws in other.items() if any(common_factor(scores, raw)[0] is not None
                                                            for raw in raws)), None)  # fmt: skip
        cosine = RAW / (Q.norm(dim=-1, keepdim=True) * K.norm(dim=-1)[None, :])
        named = named or ("cosine_scores" if common_factor(scores, cosine)[0] is not None else None)
        shifted = common_factor(centred(scores), centred(RAW))[0] is not None  # each row moved by a constant
        named = named or ("scores_row_shifted" if shifted else None)
        if named is None and sorted_rows_factor(scores):  # the right numbers, moved within their rows
            factor = sorted_rows_factor(scores)[0]
            rows = reordered_rows(
                scores, RAW * (sum(factor) / 2), (scores - RAW * (sum(factor) / 2)).abs() > ATOL
            )
            expect.fail(NO_FACTOR_TEXT, "row_entries_reordered", name="SCORES", rows=rows)
        expect.fail(NO_FACTOR_TEXT, named)
    entries = ", ".join(f"{tuple(i)} = {float(scores[tuple(i)]):.4g}" for i in off.nonzero().tolist()[:3])
    text = NOT_DOT_PRODUCTS_TEXT.format(count=int(off.sum()), factor=sum(factors) / 2, entries=entries)
    # a slip: three entries at most, or four in one row or column; more is a method, not named here
    one_line = any(int(off.any(dim).sum()) == 1 for dim in (0, 1))
    slip = int(off.sum()) <= 3 or (one_line and int(off.sum()) <= 4)
    params = {"name": "SCORES", "entries": entries} if slip else {}
    diagnosis = "wrong_entries" if slip else None
    rows = reordered_rows(scores, RAW * (sum(factors) / 2), off)
    if rows:  # the right numbers, moved within their rows: not a slip of arithmetic
        diagnosis, params = "row_entries_reordered", {"name": "SCORES", "rows": rows}
    expect.true(not bool(off.any()), text, diagnosis, **params)


@check("scores_scaled")
def test_scores_scaled(student):
    scores = answer(student, "SCORES", as_meant=True)
    # the scale is read against the dot products the student meant, or any other product they took
    products = [RAW, Q @ V.T, Q.T @ K, Q @ Q.T, *SHORT_PRODUCTS, SUM_PRODUCTS]
    # a product every entry fits (no entry off) is read first: SCORES = (Σq)(Σk)/2 are scaled by 1/2
    fits = [common_factor(scores, raw) for raw in products]
    readings = [found for found, off in fits if found is not None and not bool(off.any())]
    readings += sorted_rows_factor(
        scores
    )  # the right numbers moved within rows (sorted in place) keep their scale
    readings += [found for found, _ in fits if found is not None]
    # rows moved by a constant keep their scale: read it where the softmax does, on centred rows
    readings += [
        found for raw in products if (found := common_factor(centred(scores), centred(raw))[0]) is not None
    ]
    rows = uneven_rows(scores)
    if rows is not None:  # each row scaled on its own: name the rows whose scale is not 1/√d_k
        wrong = [i for i, (low, high) in enumerate(rows) if not low <= 1 / D_K**0.5 <= high]
        got = ", ".join(f"{(rows[i][0] + rows[i][1]) / 2:.3g}" for i in wrong)
        params = {"rows": ", ".join(map(str, wrong)), "got": got}
        expect.fail(ROWS_SCALE_TEXT.format(**params), "rows_scaled_differently", **params)
    factors = readings[0] if readings else None
    overwritten = factors is None and scores_are_weights(scores, weights_if_given(student))
    expect.true(factors is not None, NO_FACTOR_TEXT, "scores_overwritten_by_weights" if overwritten else None)
    low, high = factors
    if not low <= 1 / D_K**0.5 <= high:
        named = {"no_scaling": 1.0, "divide_by_dk": 1 / D_K}
        diagnosis = next((d for d, c in named.items() if low <= c <= high), "wrong_scale")
        factor = f"{(low + high) / 2:.3g}"
        expect.fail(SCALE_TEXT.format(factor=factor), diagnosis, factor=factor)
