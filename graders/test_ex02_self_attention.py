"""Checks for exercise 2: scaled_dot_product_attention and SimpleSelfAttention.

Shapes are chosen with every dimension different (L ≠ S, d_k ≠ d_v, B ≠ L ≠ E) so that a
transposition cannot hide, and d_k = 16 so that a wrong scale changes the weights visibly.

Each check judges one thing. Property checks (rows summing to one, finite at large scores,
gradients, batch independence, determinism) judge the student's own outputs, never their values.
The layer is graded with the student's own scaled_dot_product_attention (error carried forward):
its outputs may match the formula or what the student's function gives on the layer's
projections; where that function cannot answer at all, a correct one takes its place.
"""

import inspect
import math
import re
from functools import partial

import torch

from graders import attention as A
from graders.harness import Text, check
from graders.harness.core import expect
from graders.harness.core.diagnoses import COMMON_ERRORS
from graders.harness.core.errors import CheckFailed, StudentCodeError, StudentFault

# (q, k, v) shapes: leading batch dims, L ≠ S, d_k ≠ d_v
SDPA_SHAPES = [((2, 5, 16), (2, 7, 16), (2, 7, 3)), ((3, 2, 4, 16), (3, 2, 6, 16), (3, 2, 6, 5))]
# size-1 axes the shapes keep (batch 1, one query): a squeeze(), squeeze(0) or view(-1, …) must not drop them
SIZE_ONE_SHAPES = [((1, 5, 16), (1, 7, 16), (1, 7, 3)), ((2, 1, 16), (2, 7, 16), (2, 7, 3))]
LAYER_SIZE_ONE = [(1, 5, 6), (2, 1, 6)]  # (B, L, E) with B = 1, then L = 1
# a probe with another d_k (9: scale 1/3) after those with d_k = 16: a scale kept from an earlier call shows
OTHER_DK_SHAPES = ((2, 5, 9), (2, 7, 9), (2, 7, 3))
HIDDEN_SHAPES = [((4, 9), (6, 9), (6, 2)), ((2, 3, 1, 8), (2, 3, 11, 8), (2, 3, 11, 7))]
LAYERS = ["query", "key", "value"]
WIDE_FACTOR = 12.0  # see wide_score_inputs
CLAMPS = (5, 10, 15, 20, 30, 50)  # bounds a student might clamp the scores to
LARGE_SCORE = 2000.0  # raw q·k of the aligned pairs: 2000/√16 = 500 overflows exp() in float32 and float64
ROW_SUM_ATOL = 1e-3  # a softmax computed in half precision still sums to one within this
BACKWARD_ERRORS = {
    "inplace_breaks_backward": r"modified by an inplace operation",
    "inplace_on_input": r"leaf Variable that requires grad is being used in an in-place operation",
}
KNOWN_ERRORS = {
    # math.exp / math.sqrt (or a bare exp from `from math import exp`) given a tensor of many values
    "math_on_tensor": r"(?s)only one element tensors can be converted to Python scalars.*\n[^\n]*"
    r"(\bmath\.\w+\(|(?<![\w.])(exp|sqrt|log|pow)\()",
    "transpose_fixed_dims": r"(?s)(RuntimeError|IndexError).*\n.*(\.transpose\(1, ?2\)|\.permute\(0, ?2, ?1\))",
    # a bias added as a column (E, 1): it lines up with the tokens; the weight's .T beside it is right
    "bias_as_column": r"(?s)RuntimeError.*\n[^\n]*\bbias(\[:, ?None\]|\.unsqueeze\((-1|1)\)|\.(view|reshape)\(-1, ?1\))",
    "k_transpose_batched": r"(?s)RuntimeError.*\n.*\b(?!weight\b)[A-Za-z_]\w*\.T\b",
    "transposed_in_context": r"(?s)RuntimeError.*\n.*(transpose\(-2, ?-1\)|\.mT|\.T\b)\s*@\s*\w*v",
    # the context (…, L, d_v) forced into the queries' shape (…, L, d_k): sizes differ when d_v ≠ d_k
    "context_reshaped_to_query": r"(?s)(is invalid for input of size|view size is not compatible).*\n[^\n]*"
    r"\.(reshape|view)(\((q|query|queries)\.(shape|size\(\))\)|_as\((q|query|queries)\))",
}
CORRECT_SDPA = inspect.getsource(A.scaled_dot_product_attention)


def qkv(rng, shapes, dtype=torch.float32):
    return [torch.randn(s, generator=rng, dtype=dtype) for s in shapes]


def call_sdpa(student, q, k, v):
    """(context, weights), read as meant: outputs in the other order, or the context alone, are taken
    for what they are (`sdpa_shapes` charges the order)."""
    name = "scaled_dot_product_attention(q, k, v)"
    lead = q.shape[:-1]
    return expect.pair_as_meant(
        student.scaled_dot_product_attention(q, k, v), name, ((*lead, v.shape[-1]), (*lead, k.shape[-2]))
    )


def padded(t: torch.Tensor, times: int = 4) -> torch.Tensor:
    """t with zeros appended to its last dimension, `times` times as long: dot products unchanged."""
    return torch.cat([t, torch.zeros(*t.shape[:-1], (times - 1) * t.shape[-1], dtype=t.dtype)], dim=-1)


