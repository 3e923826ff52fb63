"""Checks for exercise 4: SimpleMultiHeadAttention.

Configurations keep every dimension different (B ≠ L ≠ E ≠ H ≠ d_k, and E ≠ H² so that √E ≠ d_k)
so that a wrong split, merge or scale cannot hide. The independent oracle is torch's own
nn.MultiheadAttention with the student's weights copied in; the gradients are checked against the
float64 formula of graders/multihead.py, which a test proves equal to that oracle.
"""

import itertools
import math
from contextlib import contextmanager
from functools import partial

import torch

from graders import attention as A
from graders import multihead as M
from graders.harness import Text, check
from graders.harness.core import expect
from graders.harness.core.errors import CheckFailed, StudentCodeError

# (B, L, E, H): d_k = 4, then d_k = 6
CONFIGS = [(2, 5, 12, 3), (3, 7, 12, 2)]
HIDDEN_CONFIGS = [(3, 4, 10, 5), (1, 6, 8, 4)]
BAD_SPLITS = [(10, 3), (12, 5), (6, 4)]
ROW_SUM_ATOL = 1e-3  # a softmax computed in half precision still sums to one within this
BACKWARD_ERRORS = {"inplace_breaks_backward": r"modified by an inplace operation"}
KNOWN_ERRORS = {
    "valid_split_rejected": r"(?s)^ValueError: .*\n.*\braise ValueError\b",  # every size the checks use is valid
    "view_not_contiguous": r"view size is not compatible with input tensor's size and stride",
    # a tensor's .T (a layer's 2-D weight.T is right: a bias column beside it is named below)
    "bias_as_column": r"(?s)RuntimeError.*\n[^\n]*\bbias(\[:, ?None\]|\.unsqueeze\((-1|1)\)|\.(view|reshape)\(-1, ?1\))",
    "k_transpose_batched": r"(?s)RuntimeError.*\n.*\b(?!weight\b)[A-Za-z_]\w*\.T\b",
    # the keys transposed with fixed axes (1, 2) in the product: on (B, H, L, d_k) that swaps H and L
    "transpose_fixed_dims": r"(?s)(RuntimeError|IndexError).*\n[^\n]*((@|matmul)[^\n]*\.transpose\(1, ?2\)"
    r"|\.transpose\(1, ?2\)[^\n]*(@|matmul))",
    # out_proj (E → E) given a tensor of another width: the heads' outputs not merged back to E features
    "heads_not_merged": r"(?s)mat1 and mat2 shapes cannot be multiplied[^\n]*\n[^\n]*\bout_proj\b",
    # the split's 4-D view cannot hold the projection: not B·L·E numbers (a projection to d_k, say)
    # the grader's (E, E) weights loaded into a query, key or value of another width
    "projection_width_wrong": r"size mismatch for (query|key|value)\.weight: copying a param with shape",
    "split_view_invalid": r"shape '\[\d+, \d+, \d+, -?\d+\]' is invalid for input of size \d+",
    # a split view(B, -1, H, 0): the head size an integer division by H of a number smaller than H
    "head_size_zero": r"shape '\[\d+, -1, \d+, 0\]' is invalid for input of size \d+",
}
LARGE_SCORE = 1000.0  # the largest scaled score of the large-score check: exp() overflows even in float64


def student_layer(
    student, rng, batch, length, embed, heads, dtype=torch.float32, state=None, x=None, properties=False
):
    """The student's SimpleMultiHeadAttention(embed, heads) in eval mode with seeded weights (or
    `state`), and x. Weights the layer does not have are reported by `mha_structure`; here they are
    simply not loaded (strict=False); a check of a property (`properties`) takes a layer whose
    weights have other shapes with its own weights."""
    layer = student.SimpleMultiHeadAttention(embed, heads)
    state = A.linear_weights(M.LAYERS, embed, embed, rng) if state is None else state
    x = torch.randn(batch, length, embed, generator=rng) if x is None else x
    if dtype == torch.float64:
        layer = layer.double()
        state = {key: value.double() for key, value in state.items()}
        x = x.double()
    given = renamed_to_own_layers(layer, state, embed, x, heads)
    loaded = expect.load_weights(layer, given, own_if_mismatched=properties)
    layer.eval()
    # a value check compares under the grader's names; a property check reads the weights as the layer holds them
    return layer, (state if loaded is given and not properties else loaded), x


