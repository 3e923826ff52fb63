"""Checks for exercise 8: the article's SelfAttention, fixed.

The article projects d_model features down to d_k (W_q, W_k, W_v are nn.Linear(d_model, d_k)), so
every configuration here has d_model ≠ d_k ≠ L: a scale taken from d_model (the input's last
dimension) or from the sequence length cannot pass for 1/√d_k. Whether the scale follows d_k is
judged on the student's own outputs (a layer with d_k four times as large, padded with zeros, must
behave as this one with its queries halved); the values are compared with the float64 formula.
"""

import math
from functools import partial

import torch

from graders import attention as A
from graders.harness import Text, check
from graders.harness.core import expect
from graders.harness.core.errors import StudentCodeError
from graders.harness.core.i18n import say

# (B, L, d_model, d_k); the first of each list has d_model // 8 ≥ 3 and ∉ {B, L, d_k}: a d_k taken as
# d_model // 8 ("the paper's 8 heads") is then neither the right scale nor no scale at all, nor another mistake's
CONFIGS = [(2, 7, 28, 5), (3, 4, 10, 6)]
HIDDEN_CONFIGS = [
    (2, 5, 35, 10),
    (2, 3, 16, 7),
]  # √d_model ≠ d_k: √9 = 3 would hide a division by d_k; B = 1 would hide len(k); ⌊√10⌋ = 3 and
# ⌈√10⌉ = 4 are no other mistake's root here (⌊√3⌋ = 1 would be no scale, round(√3) = 2 = √(35 // 8))
# a layer with d_model = d_k, for code that runs only there (a residual context + x, say, which
# `fix_runs` charges): its scale is judged on sizes it accepts, d_model and d_k widened together
SQUARE = (2, 7, 5, 5)
# a second probe of the scale, at a d_k whose root is far from an integer (√7 ≈ 2.65): a root rounded
# down, to the nearest or up (int(math.sqrt(d_k)), math.isqrt, round) scales by 1/2 or 1/3 there, and
# not by half as much at 4·d_k (√28 ≈ 5.29); at d_k = 5 a root rounded up shows (⌈√5⌉ = 3, ⌈√20⌉ = 5).
# Its other sizes are no rounded root: 1/√B, 1/√L, 1/√d_model, √(d_model // 8) are none of 1/2, 1/3
ROUNDED = (2, 6, 20, 7)
ROUNDED_SQUARE = (2, 6, 7, 7)
PAPER_HEADS = 8  # d_k = d_model / h with the paper's h = 8: a d_k that is not the constructor's
LAYERS = ["W_q", "W_k", "W_v"]
WIDER = 4  # the widened layer's d_k, in multiples of d_k: its scale is half as large
BOOST = 16  # queries scaled up when halving them changes nothing (scores rounded with //, all small)
SHAPE_ERRORS = (  # torch's messages for a product whose operands' shapes do not fit
    r"Expected size for first two dimensions of batch2 tensor|mat1 and mat2 shapes cannot be multiplied|"
    r"must match the size of tensor b|expected size|cannot be broadcast"
)
KNOWN_ERRORS = {
    # an attribute read on the right of an assignment to another one (self.d_k = self.W_q.out_features):
    # in __init__, before the line that creates it, or under a name never set
    "attribute_read_before_set": r"^AttributeError: '(?!Tensor'|tuple'|list'|int'|float'|NoneType'|dict'|str'|module')"
    r"\w+' object has no attribute '(\w+)'\n[^\n]*\bself\s*\.\s*\w+\s*=(?!=)[^\n]*\bself\s*\.\s*\1\b",
    "math_not_imported": r"name 'math' is not defined",
    "dk_undefined": r"name 'd_k' is not defined",
    "torch_sqrt_of_int": r"sqrt\(\): argument 'input' \(position 1\) must be Tensor",
    "projections_changed": r"size mismatch for W_[qkv]\.",  # the grader's weights do not fit them
    "mm_needs_2d": r"self must be a matrix|mat2 must be a matrix|matrices expected",  # torch.mm on (B, L, d)
    "dtype_changed": r"same dtype, but got (Double|Half|BFloat16) and Float|same dtype, but got Float and (Double|Half|BFloat16)|"
    r"expected scalar type (Float but found (Double|Half|BFloat16)|(Double|Half|BFloat16) but found Float)",
    # d_k stored as a tuple (self.d_k = d_k, with a trailing comma; a slice of a shape) then rooted or divided
    "dk_is_tuple": r"must be real number, not (tuple|torch\.Size)|unsupported operand type\(s\) for [^:\n]*: "
    r"('(tuple|torch\.Size)' and|[^\n]* and '(tuple|torch\.Size)')",
    # an einsum whose letters pair axes of different sizes (q @ k's pattern 'bld,bdm->blm' for q·kᵀ, say)
    "einsum_subscripts_mismatch": r"einsum\(\): subscript \w+ has size \d+ for operand \d+ which does not broadcast",
    # the scores' product taken with the input x (d_model features) where the keys k (d_k) belong
    "keys_from_input": r"(?s)(Expected size for first two dimensions of batch2 tensor|mat1 and mat2 shapes cannot be"
    r" multiplied|must match the size of tensor b).*\n[^\n]*(matmul|@|bmm|einsum)[^\n]*\bx\s*\.\s*(transpose|permute|mT\b|T\b)",
    # the keys transposed on axes other than the last two: k.transpose(0, 1) (batch and sequence), k.T
    # (every axis reversed), a permute; the scores' product then does not fit (B, L ≠ d_k here)
    "keys_transposed_wrong_axes": rf"(?s)({SHAPE_ERRORS}).*\n[^\n]*(matmul|@|bmm)[^\n]*\bk(ey|eys)?\s*\.\s*"
    r"(transpose\(\s*(0\s*,\s*[12]|[12]\s*,\s*0|0\s*,\s*-[12]|-[12]\s*,\s*0|-1\s*,\s*1|1\s*,\s*-1|-2\s*,\s*-3|-3\s*,\s*-2)\s*\)"
    r"|T\b|permute\((?!\s*0\s*,\s*2\s*,\s*1\s*\))|t\(\))",
    # v transposed in the context's product, as k is in the scores': (B, L, L) @ (B, d_k, L) does not fit
    "value_transposed": rf"(?s)({SHAPE_ERRORS}).*\n[^\n]*(matmul|@|bmm)[^\n]*\bv(al|alue|alues)?\s*\.\s*"
    r"(transpose|permute|mT\b|T\b|t\(\))",
    # the root taken with cmath (import cmath as math, say): a complex scale makes the scores complex
    "complex_scale": r"not implemented for 'Complex(Float|Double|Half)'|c10::complex|ComplexFloat|ComplexDouble|"
    r"can't convert complex|complex (numbers|values) (are|is) not supported",
}
SCALE_MISTAKES = [
    "scale_uses_batch",
    "scale_uses_d_model",
    "scale_uses_seq_len",
    "no_scaling",
    "divide_by_dk",
    "scale_after_softmax",
    "power_precedence",
    "dk_from_d_model",
    "rounded_root",
    "dk_shared_between_layers",
    "scale_uses_ndim",
    "scale_root_of_three",
    "scale_before_projection",
]