def scales_with_sqrt_dk(student, q, k, v) -> bool:
    """Does the function see its scores as q·kᵀ/√d_k, whatever it does with them afterwards?

    Padding q and k with zeros to 4·d_k leaves every dot product as it is and halves 1/√d_k, so a
    function of q·kᵀ/√d_k must give for padded q and k what it gives for q/2; and it must give
    something else for q than for q/2 (it depends on the scores at all). Judged on the student's
    outputs alone, so it holds for any softmax axis, layout or later step.
    """
    halved = call_sdpa(student, q / 2, k, v)
    wider = call_sdpa(student, padded(q), padded(k), v)
    plain = call_sdpa(student, q, k, v)
    for a, b, c in zip(halved, wider, plain, strict=True):
        if not all(isinstance(t, torch.Tensor) for t in (a, b, c)) or a.shape != b.shape:
            return False
        if expect.error_ratio(a, b, 1e-4, 1e-5) > 1:
            return False
    return any(
        isinstance(a, torch.Tensor) and isinstance(c, torch.Tensor) and expect.largest_difference(a, c) > 1e-6
        for a, c in zip(halved, plain, strict=True)
    )


def scale_unobservable(student, q, k, v) -> bool:
    """Are the function's outputs blind to any factor on the scores (the scores L1-normalised per
    row, say, with no softmax), to q's size and to d_k alike (q and k padded with zeros), while
    they still depend on q? Then no scale can be read off them,
    the title cannot be shown false, and the missing softmax is charged by the checks on the
    weights' rows and values, not here."""
    halved = call_sdpa(student, q / 2, k, v)
    wider = call_sdpa(student, padded(q), padded(k), v)  # the same scores, d_k four times larger
    plain = call_sdpa(student, q, k, v)
    other = call_sdpa(student, q.flip(-1), k, v)
    for a, b, c in zip(halved, wider, plain, strict=True):
        if not all(isinstance(t, torch.Tensor) for t in (a, b, c)) or not a.shape == b.shape == c.shape:
            return False
        if expect.error_ratio(a, c, 1e-4, 1e-5) > 1 or expect.error_ratio(b, c, 1e-4, 1e-5) > 1:
            return False
    return any(
        isinstance(o, torch.Tensor) and o.shape == c.shape and expect.largest_difference(o, c) > 1e-6
        for o, c in zip(other, plain, strict=True)
    )


def wide_score_inputs(rng):
    """q, k, v of SDPA_SHAPES[0] with q 12 times larger: scaled scores spread over about ±40, where a
    clamp on the scores changes the answer while exp() still cannot overflow in float32."""
    q, k, v = qkv(rng, SDPA_SHAPES[0])
    return WIDE_FACTOR * q, k, v