def renamed_to_own_layers(layer, state, embed, x, heads):
    """`state` under the names of the layer's own nn.Linear(E, E) layers where it lacks some of
    query, key, value, out_proj (the projections kept in an nn.ModuleList, say): the maths is then
    judged on the student's own projections with the grader's weights, and the names are charged
    once, by `mha_structure`. Of the ways to match the missing names with the unclaimed (E, E)
    layers, the one whose output is nearest the formula's is taken (declaration order on a tie)."""
    own = layer.state_dict()
    missing = [n for n in M.LAYERS if f"{n}.weight" not in own]
    spare = [
        key[: -len(".weight")]
        for key, t in own.items()
        if key.endswith(".weight")
        and isinstance(t, torch.Tensor)
        and tuple(t.shape) == (embed, embed)
        and key[: -len(".weight")] not in M.LAYERS
    ]
    if not missing or len(spare) != len(missing) or len(spare) > 4:
        return state
    if any(f"{n}.weight" not in state for n in missing):  # the layer's own weights, already its names
        return state
    candidates = []
    for order in itertools.permutations(spare):
        mapped = {k: v for k, v in state.items() if k.split(".")[0] not in missing}
        for name, own_name in zip(missing, order, strict=True):
            mapped[f"{own_name}.weight"] = state[f"{name}.weight"]
            if f"{own_name}.bias" in own and f"{name}.bias" in state:
                mapped[f"{own_name}.bias"] = state[f"{name}.bias"]
        candidates.append(mapped)
    if len(candidates) == 1:
        return candidates[0]
    expected = M.forward(x, state, heads)[0]
    best, best_err = candidates[0], math.inf
    for mapped in candidates:
        try:
            layer.load_state_dict(mapped, strict=False)
            out = layer(x.to(next(iter(mapped.values())).dtype))
        except StudentCodeError:
            continue
        out = out[0] if isinstance(out, (tuple, list)) and out else out
        if isinstance(out, torch.Tensor) and out.shape == expected.shape:
            err = expect.largest_difference(out.double(), expected)
            if err < best_err:
                best, best_err = mapped, err
    return best


def held_weights(layer, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor] | None:
    """The weights `layer` holds right after `state` was loaded, where some differ from `state`:
    one nn.Linear under several names (`self.query = self.key = self.value = nn.Linear(E, E)`)
    keeps only the last name's weights in all of them. None where it holds what it was given.
    Read before any call, so a forward pass that rewrites its weights is not mistaken for this."""
    try:
        own = layer.state_dict()
    except StudentCodeError:
        return None
    held = {
        k: own[k] for k in state if isinstance(own.get(k), torch.Tensor) and own[k].shape == state[k].shape
    }
    changed = [k for k, v in held.items() if not torch.equal(v.to(state[k].dtype), state[k])]
    return {**state, **{k: held[k].to(state[k].dtype) for k in changed}} if changed else None


def aliased_names(student, embed: int, heads: int, rng) -> list[str]:
    """Names of LAYERS that a new layer holds as one shared nn.Linear: given distinct weights, it
    keeps another name's under them."""
    layer = student.SimpleMultiHeadAttention(embed, heads)
    state = A.linear_weights(M.LAYERS, embed, embed, rng)
    try:
        layer.load_state_dict(state, strict=False)
    except StudentCodeError:
        return []
    held = held_weights(layer, state) or state
    return [n for n in M.LAYERS if not torch.equal(held[f"{n}.weight"], state[f"{n}.weight"])]


def unreadable_layouts(batch: int, length: int, embed: int, heads: int) -> dict[str, tuple[int, ...]]:
    """Shapes of the weights that no reading turns into every head's weights: heads split along the
    wrong axes (attention then runs over something other than the tokens), or one batch element's."""
    head_dim = embed // heads
    # the head size computed from the sequence length, t.size(1) // H: view(B, -1, H, L // H) reflows
    # tokens and features into heads of L // H features each
    from_length = length // heads
    reflowed = {}
    if from_length >= 1 and from_length != head_dim and length * embed % (heads * from_length) == 0:
        rows = length * embed // (heads * from_length)
        reflowed = {"head_size_from_length": (batch, heads, rows, rows)}
    return {
        **reflowed,
        "split_dims_swapped": (batch, head_dim, length, length),
        "heads_not_moved": (batch, length, heads, heads),
        "split_transposed_wrong_axes": (batch, length, head_dim, head_dim),
        **({"weights_of_first_element": (heads, length, length)} if batch > 1 else {}),
    }


