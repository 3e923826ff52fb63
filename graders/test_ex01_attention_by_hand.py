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

import torch

from graders import attention as A
from graders.harness import Text, check, expect
from graders.harness.errors import StudentNotImplemented
from graders.harness.i18n import say

Q = torch.tensor([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 1, 1]], dtype=torch.float64)  # (3, 4)
K = Q
V = torch.arange(1, 13, dtype=torch.float64).reshape(3, 4)  # (3, 4)
D_K = 4
SHAPES = {"SCORES": (3, 3), "WEIGHTS": (3, 3), "CONTEXT": (3, 4)}
CONTEXT_SHAPES = {"context_one_row": [(4,), (1, 4)], "context_transposed": (4, 3)}
ATOL = 0.006  # two-decimal rounding of scores and weights
CONTEXT_ATOL = 0.01  # two-decimal rounding of context entries near 10
ROW_SUM_ATOL = 0.016  # three weights, each rounded to two decimals

RAW = Q @ K.T  # (3, 3) unscaled dot products
WEIGHT_VARIANTS = {
    "no_scaling": torch.softmax(RAW, dim=-1),
    "divide_by_dk": torch.softmax(RAW / D_K, dim=-1),
    "softmax_wrong_axis": A.attention(Q, K, V, softmax_dim=-2)[1],
    "scale_after_softmax": torch.softmax(RAW, dim=-1) / D_K**0.5,
    "no_exp": RAW / RAW.sum(-1, keepdim=True),
    "no_softmax": RAW / D_K**0.5,
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
NO_FACTOR_TEXT = Text(
    zh="从你的 SCORES 中读不出统一的缩放系数：它们不是点积 q_i·k_j 乘以同一个数。",
    en="No common factor can be read off your SCORES: they are not the dot products q_i·k_j times one number.",
)
SCALE_TEXT = Text(
    zh="你的 SCORES 是点积 q_i·k_j 乘以 {factor}；缩放应为 1/√d_k。",
    en="Your SCORES are the dot products q_i·k_j times {factor}; the scale should be 1/√d_k.",
)


def answer(student, name: str) -> torch.Tensor:
    """The student's constant `name` as a float64 tensor of the exact expected shape."""
    value = getattr(student, name)
    if value is None:
        raise StudentNotImplemented(say("not_implemented", name=name))
    if isinstance(value, torch.Tensor) and value.dtype in (torch.int8, torch.int16, torch.int32, torch.int64):
        value = value.double()  # whole numbers such as the scores may come as an integer tensor
    wrong_shapes = CONTEXT_SHAPES if name == "CONTEXT" else {}
    return expect.tensor(value, name, SHAPES[name], convert=True, finite=False,
                         shape_variants=wrong_shapes).detach().double()  # fmt: skip


def common_factor(scores: torch.Tensor) -> tuple[tuple[float, float] | None, torch.Tensor]:
    """The range of factors c with SCORES ≈ c · QKᵀ (each entry within rounding) that most entries
    agree on, and the entries that do not agree.

    Each entry with q_i·k_j ≠ 0 allows c in [(s - ATOL) / (q_i·k_j), (s + ATOL) / (q_i·k_j)]; the
    range shared by the most entries wins (a slip in one or two entries does not move it); entries
    with q_i·k_j = 0 must be 0. None when fewer than five of the seven nonzero entries agree.
    """
    nonzero = RAW != 0
    lows = ((scores - ATOL) / RAW)[nonzero].tolist()
    highs = ((scores + ATOL) / RAW)[nonzero].tolist()
    best: tuple[int, float, float] = (0, 0.0, 0.0)
    for c in lows:  # the best range starts where some entry's range starts
        agree = [(lo, hi) for lo, hi in zip(lows, highs, strict=True) if lo <= c + 1e-12 and c <= hi + 1e-12]
        if len(agree) > best[0]:
            best = (len(agree), max(lo for lo, _ in agree), min(hi for _, hi in agree))
    count, low, high = best
    factor = (low + high) / 2
    off = torch.where(nonzero, (scores - factor * RAW).abs() > ATOL + (high - low) / 2 * RAW.abs(),
                      scores.abs() > ATOL)  # fmt: skip
    return ((low, high) if count >= 5 else None), off


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
    weights = answer(student, "WEIGHTS")
    sums = weights.sum(-1)
    text = ROWS_TEXT.format(atol=ROW_SUM_ATOL, sums=format_sums(sums), low=float(weights.min()))
    expect.true(bool((weights >= -ATOL).all()), text)
    variants = {name: w.sum(-1) for name, w in WEIGHT_VARIANTS.items()}
    expect.close(sums, torch.ones(3, dtype=torch.float64), "WEIGHTS.sum(-1)", rtol=0, atol=ROW_SUM_ATOL,
                 variants=variants)  # fmt: skip


@check("weights_match_scores")
def test_weights_match_scores(student, evidence):
    scores, weights = answer(student, "SCORES"), answer(student, "WEIGHTS")
    expected = torch.softmax(scores, dim=-1)
    evidence.heatmap("WEIGHTS", weights, expected)
    variants = {
        "softmax_wrong_axis": torch.softmax(scores, dim=-2),
        "no_exp": scores / scores.sum(-1, keepdim=True),
        "no_softmax": scores,
        "scale_after_softmax": expected / D_K**0.5,
        "softmax_whole_matrix": torch.exp(scores) / torch.exp(scores).sum(),
        "sigmoid_not_softmax": torch.sigmoid(scores),
        "log_softmax": torch.log_softmax(scores, dim=-1),
        "weights_from_unscaled": torch.softmax(RAW, dim=-1),
    }
    expect.close(weights, expected, "WEIGHTS vs softmax(SCORES)", rtol=0, atol=ATOL, variants=variants,
                 estimators=[few_entries_off(expected, "WEIGHTS", ATOL)], reveal=False,
                 hint=SOFTMAX_HINT)  # fmt: skip


@check("context_matches_weights")
def test_context_matches_weights(student):
    scores, weights, context = (answer(student, name) for name in SHAPES)
    variants = {
        "transposed_in_context": weights.T @ V,
        "context_without_softmax": scores @ V,
        "context_from_q": weights @ Q,
        "context_rounded": (weights @ V).round(),
    }
    expect.close(context, weights @ V, "CONTEXT vs WEIGHTS·V", rtol=0, atol=CONTEXT_ATOL, variants=variants,
                 readings=[torch.softmax(scores, dim=-1) @ V], reveal=False, hint=CONTEXT_HINT,
                 estimators=[few_entries_off(weights @ V, "CONTEXT", CONTEXT_ATOL)])  # fmt: skip


# ---------------------------------------------------------------- hidden: SCORES themselves


@check("scores_dot_products")
def test_scores_dot_products(student):
    scores = answer(student, "SCORES")
    factors, off = common_factor(scores)
    expect.true(factors is not None, NO_FACTOR_TEXT)
    entries = ", ".join(f"{tuple(i)} = {float(scores[tuple(i)]):.4g}" for i in off.nonzero().tolist()[:3])
    text = NOT_DOT_PRODUCTS_TEXT.format(count=int(off.sum()), factor=sum(factors) / 2, entries=entries)
    expect.true(not bool(off.any()), text, "wrong_entries", name="SCORES", entries=entries)


@check("scores_scaled")
def test_scores_scaled(student):
    factors, _ = common_factor(answer(student, "SCORES"))
    expect.true(factors is not None, NO_FACTOR_TEXT)
    low, high = factors
    if not low <= 1 / D_K**0.5 <= high:
        named = {"no_scaling": 1.0, "divide_by_dk": 1 / D_K}
        diagnosis = next((d for d, c in named.items() if low <= c <= high), "wrong_scale")
        factor = f"{(low + high) / 2:.3g}"
        expect.fail(SCALE_TEXT.format(factor=factor), diagnosis, factor=factor)