def clipped(q, k, v) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(context, weights) with the scores clamped before the softmax "to keep exp() small": the
    scaled scores at ±c, or the raw ones."""
    raw, root = A.scores(q, k, 1.0), math.sqrt(q.shape[-1])
    out = []
    for c in CLAMPS:
        for scaled in ((raw / root).clamp(-c, c), raw.clamp(-c, c) / root):
            weights = torch.softmax(scaled, dim=-1)
            out.append((weights @ v.double(), weights))
    return out


def large_score_inputs(rng):
    """q, k, v whose scores reach LARGE_SCORE for every seed: each query but the first is aimed at
    one key (q = k·T/|k|²), so its score with that key is exactly T, and every key is aimed at (the
    later keys repeat earlier ones); the first query is tiny, so its row's maximum sits hundreds
    below the largest score (a shift by the global max, or by each column's max, underflows there)."""
    (q_shape, k_shape, v_shape) = SDPA_SHAPES[0]
    k = torch.randn(k_shape, generator=rng)
    v = torch.randn(v_shape, generator=rng)
    aimed = k[:, : q_shape[1] - 1]  # (B, L-1, d_k)
    for j in range(q_shape[1] - 1, k_shape[1]):  # the other keys repeat aimed ones: every key is some
        k[:, j] = aimed[:, j % aimed.shape[1]]  # query's largest score (a max over the queries is huge)
    q = aimed * (LARGE_SCORE / (aimed * aimed).sum(-1, keepdim=True))
    q = torch.cat([1e-3 * torch.randn(q_shape[0], 1, q_shape[2], generator=rng), q], dim=1)  # (B, L, d_k)
    return q, k, v


# ---------------------------------------------------------------- the layer, error carried forward


def layer_module(student, x, state):
    """The student's module to build SimpleSelfAttention from, and the answer of the student's own
    scaled_dot_product_attention on the layer's projections (None if it cannot give one).

    When that function cannot answer (it raises, returns no pair of tensors of the layer's shapes,
    or returns the same whatever its input), the layer is taken from the student's module with a
    correct function in its place: a mistake in part one is charged by part one's checks, not
    again by every check of the layer, and a layer is never right merely by agreeing with a
    function that ignores its input.
    """
    batch, length, embed = x.shape
    answers = []
    for inputs in (x, x.flip(1) + 1):
        q, k, v = (A.project(inputs, state, name).float() for name in LAYERS)
        try:
            context, weights = student.scaled_dot_product_attention(q, k, v)
        except (StudentFault, TypeError, ValueError):
            break
        if not (
            isinstance(context, torch.Tensor) and tuple(context.shape) == (batch, length, embed)
            and isinstance(weights, torch.Tensor) and tuple(weights.shape) == (batch, length, length)
        ):  # fmt: skip
            break
        answers.append((context, weights))
    if len(answers) == 2 and expect.largest_difference(answers[0][0], answers[1][0]) > 0:
        return student, answers[0]
    return expect.with_definitions(student, CORRECT_SDPA, "correct_sdpa"), None


def student_layer(
    student, rng, batch, length, embed, dtype=torch.float32, properties=False, state=None, x=None
):
    """The student's SimpleSelfAttention(embed) in eval mode, loaded with seeded weights, an input x
    and the student's own attention on its projections (see `layer_module`).

    Eval mode, as in exercise 4: an nn.Dropout that eval() switches off is fair; randomness that
    stays on in eval mode is the mistake `randomness_in_forward`. Weights the layer does not have
    are reported by `layer_structure`; here they are simply not loaded (strict=False). A check of a
    property (`properties`) takes a layer whose weights have other shapes with its own weights.
    """
    state = A.linear_weights(LAYERS, embed, embed, rng) if state is None else state
    x = torch.randn(batch, length, embed, generator=rng) if x is None else x
    module, own = layer_module(student, x, state)
    layer = module.SimpleSelfAttention(embed)
    if dtype == torch.float64:
        layer = layer.double()
        state = {key: value.double() for key, value in state.items()}
        x = x.double()
    state = expect.load_weights(layer, state, own_if_mismatched=properties)
    layer.eval()
    return layer, state, x, own


def run(layer, x, label="SimpleSelfAttention.forward(x)"):
    """(context, weights) of the layer, read as meant: the other order, or the context alone, taken
    for what they are (`layer_shapes` charges the order)."""
    batch, length, embed = x.shape
    return expect.pair_as_meant(layer(x), label, ((batch, length, embed), (batch, length, length)))


def expected_layer(state, x):
    q, k, v = (A.project(x, state, name) for name in LAYERS)
    return A.attention(q, k, v)


def layer_variants(state, x, before=None):
    """(context, weights) of SimpleSelfAttention as common mistakes compute it, keyed by diagnosis;
    `before`: an input the layer was called on first, whose projections a layer that keeps them
    between calls (a cache of k and v on the module, say) still uses."""
    q, k, v = (A.project(x, state, name) for name in LAYERS)
    right_c, right_w = A.attention(q, k, v)
    out = A.mistakes(q, k, v)
    if before is not None:
        q0, k0, v0 = (A.project(before, state, name) for name in LAYERS)
        out["layer_kept_between_calls"] = [A.attention(q, k0, v0), A.attention(q, k0, v), A.attention(q, k, v0),
                                           A.attention(q0, k0, v0)]  # fmt: skip
    del out["context_from_keys"]  # in the layer that is V taken from the key layer: named below
    shared = A.project(x, state, "query")
    out["shared_qkv"] = A.attention(shared, shared, shared)
    out["value_from_key"] = A.attention(q, k, k)
    out["no_projections"] = A.attention(x, x, x)
    out["value_not_projected"] = A.attention(q, k, x)
    out["query_or_key_not_projected"] = [A.attention(x, k, v), A.attention(q, x, v)]  # q = x, or k = x
    out["keys_values_swapped"] = A.attention(q, v, k)  # scaled_dot_product_attention(q, v, k)
    out["keys_from_projected_queries"] = A.attention(q, A.project(q, state, "key"), v)  # k = key(q)
    normed = torch.nn.functional.layer_norm(x.double(), x.shape[-1:])
    out["input_normalised"] = A.attention(*(A.project(normed, state, name) for name in LAYERS))
    out["query_key_swapped"] = A.attention(k, q, v)  # q from the key layer, k from the query layer
    out["keys_from_queries"] = A.attention(q, q, v)  # k from the query layer as well
    out["relu_after_projections"] = A.attention(q.relu(), k.relu(), v.relu())
    out["residual_added"] = (right_c + x.double(), right_w)
    batch, length, embed = x.shape
    joined = [t.reshape(1, batch * length, embed) for t in (q, k, v)]  # every token of the batch at once
    joined_c, joined_w = A.attention(*joined)  # (1, B·L, E), (1, B·L, B·L)
    joined_c = joined_c.reshape(batch, length, embed)
    out["attends_across_batch"] = [(joined_c, joined_w), (joined_c, joined_w[0]), (joined_c, right_w)]
    for mistake in ("weight_not_transposed", "missing_bias"):
        q2, k2, v2 = (A.project(x, state, name, mistake=mistake) for name in LAYERS)
        out[mistake] = A.attention(q2, k2, v2)
    out["transposed_weights"] = (right_c, right_w.transpose(-2, -1))  # (B, L, L): the shape hides it
    return out


def over_batch_axis(batch: int, length: int) -> dict[str, tuple[int, int, int]]:
    """The weights' shape when the attention runs over the batch axis (x transposed to (L, B, E), as
    if the layer were sequence-first): (L, B, B), where it differs from (B, L, L)."""
    return {"attention_over_batch_axis": (length, batch, batch)} if batch != length else {}


def compare_layer(layer, state, x, own, expected=None, evidence=None):
    """Weights, then context, against `expected` (default: the formula) or the student's own
    attention (`own`); an output no known mistake explains is localised by the weights. The layer
    is called on another input first: its output must be that of the current input all the same."""
    before = x.flip(1) + 1  # same shape, other values
    run(layer, before)
    context, weights = run(layer, x)
    batch, length = x.shape[:2]
    if isinstance(weights, torch.Tensor) and tuple(weights.shape) in over_batch_axis(batch, length).values():
        expect.tensor(
            weights, "weights", (batch, length, length), shape_variants=over_batch_axis(batch, length)
        )
    expected_c, expected_w = expected if expected is not None else expected_layer(state, x)
    own_c, own_w = own if own is not None else (None, None)
    variants = expect.once(partial(layer_variants, state, x, before))
    if evidence is not None and isinstance(weights, torch.Tensor) and weights.dim() == 3:
        evidence.heatmap("weights[0]", weights[0].double(), expected_w[0])
    joint_c = context if isinstance(context, torch.Tensor) else None
    joint_w = weights if isinstance(weights, torch.Tensor) else None
    where = [A.localised(own_w if own_w is not None else expected_w, joint_w, "layer_scores_wrong",
                         "layer_after_weights")]  # fmt: skip
    try:
        if weights is not None:  # the context alone is judged on its own (`layer_shapes` charges the rest)
            expect.close(weights, expected_w, "weights", readings=[own_w], joint=joint_c,
                         variants=A.swapped(variants), estimators=where)  # fmt: skip
        expect.close(context, expected_c, "context", readings=[own_c], joint=joint_w, variants=variants,
                     estimators=where)  # fmt: skip
    except CheckFailed as exc:  # wrong at this call: is it the layer changing itself from call to call?
        if exc.diagnosis in (None, "layer_scores_wrong", "layer_after_weights") and changes_between_calls(
            layer, x
        ):
            exc.diagnosis, exc.diagnosis_params = "state_changes_between_calls", {}
        raise


def changes_between_calls(layer, x) -> bool:
    """Does the layer answer x twice differently, each call from the same random state? Then it
    keeps something on self that each call changes (not randomness, not the input)."""
    first, second = (run(layer, x)[0] for _ in range(2))
    if not all(isinstance(t, torch.Tensor) for t in (first, second)) or first.shape != second.shape:
        return False
    return expect.largest_difference(first, second) > 1e-6


ROWS_TEXT = Text(
    zh="注意力权重每一行（对所有键）应非负且和为 1；实际最小元素为 {low:.4g}，行和的范围是 [{sum_low:.4g}, {sum_high:.4g}]。",
    en="Each row of the attention weights (over the keys) should be non-negative and sum to 1; the smallest weight is {low:.4g} and row sums range over [{sum_low:.4g}, {sum_high:.4g}].",
)
NO_GRAD_TEXT = Text(
    zh="梯度没有传到 `{name}`：前向计算中断了计算图（例如 .detach()、.data、.numpy() 或 .item()）。",
    en="No gradient reaches `{name}`: the forward pass broke the autograd graph (.detach(), .data, .numpy() or .item()).",
)
WRONG_GRAD_TEXT = Text(
    zh="`{name}` 的梯度与你自己的前向计算不一致：沿一个随机方向，前向输出的变化率是 {numeric:.6g}，而你的梯度给出 {autograd:.6g}。计算图中有一部分没有被求导（例如 .detach() 或 .data）。",
    en="The gradient of `{name}` does not match your own forward pass: along a random direction your forward pass changes at a rate of {numeric:.6g}, your gradient says {autograd:.6g}. Part of the computation is cut off from autograd (.detach() or .data, for example).",
)
DETERMINISTIC_TEXT = Text(
    zh="eval 模式下同一个输入调用两次，输出不一致（最大差 {err:.3g}）：前向计算每次都应给出同样的结果。",
    en="In eval mode, two calls on the same input disagree (largest difference {err:.3g}): the forward pass must give the same answer every time.",
)
UNREGISTERED_TEXT = Text(
    zh="SimpleSelfAttention(6).double() 之后，前向计算把 float64 和 float32 混在一起：.double() 没有转换到你用到的某些层，它们不是注册过的子模块。",
    en="After SimpleSelfAttention(6).double(), the forward pass mixes float64 with float32: .double() did not"
    " reach some layers it uses, which are not registered sub-modules.",
)
LAYERS_TEXT = Text(
    zh="SimpleSelfAttention({embed}) 应有名为 query、key、value 的 nn.Linear({embed}, {embed}) 层；缺少或不对：{missing}。",
    en="SimpleSelfAttention({embed}) should have nn.Linear({embed}, {embed}) layers named query, key and value; missing or wrong: {missing}.",
)
NOT_SOFTMAX_TEXT = Text(
    zh="从你的权重中读不出“先缩放分数、再做 softmax”：它们不是 q·kᵀ 乘以某个系数后的 softmax。",
    en="Your weights are not a softmax of q·kᵀ times any factor, so no scaling before a softmax can be read off them.",
)
SCALE_TEXT = Text(
    zh="你的分数在 softmax 之前被乘以了 {got_scale}，应为 {expected_scale} = 1/√d_k（d_k = {d_k}）。",
    en="Your scores were multiplied by {got_scale} before the softmax; expected {expected_scale} = 1/√d_k (d_k = {d_k}).",
)

# ---------------------------------------------------------------- scaled_dot_product_attention


@check("sdpa_shapes")
def test_sdpa_shapes(student, rng):
    for shapes in SDPA_SHAPES + SIZE_ONE_SHAPES:
        q, k, v = qkv(rng, shapes)
        lead, length, keys = q.shape[:-2], q.shape[-2], k.shape[-2]
        shapes = ((*lead, length, v.shape[-1]), (*lead, length, keys))
        got = student.scaled_dot_product_attention(q, k, v)
        context, weights = expect.pair_in_order(got, "scaled_dot_product_attention(q, k, v)", shapes,
                                                ("context", "weights"))  # fmt: skip
        expect.tensor(weights, "weights", (*lead, length, keys), finite=False,
                      shape_variants={"transposed_weights": (*lead, keys, length)})  # fmt: skip
        over_queries = {"context_summed_over_queries": (*lead, keys, v.shape[-1])} if keys != length else {}
        expect.tensor(
            context, "context", (*lead, length, v.shape[-1]), finite=False, shape_variants=over_queries
        )


@check("sdpa_rows_sum_to_one")
def test_sdpa_rows_sum_to_one(student, rng):
    q, k, v = qkv(rng, SDPA_SHAPES[0])
    _, weights = call_sdpa(student, q, k, v)
    weights = expect.tensor(weights, "weights")  # its own shape: rows are its last dimension
    sums = weights.double().sum(-1)
    text = ROWS_TEXT.format(low=float(weights.min()), sum_low=float(sums.min()), sum_high=float(sums.max()))
    if not bool((weights >= 0).all()):  # negative weights: scores divided by a row sum, never exponentiated
        pair = call_sdpa(student, q, k, v)[0]
        joint = pair if isinstance(pair, torch.Tensor) else None
        found = expect.find_variant(weights, {"weights_not_exponentiated": unexponentiated(q, k, v, 1)}, 1e-4,
                                    1e-5, joint)  # fmt: skip
        expect.fail(text, found)
    expect.close(
        sums,
        torch.ones_like(sums),
        "weights.sum(-1)",
        atol=ROW_SUM_ATOL,
        variants=lambda: {
            **A.row_sum_variants(q, k, v),
            "softmax_divided_by_logsumexp": over_logsumexp(q, k, v, 1)[0].sum(-1),
        },  # fmt: skip
        estimators=[A.dropped_out(A.attention(q, k, v)[1], weights)],
    )


@check("sdpa_scaling")
def test_sdpa_scaling(student, rng, evidence):
    # d_k = 16, then d_k = 9 in the same run: a scale worked out once and kept (a global) shows at the second
    for shapes, earlier_dk in ((SDPA_SHAPES[0], None), (OTHER_DK_SHAPES, SDPA_SHAPES[0][0][-1])):
        scale_read_off(student, qkv(rng, shapes), evidence if earlier_dk is None else None, earlier_dk)


def scale_read_off(student, probe, evidence, earlier_dk):
    """Fail unless the weights at `probe` are a softmax of q·kᵀ/√d_k (see `sdpa_scaling`)."""
    q, k, v = probe
    context, weights = call_sdpa(student, q, k, v)
    expected_c, expected_w = A.attention(q, k, v)
    weights = expect.tensor(weights, "weights", finite=False)
    if evidence is not None and weights.shape == expected_w.shape:
        evidence.heatmap("weights[0]", weights[0].double(), expected_w[0])
    d_k = q.shape[-1]
    joint = context if isinstance(context, torch.Tensor) else None
    # scores of kᵀ made by reshape (charged by the value checks) still show their scale
    found = A.recovered_scale(weights, [A.scores(q, k, 1.0), reflowed_scores(q, k)])
    if found is None:  # the scale cannot be read off the weights: judge how the outputs move with d_k
        if scales_with_sqrt_dk(student, q, k, v) or scale_unobservable(student, q, k, v):
            return
        expect.close(weights, expected_w, "weights", variants=partial(A.weight_variants, q, k, v), joint=joint,
                     hint=NOT_SOFTMAX_TEXT)  # fmt: skip
        return  # the weights are the right ones, though too flat or too peaked to fit a scale to
    if abs(found * math.sqrt(d_k) - 1) > 1e-3:
        text = SCALE_TEXT.format(
            got_scale=A.as_fraction(found), expected_scale=f"1/{math.sqrt(d_k):.4g}", d_k=d_k
        )
        formula = expect.find_variant(weights, A.weight_variants(q, k, v), 1e-4, 1e-5, joint)  # V scaled, …
        if formula is not None:
            expect.fail(text, formula)
        named = {"no_scaling": 1.0, "divide_by_dk": 1 / d_k}
        if earlier_dk is not None:
            named["scale_kept_between_calls"] = 1 / math.sqrt(earlier_dk)
        diagnosis, params = A.scale_diagnosis(found, 1 / math.sqrt(d_k), "√d_k", named)
        expect.fail(text, diagnosis, **params)


def without_ones(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """`shape` with one of its size-1 axes removed, or all of them (what squeeze() leaves)."""
    out = [shape[:i] + shape[i + 1 :] for i, n in enumerate(shape) if n == 1]
    return out + [tuple(n for n in shape if n != 1)]


def unexponentiated(q, k, v, first: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(context, weights) (or (weights, context) with first=1) when the scores are divided by a row
    sum with no exponential: F.normalize(p=1) (the sum of their sizes) or their plain sum. Either
    is blind to the scale, so it is one mistake however the scores were scaled."""
    s, v64 = A.scores(q, k), v.double()
    out = []
    for w in (s / s.abs().sum(-1, keepdim=True), s / s.sum(-1, keepdim=True)):
        out.append((w @ v64, w) if first == 0 else (w, w @ v64))
    return out


def over_logsumexp(q, k, v, first: int = 0, dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """(context, weights) (or (weights, context) with first=1) when e^s is divided by logsumexp(s),
    the logarithm of the softmax's denominator, computed in `dtype` (the student's, on large scores)."""
    s = A.scores(q, k).to(dtype)
    w = (s.exp() / s.logsumexp(-1, keepdim=True)).double()
    return (w @ v.double(), w) if first == 0 else (w, w @ v.double())


def reflowed_scores(q, k) -> torch.Tensor:
    """q times k reshaped (not transposed) to (..., d_k, S), unscaled, in float64: the entries of k
    regrouped in memory order, so its columns are not the keys.   (..., L, S)"""
    return q.double() @ k.double().reshape(*k.shape[:-2], k.shape[-1], k.shape[-2])


def reflowed(q, k, v, scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(context, weights) with kᵀ made by reshape/view instead of transpose, scaled by 1/√d_k."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    weights = torch.softmax(reflowed_scores(q, k) * scale, dim=-1)
    return weights @ v.double(), weights


def sdpa_variants(q, k, v, earlier_dk=None) -> dict:
    """What the known mistakes give at (q, k, v), scores clamped before the softmax included;
    `earlier_dk`: the d_k of an earlier call, whose scale a scale kept between calls still uses."""
    kept = A.attention(q, k, v, scale=1 / math.sqrt(earlier_dk)) if earlier_dk else None
    right_w = A.attention(q, k, v)[1]
    over_queries = (
        right_w.sum(-2)[..., None] * v.double(),
        right_w,
    )  # (..., S, d_v): summed over the queries
    return {**A.context_variants(q, k, v), "scores_clipped": clipped(q, k, v),
            "context_summed_over_queries": over_queries,
            "weights_not_exponentiated": unexponentiated(q, k, v),
            "softmax_divided_by_logsumexp": over_logsumexp(q, k, v),
            "keys_reshaped_not_transposed": reflowed(q, k, v), "scale_kept_between_calls": kept}  # fmt: skip


def sdpa_weight_variants(q, k, v) -> dict:
    """`sdpa_variants` for a check of the weights, joint with the context."""
    return {**A.weight_variants(q, k, v), "weights_not_exponentiated": unexponentiated(q, k, v, 1),
            "softmax_divided_by_logsumexp": over_logsumexp(q, k, v, 1),
            "keys_reshaped_not_transposed": A.swapped({"": reflowed(q, k, v)})[""]}  # fmt: skip


@check("sdpa_matches_oracle")
def test_sdpa_matches_oracle(student, rng):
    probes = [qkv(rng, shapes) for shapes in SDPA_SHAPES] + [
        wide_score_inputs(rng),
        qkv(rng, OTHER_DK_SHAPES),
    ]
    for i, (q, k, v) in enumerate(probes):
        context, weights = call_sdpa(student, q, k, v)
        joint = weights if isinstance(weights, torch.Tensor) else None
        right_w = A.attention(q, k, v)[1]
        where = A.localised(right_w, joint, "sdpa_before_softmax", "sdpa_after_softmax")
        earlier = {probe[0].shape[-1] for probe in probes[:i]} - {q.shape[-1]}  # d_k of earlier calls
        variants = partial(sdpa_variants, q, k, v, earlier.pop() if len(earlier) == 1 else None)
        expect.close(context, A.attention_oracle(q, k, v), "context", variants=variants,
                     joint=joint, estimators=[A.scale_estimator_via_weights(joint, q, k, v), where,
                                              A.dropped_out(right_w, joint)])  # fmt: skip


@check("sdpa_matches_reference")
def test_sdpa_matches_reference(student, reference, rng):
    for shapes in HIDDEN_SHAPES:
        q, k, v = qkv(rng, shapes)
        context, weights = call_sdpa(student, q, k, v)
        expected_c, expected_w = reference.scaled_dot_product_attention(q.double(), k.double(), v.double())
        joint_c = context if isinstance(context, torch.Tensor) else None
        joint_w = weights if isinstance(weights, torch.Tensor) else None
        raw = A.scores(q, k, 1.0)
        where = A.localised(expected_w, joint_w, "sdpa_before_softmax", "sdpa_after_softmax")
        for name, got, expected in (("weights", joint_w, expected_w), ("context", joint_c, expected_c)):
            squeezed = without_ones(tuple(expected.shape))
            if got is not None and tuple(got.shape) in squeezed:  # a size-1 axis (B = 1, L = 1) squeezed
                expect.tensor(got, name, tuple(expected.shape), finite=False,
                              shape_variants={"missing_axis": squeezed})  # fmt: skip
        expect.close(weights, expected_w, "weights", variants=partial(sdpa_weight_variants, q, k, v), joint=joint_c,
                     estimators=[A.scale_estimator(raw, 1 / math.sqrt(q.shape[-1])), where,
                                 A.dropped_out(expected_w, joint_w)])  # fmt: skip
        expect.close(context, expected_c, "context", variants=partial(sdpa_variants, q, k, v), joint=joint_w,
                     estimators=[where])  # fmt: skip


def large_score_mistakes(q, k, v) -> dict:
    """`A.mistakes`, with a softmax shifted by each row's mean (float32, as the student's code runs)
    beside the one shifted by its minimum: either shift leaves exp() unbounded on large scores."""
    out = A.mistakes(q, k, v)
    s = A.scores(q, k).float()
    e = torch.exp(s - s.mean(-1, keepdim=True))
    row_mean = (e / e.sum(-1, keepdim=True)).double()
    out["row_min_softmax"] = [out["row_min_softmax"], (row_mean @ v.double(), row_mean)]
    e = torch.exp(s)  # float32: log(sum(exp(s))) written out overflows where logsumexp does not
    by_hand = (e / torch.log(e.sum(-1, keepdim=True))).double()
    out["softmax_divided_by_logsumexp"] = [
        over_logsumexp(q, k, v, dtype=torch.float32),
        (by_hand @ v.double(), by_hand),
    ]
    return out


@check("sdpa_large_scores")
def test_sdpa_large_scores(student, rng):
    q, k, v = large_score_inputs(rng)
    context, weights = call_sdpa(student, q, k, v)
    mistakes = expect.once(partial(large_score_mistakes, q, k, v))
    for name, got, index in (("weights", weights, 1), ("context", context, 0)):
        expect.finite(expect.tensor(got, name, finite=False), name,
                      variants=A.picked(mistakes, index))  # fmt: skip
    usual, _ = call_sdpa(student, *qkv(rng, SDPA_SHAPES[0]))
    expect.responds(expect.tensor(context, "context", finite=False), expect.tensor(usual, "context", finite=False),
                    "context")  # fmt: skip


@check("sdpa_gradients")
def test_sdpa_gradients(student, rng):
    q, k, v = qkv(rng, SDPA_SHAPES[0], torch.float64)
    returned = student.scaled_dot_product_attention(q, k, v)
    context = expect.pair_as_meant(returned, "scaled_dot_product_attention(q, k, v)",
                                   ((2, 5, 3), (2, 5, 7)))[0]  # fmt: skip
    context = expect.tensor(context, "context", finite=False)
    g_context = torch.randn(context.shape, generator=rng, dtype=torch.float64)  # their own output's shape
    with expect.known_errors(BACKWARD_ERRORS):
        result = expect.vjp(student.scaled_dot_product_attention, [q, k, v], [0, 1, 2],
                            expect.cotangents_for(returned, context, g_context))  # fmt: skip

        def forward(values):
            return call_sdpa(student, values["q"], values["k"], values["v"])[0]

        grads = dict(zip("qkv", result["input_grads"], strict=True))
        expect.gradients_match_forward(forward, {"q": q, "k": k, "v": v}, grads, g_context, rng,
                                       missing=NO_GRAD_TEXT, wrong=WRONG_GRAD_TEXT)  # fmt: skip


# ---------------------------------------------------------------- SimpleSelfAttention


def unregistered_layers(student, rng) -> bool:
    """A layer that runs in float32 but mixes dtypes once `.double()` converted it: some layers it
    uses are not registered sub-modules (kept in a plain dict or list), so `.double()` (like `.to()`,
    `parameters()` and `load_state_dict`) never reached them. Only where some of query, key, value
    are not registered nn.Linear layers: a cast inside the forward pass mixes dtypes too."""
    info = expect.introspect(student.SimpleSelfAttention(6))
    if all((info.get("linear", {}).get(name) or [None, None])[:2] == [6, 6] for name in LAYERS):
        return False
    try:
        layer, _, x, _ = student_layer(student, rng, 2, 5, 6, properties=True)
        layer(x)
    except StudentFault:
        return False
    try:
        layer, _, x, _ = student_layer(student, rng, 2, 5, 6, dtype=torch.float64, properties=True)
        layer(x)
    except StudentCodeError as exc:
        return re.search(COMMON_ERRORS["float64_mixed_with_float32"], exc.message) is not None
    except StudentFault:
        return False
    return False


@check("layer_structure")
def test_layer_structure(student, rng):
    embed = 6
    info = expect.introspect(student.SimpleSelfAttention(embed))
    missing = [  # confirmed layers; with or without a bias (a missing bias is charged by the values)
        name for name in LAYERS if (info["linear"].get(name) or [None, None])[:2] != [embed, embed]
    ]
    unregistered = bool(missing) and info.get("is_nn_module", False) and unregistered_layers(student, rng)
    expect.true(info.get("is_nn_module", False) and not missing,
                LAYERS_TEXT.format(embed=embed, missing=", ".join(missing) or "nn.Module"),
                "layers_not_registered" if unregistered else None)  # fmt: skip


@check("layer_shapes")
def test_layer_shapes(student, rng):
    for batch, length, embed in [(2, 5, 6), *LAYER_SIZE_ONE]:
        layer, _, x, _ = student_layer(student, rng, batch, length, embed, properties=True)
        shapes = ((batch, length, embed), (batch, length, length))
        context, weights = expect.pair_in_order(
            layer(x), "SimpleSelfAttention.forward(x)", shapes, ("context", "weights")
        )
        expect.tensor(context, "context", (batch, length, embed), finite=False)
        expect.tensor(weights, "weights", (batch, length, length), finite=False,
                      shape_variants=over_batch_axis(batch, length))  # fmt: skip


@check("layer_matches_oracle")
def test_layer_matches_oracle(student, rng, evidence):
    layer, state, x, own = student_layer(student, rng, 2, 5, 16)
    compare_layer(layer, state, x, own, evidence=evidence)


@check("layer_matches_reference")
def test_layer_matches_reference(student, reference, rng):
    layer, state, x, own = student_layer(student, rng, 3, 4, 10)
    trusted = reference.SimpleSelfAttention(10).double()
    trusted.load_state_dict({k: v.double() for k, v in state.items()})
    with torch.no_grad():
        expected = trusted(x.double())
    compare_layer(layer, state, x, own, expected)


@check("layer_batch_independence")
def test_layer_batch_independence(student, rng):
    _, state, x, _ = student_layer(student, rng, 3, 4, 6, properties=True)

    def forward(inputs):  # a new layer for each call: one that changes itself is `layer_deterministic`'s
        return run(student_layer(student, rng, 3, 4, 6, properties=True, state=state, x=inputs)[0], inputs)[0]

    expect.batch_independent(forward, x, rng, "context")


@check("layer_gradients")
def test_layer_gradients(student, rng):
    layer, state, x, _ = student_layer(student, rng, 2, 5, 6, dtype=torch.float64, properties=True)
    try:
        returned = layer(x)
    except StudentCodeError as exc:  # float64 meeting float32: a layer .double() did not reach?
        if re.search(COMMON_ERRORS["float64_mixed_with_float32"], exc.message) and unregistered_layers(
            student, rng
        ):
            expect.fail(UNREGISTERED_TEXT, "layers_not_registered")
        raise
    context = expect.pair_as_meant(returned, "SimpleSelfAttention.forward(x)", ((2, 5, 6), (2, 5, 5)))[0]
    context = expect.tensor(context, "context", finite=False)
    g_context = torch.randn(context.shape, generator=rng, dtype=torch.float64)
    with expect.known_errors(BACKWARD_ERRORS):
        result = expect.vjp(layer, [x], [0], expect.cotangents_for(returned, context, g_context))

        def forward(values):
            layer.load_state_dict({k: values[k] for k in state}, strict=False)
            return run(layer, values["x"])[0]

        grads = {"x": result["input_grads"][0], **result["param_grads"]}
        point = {"x": x, **state}
        try:
            expect.gradients_match_forward(forward, point, grads, g_context, rng,
                                           missing=NO_GRAD_TEXT, wrong=WRONG_GRAD_TEXT)  # fmt: skip
        except CheckFailed as exc:  # the forward pass it differentiates changes from call to call?
            fresh = student_layer(
                student, rng, 2, 5, 6, dtype=torch.float64, properties=True, state=state, x=x
            )[0]
            if exc.diagnosis in (None, "no_gradient") and changes_between_calls(fresh, x):
                exc.diagnosis, exc.diagnosis_params = "state_changes_between_calls", {}
            raise


@check("layer_deterministic")
def test_layer_deterministic(student, rng):
    layer, _, x, _ = student_layer(student, rng, 2, 5, 6, properties=True)
    with expect.fresh_draws(layer):
        first, second = (expect.tensor(run(layer, x)[0], "context", finite=False) for _ in range(2))
    err = expect.largest_difference(first, second)
    if err > 1e-6:  # again, each call from the same random state: what still differs is kept on self
        third, fourth = (expect.tensor(run(layer, x)[0], "context", finite=False) for _ in range(2))
        drift = expect.largest_difference(third, fourth) > 1e-6
        expect.fail(
            DETERMINISTIC_TEXT.format(err=err),
            "state_changes_between_calls" if drift else "randomness_in_forward",
        )
    other = expect.tensor(run(layer, x.flip(1) + 1)[0], "context", finite=False)
    expect.responds(first, other, "context")