def reflowed_readings(x, state, shape) -> list[torch.Tensor]:
    """Unscaled scores for weights of `shape` (B, n, R, R) in another layout than (B, H, L, L): the
    projections (B, L, E) reflowed row-major into n heads of R rows, view(B, R, n, d).transpose(1, 2)
    and view(B, n, R, d) with d = L·E / (n·R), whatever the split (torch.split into pieces of H
    features, a head size read off the wrong axis). The scale such a layer used can be read against
    them: `mha_scaling` judges the scale, `mha_shapes` the layout."""
    batch, length, embed = x.shape
    if (
        len(shape) != 4
        or shape[0] != batch
        or shape[-1] != shape[-2]
        or length * embed % (shape[1] * shape[2])
    ):
        return []
    heads, rows = shape[1], shape[2]
    width = length * embed // (heads * rows)
    q, k = (A.project(x, state, name) for name in ("query", "key"))
    out = []
    for moved in (True, False):
        if moved:
            qh, kh = (t.reshape(batch, rows, heads, width).transpose(1, 2) for t in (q, k))
        else:
            qh, kh = (t.reshape(batch, heads, rows, width) for t in (q, k))
        out.append(A.scores(qh, kh, 1.0))
    return out


def name_unreadable_layout(weights: torch.Tensor | None, expected: tuple[int, ...], x, heads: int) -> None:
    """Fail naming the layout when `weights` has one of `unreadable_layouts`; else nothing."""
    layouts = unreadable_layouts(*x.shape, heads)
    if isinstance(weights, torch.Tensor) and tuple(weights.shape) in layouts.values():
        expect.tensor(weights, "weights", tuple(expected), finite=False, shape_variants=layouts)


def split_errors(batch: int, heads: int):
    """Name the broadcast error of a product between a tensor split into heads, (B, H, L, ·), and
    one never split, (B, L, ·): torch lines the second's B up with the first's H."""
    if 1 in (batch, heads) or batch == heads:
        return expect.known_errors({})
    pattern = rf"size of tensor a \({heads}\) must match the size of tensor b \({batch}\) at non-singleton dimension 1\b"
    return expect.known_errors({"tensor_not_split": pattern})


def run(layer, x, name="SimpleMultiHeadAttention.forward(x)", *, heads):
    """(output, weights) of the student's forward, read as meant: the other order, the output alone,
    the weights with the heads still folded into the batch or stacked in front of it, taken for
    what they are (`mha_shapes` charges the layout)."""
    batch, length, embed = x.shape
    with split_errors(batch, heads):
        got = layer(x)
    output, weights = expect.pair_as_meant(
        got, name, ((batch, length, embed), (batch, heads, length, length))
    )
    if isinstance(weights, torch.Tensor) and tuple(weights.shape) == (batch * heads, length, length):
        weights = weights.reshape(batch, heads, length, length)  # heads left folded into the batch
    if (
        isinstance(weights, torch.Tensor)
        and batch != heads
        and tuple(weights.shape) == (heads, batch, length, length)
    ):
        weights = weights.transpose(0, 1)  # the heads stacked in front of the batch
    if (
        isinstance(weights, torch.Tensor)
        and length != heads
        and tuple(weights.shape) == (batch, length, heads, length)
    ):
        weights = weights.transpose(1, 2)  # the tokens in front of the heads, (B, L, H, L)
    if isinstance(output, torch.Tensor) and batch != length and tuple(output.shape) == (length, batch, embed):
        output = output.reshape(batch, length, embed)  # the merge's reshape given the sizes swapped
    return output, weights