LAYERS_TEXT = Text(
    zh="SelfAttention({d_model}, {d_k}) 应保留文章的 W_q、W_k、W_v 三个 nn.Linear({d_model}, {d_k})；缺少或形状不对：{missing}。",
    en="SelfAttention({d_model}, {d_k}) should keep the article's W_q, W_k and W_v, each nn.Linear({d_model}, {d_k}); missing or of another shape: {missing}.",
)
PAIR_TEXT = Text(
    zh="forward(x) 返回了 {count} 个值；文章的 forward 只返回 context，一个 (B, L, d_k) 的张量。",
    en="forward(x) returned {count} values; the article's forward returns the context alone, one (B, L, d_k) tensor.",
)
SCALE_TEXT = Text(
    zh="缩放没有跟着 d_k 变：把 d_k 从 {d_k} 换成 {wide}（多出来的特征全为 0，点积不变）后，输出应和原来的层把查询减半时相同，实际最大差 {err:.3g}。",
    en="The scale does not follow d_k: with d_k {wide} instead of {d_k} (the extra features all zero, so the dot products are unchanged), the output should be that of this layer with its queries halved; the largest difference is {err:.3g}.",
)
LARGE = 300.0  # the largest scaled score of the large-score probe
OVERFLOW_TEXT = Text(
    zh="分数较大（最大约 {largest:.0f}）时，context 里出现了 inf 或 NaN；参考公式在这里是有限的。",
    en="With large scores (up to about {largest:.0f}) the context holds inf or NaN; the formula is finite there.",
)
NO_EFFECT_TEXT = Text(
    zh="把查询或键减半都没有改变输出：输出根本不取决于分数，读不出缩放。",
    en="Halving the queries or the keys does not change the output: it does not depend on the scores at all, so no scale can be read off it.",
)


