"""Checks for exercise 1: attention worked out by hand on the lesson's three tokens.

The answers are three constants (lists, tuples, numpy arrays or tensors). Answers worked out by hand
and rounded to two decimals earn full marks: scores and weights are compared with an absolute
tolerance of 0.006, context vectors (entries near 10) with 0.01, and a context computed from the
student's own rounded weights is accepted as well as one computed from the exact weights.

Visible checks test the answers against each other (shapes, softmax rows, WEIGHTS·V) and need no
expected values; hidden checks test the values themselves. Several wrong formulas also give
[5, 6, 7, 8] as the first context row, so every row is graded.
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
SCORE_VARIANTS = {"no_scaling": RAW, "divide_by_dk": RAW / D_K}

ROWS_TEXT = Text(
    zh="WEIGHTS 的每一行应非负且和为 1（允许 ±{atol} 的四舍五入误差）；"
    "你的行和为 {sums}，最小元素为 {low:.4g}。",
    en="Each row of WEIGHTS should be non-negative and sum to 1 (±{atol} for rounding); "
    "your row sums are {sums} and the smallest entry is {low:.4g}.",
)


def answer(student, name: str) -> torch.Tensor:
    """The student's constant `name` as a float64 tensor of the exact expected shape."""
    value = getattr(student, name)
    if value is None:
        raise StudentNotImplemented(say("not_implemented", name=name))
    if isinstance(value, torch.Tensor) and value.dtype in (torch.int8, torch.int16, torch.int32, torch.int64):
        value = value.double()  # whole numbers such as the scores may come as an integer tensor
    return expect.tensor(value, name, SHAPES[name], convert=True).detach().double()


def closest(got: torch.Tensor, candidates: list[torch.Tensor]) -> torch.Tensor:
    """The candidate nearest to `got` (largest absolute difference): the reading most in its favour."""
    return min(candidates, key=lambda c: float((got - c).abs().max()))


def carried(context: torch.Tensor, formula_weights: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """The context a formula gives, allowing the student's own rounded weights to be carried through.

    When the student's WEIGHTS round to `formula_weights`, both `formula_weights·V` (exact) and
    `WEIGHTS·V` (from the rounded numbers) are right readings of that formula.
    """
    candidates = [formula_weights @ V]
    if expect.matches(weights, formula_weights, rtol=0, atol=ATOL):
        candidates.append(weights @ V)
    return closest(context, candidates)


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
    }
    expect.close(weights, expected, "WEIGHTS vs softmax(SCORES)",
                 rtol=0, atol=ATOL, variants=variants)  # fmt: skip


@check("context_matches_weights")
def test_context_matches_weights(student):
    scores, weights, context = (answer(student, name) for name in SHAPES)
    expected = closest(context, [weights @ V, torch.softmax(scores, dim=-1) @ V])
    variants = {
        "transposed_in_context": weights.T @ V,
        "context_without_softmax": scores @ V,
        "context_from_q": weights @ Q,
    }
    expect.close(context, expected, "CONTEXT vs WEIGHTS·V", rtol=0, atol=CONTEXT_ATOL,
                 variants=variants)  # fmt: skip


# ---------------------------------------------------------------- hidden: the values themselves


def reference_answer(reference, name: str) -> torch.Tensor:
    return torch.as_tensor(getattr(reference, name), dtype=torch.float64)


@check("scores_values")
def test_scores_values(student, reference):
    scores = answer(student, "SCORES")
    expect.close(scores, reference_answer(reference, "SCORES"), "SCORES", rtol=0, atol=ATOL,
                 variants=SCORE_VARIANTS)  # fmt: skip


@check("weights_values")
def test_weights_values(student, reference, evidence):
    weights = answer(student, "WEIGHTS")
    expected = reference_answer(reference, "WEIGHTS")
    evidence.heatmap("WEIGHTS", weights, expected)
    expect.close(weights, expected, "WEIGHTS", rtol=0, atol=ATOL, variants=WEIGHT_VARIANTS)


@check("context_values")
def test_context_values(student, reference):
    scores, weights, context = (answer(student, name) for name in SHAPES)
    right = reference_answer(reference, "WEIGHTS")
    weights_right = expect.matches(weights, right, rtol=0, atol=ATOL)
    variants = {
        # a mistake of its own only when the weights themselves are right
        "transposed_in_context": weights.T @ V if weights_right else None,
        "context_without_softmax": closest(context, [RAW / D_K**0.5 @ V, scores @ V]),
        "context_from_q": closest(context, [right @ Q, weights @ Q]),
        **{name: carried(context, w, weights) for name, w in WEIGHT_VARIANTS.items() if name != "no_softmax"},
    }
    expected = carried(context, right, weights)
    expect.close(context, expected, "CONTEXT", rtol=0, atol=CONTEXT_ATOL, variants=variants)