LAYERS_TEXT = Text(
    zh="SimpleMultiHeadAttention({embed}, {heads}) 应有名为 query、key、value、out_proj 的"
    " nn.Linear({embed}, {embed}) 层；缺少或不对：{missing}。",
    en="SimpleMultiHeadAttention({embed}, {heads}) should have nn.Linear({embed}, {embed}) layers"
    " named query, key, value and out_proj; missing or wrong: {missing}.",
)
BAD_SPLIT_TEXT = Text(
    zh="SimpleMultiHeadAttention({embed}, {heads})：{embed} 不能被 {heads} 整除，"
    "应抛出 ValueError，实际：{got}。",
    en="SimpleMultiHeadAttention({embed}, {heads}): {embed} is not divisible by {heads},"
    " so it should raise ValueError; instead: {got}.",
)
ROWS_TEXT = Text(
    zh="每个头的注意力权重应非负、每行（对所有键）和为 1；最小的权重是 {low:.4g}。",
    en="Each head's attention weights should be non-negative with every row (over the keys)"
    " summing to 1; the smallest weight is {low:.4g}.",
)
NO_GRAD_TEXT = Text(
    zh="梯度没有传到 `{name}`：前向计算中断了计算图（例如 .detach()、.data、.numpy() 或 .item()）。",
    en="No gradient reaches `{name}`: the forward pass broke the autograd graph"
    " (.detach(), .data, .numpy() or .item()).",
)
WRONG_GRAD_TEXT = Text(
    zh="`{name}` 的梯度与你自己的前向计算不一致：沿一个随机方向，前向输出的变化率是 {numeric:.6g}，"
    "而你的梯度给出 {autograd:.6g}。计算图中有一部分没有被求导（例如 .detach() 或 .data）。",
    en="The gradient of `{name}` does not match your own forward pass: along a random direction your"
    " forward pass changes at a rate of {numeric:.6g}, your gradient says {autograd:.6g}. Part of the"
    " computation is cut off from autograd (.detach() or .data, for example).",
)
NOT_SOFTMAX_TEXT = Text(
    zh="从你的权重中读不出“先缩放分数、再做 softmax”：它们不是 q·kᵀ 乘以某个系数后的 softmax。",
    en="Your weights are not a softmax of q·kᵀ times any factor, so no scaling before a softmax"
    " can be read off them.",
)
SCALE_TEXT = Text(
    zh="每个头的分数在 softmax 之前被乘以了 {got_scale}，应为 {expected_scale} = 1/√d_k（d_k = E/H = {head_dim}）。",
    en="Each head's scores were multiplied by {got_scale} before the softmax; expected {expected_scale}"
    " = 1/√d_k (d_k = E/H = {head_dim}).",
)
DETERMINISTIC_TEXT = Text(
    zh="eval 模式下同一个输入调用两次，输出不一致（最大差 {err:.3g}）：前向计算每次都应给出同样的结果。",
    en="In eval mode, two calls on the same input disagree (largest difference {err:.3g}):"
    " the forward pass must give the same answer every time.",
)
SIZES_KEPT_TEXT = Text(
    zh="同一个层先处理了另一种尺寸的输入，再处理形状为 {shape} 的 x 时出错（{got}），而新建的层能正确处理这个 x：第一次调用留下的东西（存在 self 上的批大小或长度等）被后来的调用沿用了。",
    en="The same layer, called first on an input of other sizes, then fails on x of shape {shape} ({got}),"
    " while a new layer handles that x: something of the first call (a batch size or a length stored"
    " on self) is reused by later calls.",
)
BY_HAND = expect.by_hand_rule(Text(zh="自己实现多头注意力", en="build multi-head attention yourself"))


def compare(layer, state, x, heads, expected_out, expected_w, evidence=None):
    """Weights first (they name split and scale mistakes), then the output (merge, out_proj), each
    joined by the other as evidence for naming."""
    held = held_weights(layer, state)
    output, weights = run(layer, x, heads=heads)
    pairs = expect.once(partial(M.variants, x, state, heads))
    if held is not None:  # one layer under several names: the weights it could hold name the mistake
        pairs = expect.once(lambda base=pairs: {**base(), "layers_aliased": M.forward(x, held, heads)})
    if evidence is not None and isinstance(weights, torch.Tensor) and weights.shape == expected_w.shape:
        for head in range(weights.shape[1]):
            evidence.heatmap(f"weights[0, {head}]", weights[0, head].double(), expected_w[0, head])
    joint_out = output if isinstance(output, torch.Tensor) else None
    joint_w = weights if isinstance(weights, torch.Tensor) else None
    name_unreadable_layout(joint_w, tuple(expected_w.shape), x, heads)
    located = A.localised(expected_w, joint_w, "mha_scores_wrong", "mha_after_weights")
    expect.close(weights, expected_w, "weights", variants=A.swapped(pairs), joint=joint_out,
                 estimators=[M.scale_estimator(x, state, heads), located])  # fmt: skip
    expect.close(output, expected_out, "output", variants=pairs, joint=joint_w, estimators=[located])