def as_linear(out: int, inp: int, bias: bool) -> str:
    return f"nn.Linear({inp}, {out})" if bias else f"nn.Linear({inp}, {out}, bias=False)"


def student_layer(student, rng, batch, length, d_model, d_k, state=None, x=None, properties=False, then=None):
    """The student's SelfAttention(d_model, d_k) in eval mode with seeded weights (or `state`), and x;
    `then`: the d_k of another layer built right after this one (before this one is used): a layer
    must keep its own d_k whatever is built after it."""
    layer = student.SelfAttention(d_model, d_k)
    if then is not None:
        build_another(student, d_model, then)
    state = A.linear_weights(LAYERS, d_model, d_k, rng) if state is None else state
    x = torch.randn(batch, length, d_model, generator=rng) if x is None else x
    state = expect.load_weights(layer, state, own_if_mismatched=properties)
    layer.eval()
    return layer, state, x


def build_another(student, d_model: int, d_k: int) -> None:
    """Build SelfAttention(d_model, d_k) and drop it (a constructor that refuses these sizes is no
    matter here: the checks that build it at their own sizes judge that)."""
    try:
        student.SelfAttention(d_model, d_k)
    except StudentCodeError:
        pass


def context_of(layer, x):
    """The context the student's forward returns, read as meant: of a pair, the first (`fix_runs`
    charges the pair)."""
    got = layer(x)
    if isinstance(got, (tuple, list)) and len(got) == 2 and isinstance(got[0], torch.Tensor):
        return got[0]
    return got


def formula(
    x,
    state,
    *,
    scale=None,
    softmax_dim=-1,
    value="W_v",
    rounding=None,
    transposed="",
    scaled_after=False,
    query="W_q",
    key="W_k",
    causal=False,
    log_weights=False,
):
    """softmax(q kᵀ · scale) v in float64 (scale 1/√d_k unless given), with the student's weights;
    `rounding` ("floor", "trunc") rounds the scaled scores to integers (`//`), `transposed`
    "scores" takes k qᵀ for them, "weights" transposes the softmax's output, and `scaled_after`
    scales the weights after the softmax instead of the scores before it; `query` and `key` name the
    projections the scores multiply (W_q and W_q: q qᵀ); `causal` masks every key after its query
    (−inf before the softmax); `log_weights` takes log_softmax for the weights."""
    zero_bias = {
        f"{n}.bias": torch.zeros(state[f"{n}.weight"].shape[0]) for n in LAYERS if f"{n}.weight" in state
    }
    state = zero_bias | state  # a module's own layers built without a bias have none
    q, k, v = (A.project(x, state, name) for name in (query, key, value))  # (B, L, d_k) each
    if causal or log_weights:
        scores = A.scores(q, k, 1 / math.sqrt(q.shape[-1]) if scale is None else scale)  # (B, L, L)
        if causal:
            length = scores.shape[-1]
            future = torch.ones(length, length, dtype=torch.bool).triu(1)  # (L, L), True after the query
            scores = scores.masked_fill(future, float("-inf"))
        weights = torch.log_softmax(scores, dim=-1) if log_weights else torch.softmax(scores, dim=-1)
        return weights @ v.double()  # (B, L, d_k)
    if rounding is None and not transposed and not scaled_after:
        return A.attention(q, k, v, scale=scale, softmax_dim=softmax_dim)[0]  # (B, L, d_k)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = A.scores(k, q, 1.0) if transposed == "scores" else A.scores(q, k, 1.0)  # (B, L, L)
    if rounding:
        scores = torch.div(scores, 1 / scale, rounding_mode=rounding)
    weights = torch.softmax(scores if rounding or scaled_after else scores * scale, dim=softmax_dim)
    weights = weights.transpose(-2, -1) if transposed == "weights" else weights
    return (weights * scale if scaled_after else weights) @ v.double()  # (B, L, d_k)