def scales_with_sqrt_head_dim(student, rng, state, x, heads) -> bool:
    """Does each head see its scores as q·kᵀ/√d_k, whatever it does with them afterwards?

    A layer four times as wide whose heads are these heads padded with zeros (`multihead.widened`)
    has the same dot products and d_k four times as large, so its weights must be those of this
    layer with the queries halved; and halving the queries must change them (the weights depend on
    the scores at all). Holds for heads cut in the usual order; other splits are read off above.
    """
    batch, length, embed = x.shape
    halved = dict(state, **{f"query.{p}": state[f"query.{p}"] / 2 for p in ("weight", "bias")})
    plain_layer, _, _ = student_layer(student, rng, batch, length, embed, heads, state=state, x=x)
    half_layer, _, _ = student_layer(student, rng, batch, length, embed, heads, state=halved, x=x)
    wide_x = torch.cat([x, torch.zeros(batch, length, 3 * embed)], dim=-1)
    wide_layer, _, _ = student_layer(student, rng, batch, length, 4 * embed, heads, state=M.widened(state, heads),
                                     x=wide_x)  # fmt: skip
    plain, half, wide = (run(layer, inputs, heads=heads)[1]
                         for layer, inputs in ((plain_layer, x), (half_layer, x), (wide_layer, wide_x)))  # fmt: skip
    if not all(isinstance(w, torch.Tensor) for w in (plain, half, wide)) or half.shape != wide.shape:
        return False
    return expect.error_ratio(wide, half, 1e-4, 1e-5) <= 1 and expect.largest_difference(plain, half) > 1e-6


def called_again(student, layer, x, heads):
    """layer(x) for a layer already called on an input of other sizes. Where it raises, or returns
    other shapes, while a new layer answers x with the right ones, the layer kept something of its
    first call (the batch size or the length stored on self): named `sizes_kept_between_calls`."""
    batch, length, embed = x.shape
    wanted = [(batch, length, embed), (batch, heads, length, length)]

    def shapes(got):
        return (
            [tuple(t.shape) if isinstance(t, torch.Tensor) else None for t in got]
            if isinstance(got, (tuple, list))
            else None
        )

    got, error = None, None
    try:
        with split_errors(batch, heads):
            got = layer(x)
    except StudentCodeError as exc:
        error = exc
    if error is None and shapes(got) == wanted:
        return got
    fresh = student.SimpleMultiHeadAttention(embed, heads)
    fresh.eval()
    try:
        fresh_shapes = shapes(fresh(x))
    except StudentCodeError:
        fresh_shapes = None
    if fresh_shapes == wanted:
        got_text = (
            error.type_name if error is not None else ", ".join(map(str, shapes(got) or [type(got).__name__]))
        )
        text = SIZES_KEPT_TEXT.format(shape=tuple(x.shape), got=got_text)
        expect.fail(text, "sizes_kept_between_calls")
    if error is not None:
        raise error
    return got


@contextmanager
def named_if_changing(make_layer, x, heads, diagnoses=()):
    """A failure inside (unnamed, or named one of `diagnoses`) is named `state_changes_between_calls`
    when a new layer (`make_layer()`) answers x twice differently, each call from the same random
    state: the layer changes itself from call to call, which explains what the check saw."""
    try:
        yield
    except CheckFailed as exc:
        if exc.diagnosis is None or exc.diagnosis in diagnoses:
            layer = make_layer()
            first, second = (run(layer, x, heads=heads)[0] for _ in range(2))
            if (
                isinstance(first, torch.Tensor)
                and isinstance(second, torch.Tensor)
                and first.shape == second.shape
                and expect.largest_difference(first, second) > 1e-6
            ):
                exc.diagnosis, exc.diagnosis_params = "state_changes_between_calls", {}
        raise


@check("mha_structure")
def test_mha_structure(student, rng):
    embed, heads = 12, 3
    info = expect.introspect(student.SimpleMultiHeadAttention(embed, heads))
    missing = M.missing_layers(info, embed)
    text = LAYERS_TEXT.format(embed=embed, heads=heads, missing=", ".join(missing) or "nn.Module")
    linear = info.get("linear", {})
    one_head = [embed // heads, embed]  # [out, in] of nn.Linear(E, d_k): one head's width
    narrow = [n for n in missing if n != "out_proj" and (linear.get(n) or [None, None])[:2] == one_head]
    # layers of the right size under other names (an nn.ModuleList's qkv.0, qkv.1, …; q_proj …)
    others = [n for n, spec in linear.items() if n not in M.LAYERS and list(spec[:2]) == [embed, embed]]
    renamed = not narrow and others and len(others) >= len(missing)
    diagnosis = "projection_width_wrong" if narrow else "layers_named_otherwise" if renamed else None
    if (
        missing
        and info.get("is_nn_module", False)
        and not narrow
        and aliased_names(student, embed, heads, rng)
    ):
        diagnosis = "layers_aliased"  # the names exist, but some are one layer
    expect.true(info.get("is_nn_module", False) and not missing, text, diagnosis)


@check("mha_rejects_bad_split")
def test_mha_rejects_bad_split(student):
    for embed, heads in BAD_SPLITS:
        try:
            student.SimpleMultiHeadAttention(embed, heads)
            got = "no exception"
        except StudentCodeError as exc:
            if exc.type_name == "ValueError":
                continue
            got = exc.type_name
        expect.fail(BAD_SPLIT_TEXT.format(embed=embed, heads=heads, got=got), "bad_split_not_rejected",
                    embed=embed, heads=heads, got=got)  # fmt: skip


@check("mha_shapes")
def test_mha_shapes(student, rng):
    for batch, length, embed, heads in CONFIGS:
        layer, _, x = student_layer(student, rng, batch, length, embed, heads, properties=True)
        with split_errors(batch, heads):
            layer(x)
        # the same layer called again on other sizes: forward reads them off each input
        batch, length = batch + 2, length + 2  # B ≠ H ≠ L still
        x = torch.randn(batch, length, embed, generator=rng)
        shapes = ((batch, length, embed), (batch, heads, length, length))
        got = called_again(student, layer, x, heads)
        output, weights = expect.pair_in_order(got, "SimpleMultiHeadAttention.forward(x)", shapes,
                                               ("output", "weights"))  # fmt: skip
        layouts = {"weights_averaged": (batch, length, length),
                   "heads_folded_into_batch": (batch * heads, length, length),
                   "sequence_first": (length, heads, batch, batch), **unreadable_layouts(batch, length, embed, heads)}  # fmt: skip
        expect.tensor(
            weights, "weights", (batch, heads, length, length), finite=False, shape_variants=layouts
        )
        expect.tensor(output, "output", (batch, length, embed), finite=False,
                      shape_variants={"output_batch_length_swapped": (length, batch, embed)})  # fmt: skip


@check("mha_rows_sum_to_one")
def test_mha_rows_sum_to_one(student, rng):
    batch, length, embed, heads = CONFIGS[0]
    layer, state, x = student_layer(student, rng, batch, length, embed, heads, properties=True)
    _, weights = run(layer, x, heads=heads)
    weights = expect.tensor(weights, "weights")  # its own shape: rows are its last dimension
    expect.true(bool((weights >= 0).all()), ROWS_TEXT.format(low=float(weights.min())))
    sums = weights.double().sum(-1)
    ours = all(state.get(f"{n}.weight", torch.empty(0)).shape == (embed, embed) for n in M.LAYERS)
    variants = (
        {d: A.each(w, lambda t: t.sum(-1)) for d, w in A.picked(M.variants(x, state, heads), 1).items()}
        if ours
        else {}
    )
    expect.close(sums, torch.ones_like(sums), "weights.sum(-1)", atol=ROW_SUM_ATOL, variants=variants)


@check("mha_scaling")
def test_mha_scaling(student, rng, evidence):
    batch, length, embed, heads = CONFIGS[0]
    layer, state, x = student_layer(student, rng, batch, length, embed, heads)
    state = held_weights(layer, state) or state  # the scale is judged on the weights the layer holds
    output, weights = run(layer, x, heads=heads)
    expected = M.forward(x, state, heads)[1]
    weights = expect.tensor(weights, "weights", finite=False)
    if weights.shape == expected.shape:
        evidence.heatmap("weights[0, 0]", weights[0, 0].double(), expected[0, 0])
    head_dim = embed // heads
    joint = output if isinstance(output, torch.Tensor) else None
    found = A.recovered_scale(weights, M.score_readings(x, state, heads))
    if found is None and weights.shape != expected.shape:  # another layout: its scale, read in that layout
        found = A.recovered_scale(weights, reflowed_readings(x, state, tuple(weights.shape)))
    if found is None:  # the scale cannot be read off the weights: judge how they move with d_k
        if scales_with_sqrt_head_dim(student, rng, state, x, heads):
            return
        name_unreadable_layout(weights, tuple(expected.shape), x, heads)  # no scale to read off those
        averaged = expected.mean(1)  # the right weights, averaged over the heads: the scale is right
        expect.close(weights, expected, "weights", variants=A.swapped(partial(M.variants, x, state, heads)), joint=joint,
                     readings=[averaged], hint=NOT_SOFTMAX_TEXT)  # fmt: skip
        return  # the weights are the right ones, though too flat or too peaked to fit a scale to
    if abs(found * math.sqrt(head_dim) - 1) > 1e-3:
        named = {
            "no_scaling": 1.0,
            "scale_sqrt_embed": 1 / math.sqrt(embed),
            "divide_by_head_dim": 1 / head_dim,
        }
        diagnosis, params = A.scale_diagnosis(found, 1 / math.sqrt(head_dim), "√(E/H)", named)
        text = SCALE_TEXT.format(got_scale=A.as_fraction(found), expected_scale=f"1/{math.sqrt(head_dim):.4g}",
                                 head_dim=head_dim)  # fmt: skip
        expect.fail(text, diagnosis, **params)


@check("mha_matches_oracle")
def test_mha_matches_oracle(student, rng, evidence):
    for i, (batch, length, embed, heads) in enumerate(CONFIGS):
        layer, state, x = student_layer(student, rng, batch, length, embed, heads)
        expected_out, expected_w = M.torch_oracle(x, state, heads)
        compare(layer, state, x, heads, expected_out, expected_w, evidence if i == 0 else None)


@check("mha_matches_reference")
def test_mha_matches_reference(student, reference, rng):
    for batch, length, embed, heads in HIDDEN_CONFIGS:
        layer, state, x = student_layer(student, rng, batch, length, embed, heads)
        trusted = reference.SimpleMultiHeadAttention(embed, heads).double().eval()
        trusted.load_state_dict({k: v.double() for k, v in state.items()})
        with torch.no_grad():
            expected_out, expected_w = trusted(x.double())
        compare(layer, state, x, heads, expected_out, expected_w)


@check("mha_batch_independence")
def test_mha_batch_independence(student, rng):
    batch, length, embed, heads = 3, 4, 12, 2
    _, state, x = student_layer(student, rng, batch, length, embed, heads, properties=True)

    def forward(inputs):  # a new layer for each call: one that changes itself is `mha_deterministic`'s
        layer = student_layer(
            student, rng, batch, length, embed, heads, state=state, x=inputs, properties=True
        )[0]
        return run(layer, inputs, heads=heads)[0]

    expect.batch_independent(forward, x, rng, "output")


@check("mha_gradients")
def test_mha_gradients(student, rng):
    batch, length, embed, heads = CONFIGS[0]
    layer, state, x = student_layer(
        student, rng, batch, length, embed, heads, dtype=torch.float64, properties=True
    )
    held = held_weights(layer, state)
    with split_errors(batch, heads):
        returned = layer(x)
    output = expect.pair_as_meant(returned, "SimpleMultiHeadAttention.forward(x)",
                                  ((batch, length, embed), (batch, heads, length, length)))[0]  # fmt: skip
    output = expect.tensor(output, "output", finite=False)
    g_out = torch.randn(output.shape, generator=rng, dtype=torch.float64)  # their own output's shape
    with expect.known_errors(BACKWARD_ERRORS):
        result = expect.vjp(layer, [x], [0], expect.cotangents_for(returned, output, g_out))

        def forward(values):
            layer.load_state_dict({k: values[k] for k in state}, strict=False)
            got = run(layer, values["x"], heads=heads)[0]
            if isinstance(got, torch.Tensor) and got.shape != output.shape and got.numel() == output.numel():
                return got.reshape(
                    output.shape
                )  # `run` reads swapped sizes as meant; the cotangent weighs it as returned
            return got

        grads = {"x": result["input_grads"][0], **result["param_grads"]}
        if held is not None:  # one layer under several names: perturb it once, by the name autograd gives it
            state = {k: held[k] for k in held if k in result["param_grads"]}

        def fresh():  # a new layer with the same weights: the calls above may have worn a change out
            return student_layer(student, rng, batch, length, embed, heads, dtype=torch.float64, state=state, x=x,
                                 properties=True)[0]  # fmt: skip

        with named_if_changing(fresh, x, heads, ("no_gradient",)):
            expect.gradients_match_forward(forward, {"x": x, **state}, grads, g_out, rng,
                                           missing=NO_GRAD_TEXT, wrong=WRONG_GRAD_TEXT)  # fmt: skip


@check("mha_deterministic")
def test_mha_deterministic(student, rng):
    batch, length, embed, heads = CONFIGS[0]
    layer, _, x = student_layer(student, rng, batch, length, embed, heads, properties=True)
    with expect.fresh_draws(layer):
        first, second = (
            expect.tensor(run(layer, x, heads=heads)[0], "output", finite=False) for _ in range(2)
        )
    err = expect.largest_difference(first, second)
    if err > 1e-6:  # again, each call from the same random state: what still differs is kept on self
        third, fourth = (
            expect.tensor(run(layer, x, heads=heads)[0], "output", finite=False) for _ in range(2)
        )
        drift = expect.largest_difference(third, fourth) > 1e-6
        expect.fail(
            DETERMINISTIC_TEXT.format(err=err),
            "state_changes_between_calls" if drift else "randomness_in_forward",
        )
    other = expect.tensor(run(layer, x.flip(1) + 1, heads=heads)[0], "output", finite=False)
    expect.responds(first, other, "output")


@check("mha_no_builtin_attention")
def test_mha_no_builtin_attention(student, built_by_hand, rng):
    expect.not_by_hand(built_by_hand.static(), BY_HAND)
    batch, length, embed, heads = CONFIGS[1]  # the point needs a module that runs, whatever it computes
    layer, _, x = student_layer(student, rng, batch, length, embed, heads, properties=True)
    output, weights = run(layer, x, heads=heads)
    expect.tensor(weights, "weights", finite=False)
    other = expect.tensor(run(layer, x.flip(1) + 1, heads=heads)[0], "output", finite=False)
    expect.responds(expect.tensor(output, "output", finite=False), other, "output")
    expect.not_by_hand(built_by_hand.tripwire(), BY_HAND)  # what ran: the static check cannot see everything


@check("mha_large_scores")
def test_mha_large_scores(student, rng):
    batch, length, embed, heads = CONFIGS[0]
    state, x = M.large_score_inputs(rng, batch, length, embed, heads, LARGE_SCORE)
    layer, state, x = student_layer(student, rng, batch, length, embed, heads, state=state, x=x)
    output, weights = run(layer, x, heads=heads)
    pairs = expect.once(partial(M.variants, x, state, heads))
    for name, got, index in (("weights", weights, 1), ("output", output, 0)):
        expect.finite(expect.tensor(got, name, finite=False), name,
                      variants=A.picked(pairs, index))  # fmt: skip
    usual = expect.tensor(
        run(layer, torch.randn(x.shape, generator=rng), heads=heads)[0], "output", finite=False
    )
    expect.responds(expect.tensor(output, "output", finite=False), usual, "output")