def variants(x, state, d_k=None, later_dk=None) -> dict:
    """The context each known mistake gives, keyed by diagnosis id (`d_k`: the layer's, where its
    W_q has another width; `later_dk`: the d_k of a layer built after this one, which a d_k shared by
    every instance, on the class or in a global, takes)."""
    batch, length, d_model = x.shape
    d_k = state["W_q.weight"].shape[0] if d_k is None else d_k
    shared = None if later_dk is None else formula(x, state, scale=1 / math.sqrt(later_dk))
    return {
        "dk_shared_between_layers": shared,
        "scale_uses_batch": formula(x, state, scale=1 / math.sqrt(batch)),  # len(k), k.size(0): B
        "scale_uses_d_model": formula(x, state, scale=1 / math.sqrt(d_model)),
        "scale_uses_seq_len": formula(x, state, scale=1 / math.sqrt(length)),
        "no_scaling": formula(x, state, scale=1.0),
        "divide_by_dk": formula(x, state, scale=1 / d_k),
        "power_precedence": [formula(x, state, scale=s) for s in (2 / d_k, 1 / (2 * d_k))],  # d_k ** 1/2
        "dk_from_d_model": [  # d_model // 8 or d_model / 8 in place of the constructor's d_k
            formula(x, state, scale=1 / math.sqrt(dk))
            for dk in (d_model // PAPER_HEADS, d_model / PAPER_HEADS)
            if dk >= 1 and dk != d_k and dk != x.dim()  # 28 // 8 = 3 is also the number of axes
        ],
        # the number of axes (q.dim(), len(q.shape), x.ndim: 3) read as d_k
        "scale_uses_ndim": formula(x, state, scale=1 / math.sqrt(x.dim()))
        if x.dim() not in (d_k, d_model // PAPER_HEADS)
        else None,
        # √3 where 3 is both the number of axes and d_model // 8: these sizes cannot tell the two apart
        "scale_root_of_three": formula(x, state, scale=1 / math.sqrt(x.dim()))
        if x.dim() == d_model // PAPER_HEADS and x.dim() != d_k
        else None,
        # x divided by √d_k before W_q's projection or all three, the scores left alone:
        # the projection's bias is not divided
        "scale_before_projection": [
            formula(
                x,
                dict(state, **{f"{n}.weight": state[f"{n}.weight"] / math.sqrt(d_k) for n in names}),
                scale=1.0,
            )
            for names in (
                ("W_q",),
                ("W_q", "W_k", "W_v"),
            )  # W_k(x / √d_k) alone is right: its bias adds one constant per query row
        ],
        "rounded_root": [  # int(math.sqrt(d_k)), math.isqrt(d_k), d_k ** 0.5 // 1, round(…), math.ceil(…)
            formula(x, state, scale=1 / root) for root in rounded_roots(batch, length, d_model, d_k)
        ],
        "scale_after_softmax": formula(x, state, scaled_after=True),  # the weights or the context
        "softmax_wrong_axis": [formula(x, state, softmax_dim=dim) for dim in (-2, 0)],
        "value_from_key": [formula(x, state, value=name) for name in ("W_k", "W_q")],
        "scores_not_query_key": [formula(x, state, key="W_q"), formula(x, state, query="W_k")],  # q qᵀ, k kᵀ
        "causal_mask_added": formula(x, state, causal=True),
        "log_softmax_weights": formula(x, state, log_weights=True),
        "floor_division": [formula(x, state, rounding=mode) for mode in ("floor", "trunc")],
        "scores_transposed": [formula(x, state, transposed=what) for what in ("scores", "weights")],
        "projections_changed": formula(
            x, {k: v if k.endswith(".weight") else 0 * v for k, v in state.items()}
        ),
        "loop_skips_rows": lambda: skipped_rows(formula(x, state)),
        "context_from_scores": [scores_times_values(x, state, s) for s in (1 / math.sqrt(d_k), 1.0)],
    }


def rounded_roots(batch: int, length: int, d_model: int, d_k: int) -> list[int]:
    """√d_k rounded down, to the nearest or up, where that is not √d_k itself nor the root another
    scale mistake divides by at these sizes (⌊√3⌋ = 1 is no scale at all): the evidence could not
    tell those apart."""
    others = [1.0, 3.0, batch, length, d_model, d_k**2, (d_k / 2) ** 2, (2 * d_k) ** 2, d_model // PAPER_HEADS,
              d_model / PAPER_HEADS]  # fmt: skip
    root = math.sqrt(d_k)
    return [
        n for n in sorted({math.floor(root), round(root), math.ceil(root)})
        if abs(n - root) > 1e-9 and all(abs(n - math.sqrt(o)) > 1e-9 for o in others)
    ]  # fmt: skip


def scores_times_values(x, state, scale: float) -> torch.Tensor:
    """The context taken from the (scaled) scores, the softmax's weights computed and never used."""
    zero_bias = {
        f"{n}.bias": torch.zeros(state[f"{n}.weight"].shape[0]) for n in LAYERS if f"{n}.weight" in state
    }
    state = zero_bias | state
    q, k, v = (A.project(x, state, name) for name in ("W_q", "W_k", "W_v"))
    return A.scores(q, k, scale) @ v.double()  # (B, L, d_k)


def skipped_rows(context: torch.Tensor) -> list[torch.Tensor]:
    """The context of a loop over the batch (or over the queries) that stops one early or starts one
    late, leaving that batch element (or query position) at the zeros it was filled with."""
    out = []
    for axis in (0, 1):
        for index in (-1, 0):
            wrong = context.clone()
            wrong.select(axis, index).zero_()
            out.append(wrong)
    return out


def scale_estimator(x, state, d_k=None):
    """An `expect.close` estimator: the one scale (searched on a log grid, then refined) whose
    formula gives the student's context, when it is not 1/√d_k (e.g. a d_k written as 64)."""
    d_k = state["W_q.weight"].shape[0] if d_k is None else d_k

    def error(got, log_scale: float) -> float:
        return expect.error_ratio(got, formula(x, state, scale=math.exp(log_scale)), 1e-4, 1e-5)

    def estimate(got):
        grid = [math.log(1e-3) + i * (math.log(30.0) - math.log(1e-3)) / 400 for i in range(401)]
        best = min(grid, key=lambda s: error(got, s))
        low, high = best - 0.03, best + 0.03
        for _ in range(60):  # golden-section search around the best grid point
            a, b = high - 0.618 * (high - low), low + 0.618 * (high - low)
            low, high = (low, b) if error(got, a) < error(got, b) else (a, high)
        found = math.exp((low + high) / 2)
        if error(got, math.log(found)) > 1 or abs(found * math.sqrt(d_k) - 1) < 1e-3:
            return None
        return "wrong_scale", {
            "got_scale": A.as_fraction(found), "expected_scale": A.as_fraction(1 / math.sqrt(d_k)), "d_k": d_k,
        }  # fmt: skip

    return estimate


def scaled_queries(state: dict, factor: float, layer: str = "W_q") -> dict:
    """`state` with W_q (or `layer`; weight and bias, where it has one) times `factor`: the scores
    times `factor`."""
    scaled = {
        f"{layer}.{p}": state[f"{layer}.{p}"] * factor for p in ("weight", "bias") if f"{layer}.{p}" in state
    }
    return dict(state, **scaled)


def widened(state: dict, d_k: int, times: int = WIDER) -> dict:
    """Weights of a layer with d_k' = times·d_k whose extra features are zero: the same dot
    products, hence (with the right scale) the weights of this layer with its queries halved.
    A projection of another width than d_k (the module's own: a W_q and W_k to d_model, say, whose
    width does not follow d_k) stays as it is: its dot products are the same too."""
    d_model = state["W_q.weight"].shape[1]
    out = dict(state)
    for name in LAYERS:
        if state[f"{name}.weight"].shape != (d_k, d_model):
            continue
        weight = torch.zeros(times * d_k, d_model)
        weight[:d_k] = state[f"{name}.weight"]
        out[f"{name}.weight"] = weight
        if f"{name}.bias" in state:  # a layer built without one has none to widen
            bias = torch.zeros(times * d_k)
            bias[:d_k] = state[f"{name}.bias"]
            out[f"{name}.bias"] = bias
    return out


def shaped_as_context(got, x, d_k: int, finite: bool = False):
    """`got` as the (B, L, d_k) context (any other shape fails), naming the (B, L, L) of the
    attention weights or scores, the (B, d_k) of a context pooled over the sequence and the
    (B, L, d_model) of values that skip W_v."""
    batch, length, d_model = x.shape
    expected = (batch, length, d_k)
    if isinstance(got, torch.Tensor) and got.is_floating_point() and tuple(got.shape) != expected:
        shape = tuple(got.shape)
        for diagnosis, wrong in (
            ("returns_weights", (batch, length, length)),
            ("context_pooled", (batch, d_k)),
            ("value_width", (batch, length, d_model)),
        ):
            if shape == wrong:
                text = say("check.shape", name="context", expected=expected, got=shape)
                expect.fail(text, diagnosis, name="context", got=shape)
    return expect.tensor(got, "context", expected, finite=finite)


AGAIN_TEXT = Text(
    zh="同一个层第二次在同一个输入上调用，得到的 context 与第一次不同（最大差 {err:.3g}）：第一次调用改变了这个层，下一次调用读到的是改过的东西。",
    en="Called a second time on the same input, the same layer gives another context than its first call (largest"
    " difference {err:.3g}): the first call changed the layer, and the next call reads what it changed.",
)
LATER_TEXT = Text(
    zh="已经调用过一次的层在另一个长度（L = {length}）的输入上给出的 context，与一个权重相同、新建的层不同（{got}）：前面的调用在层上留下了东西，这次调用还在用它。",
    en="Called on an input of another length (L = {length}), the layer that already ran once gives another context"
    " than a freshly built layer with the same weights ({got}): an earlier call left something on the layer"
    " that this call still uses.",
)
LATER_LENGTH = 3  # the second input's extra positions: another shape than the first call's


def called_again(student, layer, state, x, first) -> None:
    """The layer that answered `first` on x, called again: on x, it must answer the same; on an input
    of another length, what a fresh layer with the same weights answers (or the formula). Each
    check's layers are otherwise called once, so a forward that changes the layer (self.d_k
    overwritten with its root, a shape or mask kept from the first call) would never show."""
    again = context_of(layer, x)
    if not close_to(again, first):
        err = expect.largest_difference(again, first) if same_shape(again, first) else float("nan")
        expect.fail(AGAIN_TEXT.format(err=err), "forward_changes_state")
    batch, length, d_model = x.shape
    d_k = state["W_q.weight"].shape[0]
    other = torch.randn(
        batch, length + LATER_LENGTH, d_model, generator=torch.Generator().manual_seed(LATER_LENGTH)
    )
    fresh_layer, _, _ = student_layer(student, None, batch, length, d_model, d_k, state=state, x=other)
    try:
        later = context_of(layer, other)
    except StudentCodeError as exc:
        try:
            context_of(fresh_layer, other)
        except StudentCodeError:
            raise exc from None
        if exc.diagnosis is None:
            exc.diagnosis = "forward_changes_state"
        raise
    fresh = context_of(fresh_layer, other)
    if close_to(later, fresh) or close_to(later, formula(other, state)):
        return
    got = f"{expect.largest_difference(later, fresh):.3g}" if same_shape(later, fresh) else describe(later)
    expect.fail(LATER_TEXT.format(length=length + LATER_LENGTH, got=got), "forward_changes_state")


def same_shape(a, b) -> bool:
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape


def close_to(got, expected) -> bool:
    return same_shape(got, expected) and expect.error_ratio(got.double(), expected.double(), 1e-4, 1e-5) <= 1


def describe(got) -> str:
    return f"shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else type(got).__name__


def compare(layer, state, x, evidence=None, later_dk=None):
    got = shaped_as_context(context_of(layer, x), x, state["W_q.weight"].shape[0])
    expected = formula(x, state)
    if evidence is not None and isinstance(got, torch.Tensor) and got.shape == expected.shape:
        evidence.heatmap("context[0]", got[0].double(), expected[0])
    expect.close(
        got,
        expected,
        "context",
        variants=partial(variants, x, state, later_dk=later_dk),
        estimators=[random_in_eval(layer, x), scale_estimator(x, state)],
    )
    return got


def last_built_after(configs, i: int) -> int | None:
    """The d_k of the last layer built after layer i of `configs` (all built before any is used)."""
    return configs[-1][3] if i < len(configs) - 1 else None


def random_in_eval(layer, x):
    """An `expect.close` estimator: names a forward pass that is random in eval mode (F.dropout,
    whose training=True is the default) when two calls with fresh random draws disagree."""

    def estimate(got):
        with expect.fresh_draws(layer):
            first, second = (context_of(layer, x) for _ in range(2))
        if (
            isinstance(first, torch.Tensor)
            and isinstance(second, torch.Tensor)
            and first.shape == second.shape
        ):
            if expect.largest_difference(first, second) > 1e-6:
                return "random_in_eval", {}
        return None

    return estimate


@check("fix_runs")
def test_fix_runs(student, rng):
    for batch, length, d_model, d_k in CONFIGS:
        layer, _, x = student_layer(student, rng, batch, length, d_model, d_k, properties=True)
        got = layer(x)
        if isinstance(got, (tuple, list)):
            expect.fail(PAIR_TEXT.format(count=len(got)), "returns_pair")
        shaped_as_context(got, x, d_k, finite=True)


@check("fix_keeps_projections")
def test_fix_keeps_projections(student, rng):
    batch, length, d_model, d_k = CONFIGS[0]
    layer, _, x = student_layer(student, rng, batch, length, d_model, d_k, properties=True)
    linear = expect.introspect(layer)["linear"]  # layers confirmed by the state the grader loads into them
    missing = [name for name in LAYERS if linear.get(name) != [d_k, d_model, True]]
    described = [name if name not in linear else f"{name} = {as_linear(*linear[name])}" for name in missing]
    text = LAYERS_TEXT.format(d_model=d_model, d_k=d_k, missing=", ".join(described))
    # the article's layers resized (to d_model, say): the same cause as the weights that do not fit them
    expect.true(not missing, text, "projections_changed" if all(n in linear for n in missing) else None)
    expect.tensor(context_of(layer, x), "context", finite=False)  # and it runs


def accepts(student, batch, length, d_model, d_k) -> bool:
    """Whether SelfAttention(d_model, d_k) builds and its forward answers at these sizes (inputs of
    its own: the check's draws stay as they were)."""
    own = torch.Generator().manual_seed(0)
    try:
        layer = student.SelfAttention(d_model, d_k)
        layer.eval()
        layer(torch.randn(batch, length, d_model, generator=own))
    except StudentCodeError:
        return False
    return True


def widened_square(state: dict, x: torch.Tensor, times: int = WIDER) -> tuple[dict, torch.Tensor]:
    """For a layer with d_model = d_k: the weights and input of one with both times as large, every
    extra feature zero (x padded with zeros, each W in the top-left corner): the same dot products,
    and this layer's output in its first features, plus zeros."""
    size = x.shape[-1]
    out = {}
    for name, value in state.items():
        grown = torch.zeros(*(times * n for n in value.shape))
        grown[tuple(slice(0, n) for n in value.shape)] = value
        out[name] = grown
    return out, torch.cat([x, x.new_zeros(*x.shape[:-1], (times - 1) * size)], dim=-1)


@check("fix_scale_uses_dk")
def test_fix_scale_uses_dk(student, rng):
    for config, square_config in ((CONFIGS[0], SQUARE), (ROUNDED, ROUNDED_SQUARE)):
        scale_follows_dk(student, rng, config, square_config)


def scale_follows_dk(student, rng, config, square_config):
    """Fail unless the layer at `config` (or at `square_config`, where the code answers only with
    d_model = d_k) scales its scores as a layer with d_k four times as large does with its queries
    halved: the scale is 1/√d_k, whatever d_k is."""
    batch, length, d_model, d_k = config
    square = not accepts(student, *config) and accepts(student, *square_config)
    if square:  # the code answers only where d_model = d_k: its scale is judged there
        batch, length, d_model, d_k = square_config
    _, own, x = student_layer(student, rng, batch, length, d_model, d_k, properties=True)

    def context(width, state, model=d_model, inputs=x):  # another layer built before this one is used
        layer, _, _ = student_layer(
            student, rng, batch, length, model, width, state=state, x=inputs, then=width + 1
        )
        return expect.tensor(context_of(layer, inputs), "context", finite=False)

    for boost in (1, BOOST):  # larger scores where halving small ones shows nothing (rounded scores)
        state = scaled_queries(own, boost)
        plain, half = context(d_k, state), context(d_k, scaled_queries(state, 0.5))
        # scores that never use W_q (k·kᵀ, say: `fix_matches_formula` charges that) move with W_k
        moves = expect.largest_difference(plain, half) > 1e-6 or (
            expect.largest_difference(plain, context(d_k, scaled_queries(state, 0.5, "W_k"))) > 1e-6
        )
        if moves:
            break
    expect.true(moves, NO_EFFECT_TEXT)
    if square:
        wide_state, wide_x = widened_square(state, x)
        wide = context(WIDER * d_k, wide_state, WIDER * d_model, wide_x)
    else:
        wide = context(WIDER * d_k, widened(state, d_k))
    # whatever the output's layout (`fix_runs` charges it), the wide layer's first features are this one's
    wide = expect.tensor(wide, "context", finite=False)
    expect.true(wide.shape[:-1] == half.shape[:-1] and wide.shape[-1] >= half.shape[-1], NO_EFFECT_TEXT)
    wide = wide[..., : half.shape[-1]]
    err = expect.largest_difference(wide, half)
    if expect.error_ratio(wide, half, 1e-4, 1e-5) <= 1:
        return
    # a layer that takes its values from W_q too (`fix_matches_formula` charges that) has its keys halved instead
    half_keys = context(d_k, scaled_queries(state, 0.5, "W_k"))
    if expect.error_ratio(wide, half_keys[..., : wide.shape[-1]], 1e-4, 1e-5) <= 1:
        return
    # scores that are not q·kᵀ (q·qᵀ or k·kᵀ, say: `fix_matches_formula` charges that) are halved by
    # W_q and W_k each times 1/√2, whichever two of q and k they multiply
    root = 0.5**0.5
    half_both = context(d_k, scaled_queries(scaled_queries(state, root), root, "W_k"))
    if expect.error_ratio(wide, half_both[..., : wide.shape[-1]], 1e-4, 1e-5) <= 1:
        return
    text = SCALE_TEXT.format(d_k=d_k, wide=WIDER * d_k, err=err)
    scales = {k: v for k, v in variants(x, state, d_k, later_dk=d_k + 1).items() if k in SCALE_MISTAKES}
    diagnosis = expect.find_variant(plain, scales, 1e-4, 1e-5)
    if diagnosis is None and bool(torch.isfinite(plain).all()):
        found = scale_estimator(x, state, d_k)(plain)
        if found:
            expect.fail(text, found[0], **found[1])
    expect.fail(text, diagnosis)


@check("fix_matches_formula")
def test_fix_matches_formula(student, rng, evidence):
    # every layer built before any is used: each must keep its own d_k whatever is built after it
    built = [student_layer(student, rng, *config) for config in CONFIGS]
    for i, (layer, state, x) in enumerate(built):
        got = compare(layer, state, x, evidence if i == 0 else None, later_dk=last_built_after(CONFIGS, i))
        called_again(student, layer, state, x, got)  # a second call: the first must leave the layer as it was
    # the same layer with its queries made large: scores up to LARGE, where exp overflows in float32
    # (above ~88) unless the softmax subtracts each row's max first
    layer, state, x = built[0]
    q, k = (A.project(x, state, name) for name in ("W_q", "W_k"))
    largest = float(A.scores(q, k, 1 / math.sqrt(q.shape[-1])).abs().max())
    state = scaled_queries(state, LARGE / max(largest, 1e-6))
    layer, state, x = student_layer(student, rng, *CONFIGS[0], state=state, x=x)
    got = shaped_as_context(context_of(layer, x), x, state["W_q.weight"].shape[0])
    if isinstance(got, torch.Tensor) and got.shape == x.shape[:-1] + (state["W_q.weight"].shape[0],):
        if not bool(torch.isfinite(got).all()):
            expect.fail(OVERFLOW_TEXT.format(largest=LARGE), "softmax_overflows")
    compare(layer, state, x)


@check("fix_matches_reference")
def test_fix_matches_reference(student, reference, rng):
    built = [student_layer(student, rng, *config) for config in HIDDEN_CONFIGS]  # all before any is used
    for i, (layer, state, x) in enumerate(built):
        d_model, d_k = HIDDEN_CONFIGS[i][2:]
        trusted = reference.SelfAttention(d_model, d_k).double().eval()
        trusted.load_state_dict({k: v.double() for k, v in state.items()})
        with torch.no_grad():
            expected = trusted(x.double())
        got = shaped_as_context(context_of(layer, x), x, d_k)
        expect.close(
            got,
            expected,
            "context",
            variants=partial(variants, x, state, later_dk=last_built_after(HIDDEN_CONFIGS, i)),
            estimators=[random_in_eval(layer, x), scale_estimator(x, state)],
        )
        called_again(student, layer, state, x, got)
