"""Checks for exercise 5: causal_mask, masked_attention and CrossAttention.

Shapes keep every dimension different (L ≠ S, d_k ≠ d_v, B ≠ L ≠ E ≠ H) so that a transposition
cannot hide; masks are bool, True = may attend. The formula and the known mistakes live in
graders/masking.py; CrossAttention's oracle is torch's nn.MultiheadAttention with the student's
weights copied in.

Property checks (no leakage, broadcasting, permuting the memory, padding) judge the student's own
outputs. CrossAttention is graded with the student's own masked_attention (error carried
forward): its outputs may match the formula or what the student's masked_attention gives on the
layer's projections; where that function cannot answer at all, a correct one takes its place.
"""

import inspect
from functools import partial

import numpy as np
import torch

from graders import attention as A
from graders import masking as K
from graders import multihead as M
from graders.harness import Text, check
from graders.harness.core import expect
from graders.harness.core.diagnoses import COMMON_ERRORS
from graders.harness.core.errors import CheckFailed, StudentCodeError, StudentFault

# (q, k, v) shapes: leading batch dims, L ≠ S, d_k ≠ d_v
MASKED_SHAPES = [((2, 5, 16), (2, 7, 16), (2, 7, 3)), ((3, 2, 4, 8), (3, 2, 6, 8), (3, 2, 6, 5))]
CAUSAL_SHAPES = ((2, 6, 16), (2, 6, 16), (2, 6, 3))  # L = S: a causal mask is square
# (B, L, S, E, H): d_k = 4, then 6
CROSS_CONFIGS = [(2, 5, 7, 12, 3), (3, 4, 6, 12, 2)]
HIDDEN_MASKED = [((4, 9), (6, 9), (6, 2)), ((2, 3, 1, 8), (2, 3, 11, 8), (2, 3, 11, 7))]
HIDDEN_CROSS = [(1, 3, 8, 10, 5), (2, 6, 4, 8, 4)]
ATTEND = "masked_attention(q, k, v, mask)"
KNOWN_ERRORS = {
    # the mask given the scores' shape with view/reshape, which cannot repeat it over the axes it lacks
    "mask_reshaped_to_scores": r"(?s)shape '\[[^\]]*\]' is invalid for input of size \d+.*\n[^\n]*"
    r"(\b\w*mask\w*\s*\.\s*(view|reshape)\(|\breshape\(\s*\w*mask)",
    # a bool mask inverted with arithmetic (1 - mask, -mask): torch refuses it on bool tensors
    "mask_inverted_by_arithmetic": r"Subtraction, the `-` operator, with (a|two) bool tensors? (is|are) not supported"
    r"|Negation, the `-` operator, on a bool tensor is not supported",
    "mask_not_broadcast": r"shape of the mask .* does not match the shape of the indexed tensor",
    # a bool-only operation (where, masked_fill, ~) given a mask cast to float on its way
    "mask_cast_to_float": r"expected condition to be a boolean tensor, but got a tensor with dtype (Float|Double|Half)"
    r"|masked_fill_? only supports boolean masks, but got mask with dtype (float|double|half)"
    r"|\(operator\.invert\) is only implemented on integer and Boolean-type tensors",
    # autograd's error for a tensor backward needs (the softmax's output, say) written over in place
    "inplace_breaks_backward": r"modified by an inplace operation",
    # a mask that reached masked_fill or where as one Python bool (`mask is False`), not a bool tensor
    "mask_compared_as_object": r"masked_fill_?\(\) received an invalid combination of arguments - got \(bool,"
    r"|where\(\) received an invalid combination of arguments - got \(bool,"
    r"|argument 'condition' \(position 1\) must be Tensor, not bool",
}
CORRECT_MASKED = inspect.getsource(K.masked_attention)


def qkv(rng, shapes, dtype=torch.float32):
    return [torch.randn(s, generator=rng, dtype=dtype) for s in shapes]


def full(mask: torch.Tensor, shape) -> torch.Tensor:
    """`mask` expanded to `shape` as a tensor of its own (contiguous)."""
    return torch.broadcast_to(mask, shape).clone()


def lost_axis(q, k, mask):
    """Name the shape error of the mask reduced over the keys without keepdim, `mask.any(dim=-1)`:
    (..., L) where (..., L, 1) was meant, so broadcasting lines its axes up one place to the right of
    the scores' (..., L, S). The error torch gives for that pair of shapes (the first axis, from the
    right, where they differ) names it."""
    scores = (*q.shape[:-1], k.shape[-2])
    if not isinstance(mask, torch.Tensor) or mask.dim() < 1:
        return expect.known_errors({})
    try:
        scores = tuple(torch.broadcast_shapes(scores, tuple(mask.shape)))
    except RuntimeError:
        return expect.known_errors({})
    reduced = (1,) * (len(scores) - mask.dim() + 1) + tuple(mask.shape[:-1])  # right-aligned
    clash = next(((reduced[i], scores[i], i) for i in reversed(range(len(scores)))
                  if 1 not in (reduced[i], scores[i]) and reduced[i] != scores[i]), None)  # fmt: skip
    if clash is None:
        return expect.known_errors({})
    a, b, axis = clash
    pattern = "|".join(
        rf"size of tensor a \({x}\) must match the size of tensor b \({y}\) at non-singleton dimension {axis}\b"
        for x, y in ((a, b), (b, a))
    )
    return expect.known_errors({"reduced_without_keepdim": pattern})


def call_masked(student, q, k, v, mask, shapes=False):
    """(context, weights), read as meant: the other order, or the context alone, taken for what they
    are (`masked_shapes` charges the order). `shapes`: for a check that judges the outputs' shapes,
    which names the shape of a mask given an axis (`axis_added`)."""
    lead = q.shape[:-1]
    with lost_axis(q, k, mask):
        got = student.masked_attention(q, k, v, mask)
    if shapes:
        axis_added(got, q, k, v, mask)
    return expect.pair_as_meant(got, ATTEND, ((*lead, v.shape[-1]), (*lead, k.shape[-2])))


MASK_AXIS_TEXT = Text(
    zh="`{name}` 的形状应为 {expected}，实际是 {got}：正好是给掩码插入一个新维度（mask.unsqueeze({axis})）后再与分数广播得到的形状。",
    en="`{name}` should have shape {expected}, got {got}: exactly what the scores broadcast to once the mask"
    " gains a new axis (mask.unsqueeze({axis})).",
)


def axis_added(got, q, k, v, mask) -> None:
    """Fail, naming `mask_axis_added`, when an output of masked_attention has the shape the scores
    broadcast to against the mask with an axis inserted (mask.unsqueeze(1), mask[:, None]: a head
    axis added to a mask that already has the scores' shape, or one that broadcasts to it)."""
    if mask is None or not isinstance(got, (tuple, list)):
        return
    lead, keys = tuple(q.shape[:-1]), k.shape[-2]
    scores = (*lead, keys)
    for axis in range(mask.dim() + 1):
        try:
            wrong = tuple(torch.broadcast_shapes(mask.unsqueeze(axis).shape, scores))
        except RuntimeError:
            continue
        if wrong == scores:
            continue
        for item in got:
            shape = tuple(getattr(item, "shape", ()))
            for name, last in (("weights", keys), ("context", v.shape[-1])):
                if shape == (*wrong[:-1], last) and shape[-1] == last and len(shape) > len(scores):
                    expected = (*lead, last)
                    text = MASK_AXIS_TEXT.format(name=name, expected=expected, got=shape, axis=axis)
                    expect.fail(text, "mask_axis_added", name=name, got=shape, axis=axis)


def variants(q, k, v, mask) -> dict:
    """`K.variants`, and two mistakes of the rule itself: the weights multiplied by the COUNT of allowed
    keys (mask.sum(-1) where mask.any(-1) is meant), and the first or the last key made allowed for every
    query (mask[..., 0] = True, written to keep rows from being empty)."""
    out = K.variants(q, k, v, mask)
    if mask is None:
        return out
    right = K.attention(q, k, v, mask)
    context, weights = right
    count = torch.broadcast_to(mask, weights.shape).sum(dim=-1, keepdim=True).double()
    forced = []
    for key in (0, -1):
        opened = torch.broadcast_to(mask, weights.shape).clone()
        opened[..., key] = True
        forced.append(K.attention(q, k, v, opened))
    candidates = {
        "weights_times_count": ((weights * count) @ v.double(), weights * count),
        "key_forced_allowed": forced,
    }
    for diagnosis, pair in candidates.items():
        pairs = pair if isinstance(pair, list) else [pair]
        pairs = [one for one in pairs if not all(torch.equal(a, b) for a, b in zip(one, right, strict=True))]
        if pairs:
            out[diagnosis] = pairs
    return out


def compare_masked(student, q, k, v, mask, evidence=None):
    context, weights = call_masked(student, q, k, v, mask, shapes=True)
    expected_c, expected_w = K.attention(q, k, v, mask)
    pairs = expect.once(partial(variants, q, k, v, mask))
    if evidence is not None and isinstance(weights, torch.Tensor) and weights.shape == expected_w.shape:
        evidence.heatmap("weights[0]", weights[0].double(), expected_w[0])
    joint_c = context if isinstance(context, torch.Tensor) else None
    joint_w = weights if isinstance(weights, torch.Tensor) else None
    expect.close(weights, expected_w, "weights", variants=A.swapped(pairs), joint=joint_c)
    expect.close(context, expected_c, "context", variants=pairs, joint=joint_w)


# ---------------------------------------------------------------- CrossAttention, error carried forward


def projections(x, memory, state, heads):
    """q from x, k and v from memory, split into heads, in float32 as a layer computes them."""
    q = M.split_heads(A.project(x, state, "query"), heads).float()  # (B, H, L, d_k)
    k = M.split_heads(A.project(memory, state, "key"), heads).float()  # (B, H, S, d_k)
    v = M.split_heads(A.project(memory, state, "value"), heads).float()  # (B, H, S, d_k)
    return q, k, v


def own_answer(student, x, memory, state, heads, memory_mask):
    """(output, weights) that CrossAttention gives with the student's own masked_attention on its
    projections, or None where that function cannot answer (raises, or returns no pair of the
    layer's shapes)."""
    q, k, v = projections(x, memory, state, heads)
    mask = None if memory_mask is None else memory_mask[:, None, None, :]
    try:
        context, weights = student.masked_attention(q, k, v, mask)
    except (StudentFault, TypeError, ValueError):
        return None
    if not (
        isinstance(context, torch.Tensor) and context.shape == q.shape
        and isinstance(weights, torch.Tensor) and weights.shape == (*q.shape[:-1], k.shape[-2])
    ):  # fmt: skip
        return None
    return A.project(M.merge_heads(context.double()), state, "out_proj"), weights


def unmasked(call):
    """`call()`, a call of the student's masked_attention with mask=None made after it answered with a
    mask: if it raises, that is the default mask=None left unhandled (the mask used without a test
    for None), and no other check calls it so."""
    try:
        return call()
    except StudentCodeError as exc:
        if exc.diagnosis is None:
            exc.diagnosis = "mask_none_not_handled"
        raise


def own_unmasked(student, x, memory, state, heads):
    """CrossAttention without a memory_mask judged with the student's own masked_attention: its call
    with mask=None on the layer's projections, where it answers with a padding mask (a function that
    does not answer at all is replaced by a correct one, `cross_module`, and charged by its own checks)."""
    if answers_with_padding(student):
        q, k, v = projections(x, memory, state, heads)
        unmasked(lambda: student.masked_attention(q, k, v, None))


def cross_module(student, rng):
    """The module to build CrossAttention from: the student's own when its masked_attention answers
    (and depends on its input), else the student's with a correct masked_attention in its place."""
    answers = []
    for _ in range(2):
        q, k, v = qkv(rng, MASKED_SHAPES[0])
        try:
            got = student.masked_attention(q, k, v, None)
        except (StudentFault, TypeError, ValueError):
            break
        if not (isinstance(got, (tuple, list)) and len(got) == 2 and isinstance(got[0], torch.Tensor)):
            break
        answers.append(got[0])
    if (
        len(answers) == 2 and answers[0].shape == answers[1].shape and expect.largest_difference(*answers) > 0
        and answers_with_padding(student)
    ):  # fmt: skip
        return student
    return expect.with_definitions(student, CORRECT_MASKED, "correct_masked")


def answers_with_padding(student) -> bool:
    """Whether the student's masked_attention answers with a padding mask as CrossAttention passes
    it, (B, 1, 1, S) against (B, H, L, S) scores: a context of the right shape, finite, as every row
    allows a key (a function that raises there, or gives NaN, pins nothing for the layer)."""
    batch, length, keys, embed, heads = CROSS_CONFIGS[0]
    d_k = embed // heads
    own = torch.Generator().manual_seed(0)  # inputs of its own: the check's draws stay as they were
    q, k, v = qkv(own, ((batch, heads, length, d_k), (batch, heads, keys, d_k), (batch, heads, keys, d_k)))
    mask = K.padding_mask(own, batch, keys)[:, None, None, :]
    try:
        got = student.masked_attention(q, k, v, mask)
    except (StudentFault, TypeError, ValueError):
        return False
    context = got[0] if isinstance(got, (tuple, list)) and len(got) == 2 else None
    return (
        isinstance(context, torch.Tensor) and context.shape == q.shape and bool(torch.isfinite(context).all())
    )


def student_layer(student, rng, batch, length, keys, embed, heads, properties=False):
    """The student's CrossAttention(embed, heads) in eval mode with seeded weights, x, memory and a
    padding mask. Weights it does not have are not loaded (`cross_structure` reports them); a check
    of a property takes a layer whose weights have other shapes with its own weights."""
    module = cross_module(student, rng)
    layer = module.CrossAttention(embed, heads)
    state = A.linear_weights(M.LAYERS, embed, embed, rng)
    x = torch.randn(batch, length, embed, generator=rng)
    memory = torch.randn(batch, keys, embed, generator=rng)
    mask = K.padding_mask(rng, batch, keys)
    state = expect.load_weights(layer, state, own_if_mismatched=properties)
    layer.eval()
    return layer, state, x, memory, mask


def call_with_mask(layer, x, memory, mask):
    """layer(x, memory, mask); a layer that raises a shape error only when given the mask is told
    that the mask does not reach the scores in a shape that broadcasts. Any other error (a tensor
    asked for its truth value, say) is left to the harness's own names for it."""
    try:
        return layer(x, memory, mask)
    except StudentCodeError as exc:
        if exc.diagnosis is None and exc.matching({"shape": COMMON_ERRORS["shapes_do_not_fit"]}):
            try:
                layer(x, memory)
            except StudentFault:
                raise exc from None
            exc.diagnosis = "memory_mask_shape"
        raise


def memory_read_sequence_first(layer, x, memory, mask):
    """layer(x, memory[, mask]); a shape error there that goes away when the memory is handed over
    sequence first, (S, B, E), is a layer that transposes the memory it is given (it reads
    CrossAttention's batch-first memory as sequence-first): named `memory_transposed`."""
    try:
        return layer(x, memory) if mask is None else call_with_mask(layer, x, memory, mask)
    except StudentCodeError as exc:
        shape = exc.matching({"shape": COMMON_ERRORS["shapes_do_not_fit"]})
        if exc.diagnosis is None and shape and memory.shape[0] != memory.shape[1]:
            turned = memory.transpose(0, 1).contiguous()  # (S, B, E)
            try:
                layer(x, turned) if mask is None else layer(x, turned, mask)
            except StudentFault:
                raise exc from None
            exc.diagnosis = "memory_transposed"
        raise


def sources_differ(length: int, keys: int):
    """Name the shape errors of keys and values (or mask) taken from different sequences, when L ≠ S:
    scores with one column per decoder position met by a memory mask (.., S) or by values of S rows,
    or the other way round."""
    if length == keys:
        return expect.known_errors({})
    a, b = (length, keys), (keys, length)
    pattern = "|".join(
        [rf"size of tensor a \({x}\) must match the size of tensor b \({y}\) at non-singleton dimension 3\b"
         for x, y in (a, b)]
        + [rf"Expected size for first two dimensions of batch2 tensor to be: \[\d+, {x}\] but got: \[\d+, {y}\]"
           for x, y in (a, b)]
    )  # fmt: skip
    return expect.known_errors({"keys_values_sources_differ": pattern})


def run(layer, x, memory, mask, heads):
    """(output, weights) of the layer, read as meant (`cross_shapes` charges the order)."""
    batch, length, embed = x.shape
    with sources_differ(length, memory.shape[1]):
        got = memory_read_sequence_first(layer, x, memory, mask)
    return expect.pair_as_meant(got, "CrossAttention.forward(x, memory, memory_mask)",
                                ((batch, length, embed), (batch, heads, length, memory.shape[1])))  # fmt: skip


def heads_averaged(pairs) -> dict:
    """(output, weights) variants with the weights averaged over the heads (`pairs`: a function)."""
    return {d: A.each(v, lambda pair: (pair[0], pair[1].mean(1) if pair[1].dim() == 4 else pair[1]))
            for d, v in pairs().items()}  # fmt: skip


def compare_cross(student, layer, state, x, memory, mask, heads, expected, evidence=None):
    """Weights, then output, against `expected` or the student's own masked_attention's answer."""
    output, weights = run(layer, x, memory, mask, heads)
    expected_out, expected_w = expected
    own = own_answer(student, x, memory, state, heads, mask)
    own_out, own_w = own if own is not None else (None, None)
    pairs = expect.once(partial(K.cross_variants, x, memory, state, heads, mask))
    if evidence is not None and isinstance(weights, torch.Tensor) and weights.shape == expected_w.shape:
        for head in range(weights.shape[1]):
            evidence.heatmap(f"weights[-1, {head}]", weights[-1, head].double(), expected_w[-1, head])
    if isinstance(weights, torch.Tensor) and weights.shape == expected_w.shape[:1] + expected_w.shape[2:]:
        # weights averaged over the heads, as nn.MultiheadAttention returns by default: read as meant
        # (`cross_shapes` charges the shape)
        expected_w = expected_w.mean(1)
        own_w = own_w.mean(1) if isinstance(own_w, torch.Tensor) and own_w.dim() == 4 else own_w
        pairs = expect.once(partial(heads_averaged, pairs))
    joint_out = output if isinstance(output, torch.Tensor) else None
    joint_w = weights if isinstance(weights, torch.Tensor) else None
    expect.close(weights, expected_w, "weights", readings=[own_w], variants=A.swapped(pairs), joint=joint_out)
    expect.close(output, expected_out, "output", readings=[own_out], variants=pairs, joint=joint_w)


CAUSAL_TEXT = Text(
    zh="causal_mask({length}) 应为下三角（含对角线）的 bool 矩阵：查询 i 可以看键 0…i。",
    en="causal_mask({length}) should be the lower triangle, diagonal included, as bool: query i may"
    " attend keys 0…i.",
)
CAUSAL_DTYPE_TEXT = Text(
    zh="causal_mask({length}) 返回的是 {dtype} 张量，应为 torch.bool（True = 可以关注）。",
    en="causal_mask({length}) returns a {dtype} tensor; expected torch.bool (True = may attend).",
)
CAUSAL_TYPE_TEXT = Text(
    zh="causal_mask({length}) 应返回形状为 ({length}, {length}) 的张量，实际：{got}。",
    en="causal_mask({length}) should return a tensor of shape ({length}, {length}); got {got}.",
)
LEAK_TEXT = Text(
    zh="改动位置 {pos} 及其后的键和值后，查询 {row}（在 {pos} 之前）的输出变了（最大差 {err:.3g}）：信息从未来泄漏了。",
    en="After changing the keys and values from position {pos} on, the output of query {row} (before"
    " {pos}) moved by up to {err:.3g}: information leaks from the future.",
)
EMPTY_ROW_TEXT = Text(
    zh="查询 {row} 一个键都不能看，它的 {what} 应全为 0；实际最大绝对值为 {got:.4g}。",
    en="Query {row} has no key allowed, so its {what} should be all zeros; the largest magnitude is {got:.4g}.",
)
GRAD_TEXT = Text(
    zh="对 {name} 的梯度有 {count} 个不是有限值（NaN 或 inf），第一个在 {index}。",
    en="The gradient of {name} has {count} entries that are not finite (NaN or inf), the first at {index}.",
)
LAYERS_TEXT = Text(
    zh="CrossAttention({embed}, {heads}) 应有名为 query、key、value、out_proj 的 nn.Linear({embed}, {embed})"
    " 层；缺少或不对：{missing}。",
    en="CrossAttention({embed}, {heads}) should have nn.Linear({embed}, {embed}) layers named query, key,"
    " value and out_proj; missing or wrong: {missing}.",
)
PERMUTED_TEXT = Text(
    zh="把 memory 的位置（连同 memory_mask）重新排列后，输出变了（最大差 {err:.3g}）。",
    en="After permuting the memory positions (and memory_mask with them) the output moved by up to {err:.3g}.",
)
PADDING_TEXT = Text(
    zh="只改动了 memory_mask 为 False 的位置上的 memory，输出却变了（最大差 {err:.3g}）。",
    en="Only the memory where memory_mask is False changed, yet the output moved by up to {err:.3g}.",
)
LARGE_PADDING_TEXT = Text(
    zh="（这些位置放的是很大的值，约 ±1e6；放普通大小的值时输出没有变。）",
    en="(The padded positions held large values, about ±1e6; with values of ordinary size the output did not move.)",
)
BY_HAND = expect.by_hand_rule(Text(zh="自己实现", en="build it yourself"))


def square(got, length: int) -> bool:
    """Whether `got`, not a tensor, holds an (L, L) table all the same (a numpy array, nested lists)."""
    try:
        return np.asarray(got).shape == (length, length)
    except (TypeError, ValueError):
        return False


def answers_unmasked(student, q, k, v) -> bool:
    """Whether masked_attention(q, k, v, None) gives a context that moves with v: code that runs
    and computes, whose constant answer under a mask (all NaN, say) is a masking mistake that the
    value checks charge, not a reason to refuse a property its outputs have."""
    try:
        first = student.masked_attention(q, k, v, None)
        second = student.masked_attention(q, k, v.flip(-2) + 1, None)
    except (StudentFault, TypeError, ValueError):
        return False
    if not all(isinstance(got, (tuple, list)) and got and isinstance(got[0], torch.Tensor)
               for got in (first, second)):  # fmt: skip
        return False
    moved = expect.largest_difference(first[0], second[0]) if first[0].shape == second[0].shape else 0.0
    return 0 < moved < float("inf")


def nan_alike(got, own: torch.Tensor) -> bool:
    """Whether `got` is, like `own`, a tensor of the same shape with no finite value, NaN in the same places."""
    return (
        isinstance(got, torch.Tensor) and got.shape == own.shape and own.numel() > 0
        and not bool(torch.isfinite(own).any()) and not bool(torch.isfinite(got).any())
        and bool((torch.isnan(got) == torch.isnan(own)).all())
    )  # fmt: skip


def moved_rows(first: torch.Tensor, second: torch.Tensor) -> list[tuple[int, float]]:
    """(row, largest difference) for each query row (axis -2) where two outputs differ."""
    diff = (first.double() - second.double()).abs().nan_to_num(float("inf"))
    diff[torch.isnan(first) & torch.isnan(second)] = 0.0  # NaN in both calls: nothing seen to move
    per_row = diff.movedim(-2, 0).reshape(diff.shape[-2], -1).amax(-1)
    return [(i, float(d)) for i, d in enumerate(per_row) if d > 1e-6]


# ---------------------------------------------------------------- causal_mask and masked_attention


def cut_on_one_axis(got, length: int) -> bool:
    """A 2-D mask (L, N) or (N, L), N ≠ L, whose L × L corner is the causal triangle: a larger
    cached triangle sliced on one axis only (`_CAUSAL[:L]`)."""
    if not isinstance(got, torch.Tensor) or got.dim() != 2 or length not in got.shape:
        return False
    if min(got.shape) < length:
        return False
    corner = got[:length, :length]
    return corner.dtype == torch.bool and torch.equal(corner, K.causal(length))


@check("mask_causal")
def test_mask_causal(student):
    asked = []
    for length in (4, 7, 1):  # 1 last: its one cell cannot tell an inverted mask from tril(-1)
        got = student.causal_mask(length)
        asked.append(length)
        # the mask of a length asked earlier, given back for this one: a mask kept from an earlier call
        earlier = [n for n in asked[:-1] if isinstance(got, torch.Tensor) and tuple(got.shape) == (n, n)
                   and got.dtype == torch.bool and torch.equal(got, K.causal(n))]  # fmt: skip
        if earlier:
            shape = tuple(got.shape)
            expect.fail(CAUSAL_TYPE_TEXT.format(length=length, got=shape), "causal_mask_cached",
                        length=length, earlier=earlier[0])  # fmt: skip
        if isinstance(got, torch.Tensor) and got.dim() > 2 and tuple(got.squeeze().shape) == (length, length):
            shape, name = tuple(got.shape), f"causal_mask({length})"
            expect.fail(CAUSAL_TYPE_TEXT.format(length=length, got=shape), "extra_axis", name=name, got=shape,
                        expected=(length, length))  # fmt: skip
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != (length, length):
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            kind = type(got).__name__
            named = "mask_not_tensor" if not isinstance(got, torch.Tensor) and square(got, length) else None
            named = named or ("causal_mask_cut_one_axis" if cut_on_one_axis(got, length) else None)
            expect.fail(CAUSAL_TYPE_TEXT.format(length=length, got=shape), named, type=kind)
        if got.dtype != torch.bool:
            dtype = str(got.dtype).replace("torch.", "")
            expect.fail(CAUSAL_DTYPE_TEXT.format(length=length, dtype=dtype), "mask_not_bool", dtype=dtype)
        right = K.causal(length)
        named = {
            "inverted_mask": ~right,
            "mask_transposed": right.T,
            "causal_excludes_self": right.tril(-1),
        }
        if not torch.equal(got, right):
            found = [d for d, wrong in named.items() if torch.equal(got, wrong)]
            # the diagonal moved up: query i also sees the next `ahead` keys (a slice end i + 2, tril(1));
            # a mask all True (tril(L - 1)) hides nothing, which is not this
            ones = torch.ones_like(right)
            ahead = [n for n in range(1, length - 1) if torch.equal(got, ones.tril(n))]
            if not found and ahead:
                expect.fail(CAUSAL_TEXT.format(length=length), "causal_sees_future", ahead=ahead[0])
            expect.fail(CAUSAL_TEXT.format(length=length), found[0] if found else None)


@check("masked_shapes")
def test_masked_shapes(student, rng):
    for shapes in MASKED_SHAPES:
        q, k, v = qkv(rng, shapes)
        lead, length, keys = q.shape[:-2], q.shape[-2], k.shape[-2]
        mask = K.random_mask(rng, (*lead, length, keys))
        shapes = ((*lead, length, v.shape[-1]), (*lead, length, keys))
        with lost_axis(q, k, mask):
            got = student.masked_attention(q, k, v, mask)
        axis_added(got, q, k, v, mask)
        context, weights = expect.pair_in_order(got, ATTEND, shapes, ("context", "weights"))
        expect.tensor(weights, "weights", (*lead, length, keys), finite=False)
        expect.tensor(context, "context", (*lead, length, v.shape[-1]), finite=False)


@check("masked_matches_formula")
def test_masked_matches_formula(student, rng, evidence):
    q, k, v = qkv(rng, CAUSAL_SHAPES)  # the causal mask: the weights are a triangle
    mask = full(K.causal(q.shape[-2]), (*q.shape[:-1], k.shape[-2]))
    compare_masked(student, q, k, v, mask, evidence)
    for shapes in MASKED_SHAPES:
        q, k, v = qkv(rng, shapes)
        compare_masked(student, q, k, v, blocked_key(rng, (*q.shape[:-1], k.shape[-2])))


@check("masked_no_leakage")
def test_masked_no_leakage(student, rng):
    """Both outputs are judged, each as the student returns it: the context, and the weights when
    they come back as a tensor with one row per query."""
    q, k, v = qkv(rng, CAUSAL_SHAPES)
    length = q.shape[-2]
    mask = full(K.causal(length), (*q.shape[:-1], length))
    base = [expect.tensor(t, name, finite=False) if name == "context" or isinstance(t, torch.Tensor) else None
            for t, name in zip(call_masked(student, q, k, v, mask), ("context", "weights"), strict=True)]  # fmt: skip
    for pos in (2, length - 1):
        k2, v2 = k.clone(), v.clone()
        k2[..., pos:, :] = torch.randn(k2[..., pos:, :].shape, generator=rng)
        v2[..., pos:, :] = torch.randn(v2[..., pos:, :].shape, generator=rng)
        moved = call_masked(student, q, k2, v2, mask)
        context = expect.tensor(moved[0], "context", tuple(base[0].shape), finite=False)
        if not answers_unmasked(student, q, k, v):  # code that answers without a mask is judged as it is
            expect.responds(base[0], context, "context")
        pairs = [(base[0], context)]
        if base[1] is not None and isinstance(moved[1], torch.Tensor) and moved[1].shape == base[1].shape:
            pairs.append((base[1], moved[1]))
        early = [(row, err) for before, after in pairs for row, err in moved_rows(before, after) if row < pos]
        if early:
            expect.fail(LEAK_TEXT.format(pos=pos, row=early[0][0], err=early[0][1]))


@check("masked_broadcast")
def test_masked_broadcast(student, rng):
    """Each broadcastable mask against the same mask expanded, both through the student's code."""
    (q_shape, k_shape, v_shape), (q4_shape, k4_shape, v4_shape) = MASKED_SHAPES
    batch, length, keys = q_shape[0], q_shape[-2], k_shape[-2]
    # each mask leaves some query no key (a fully padded sequence, an empty row), which every correct
    # code answers with zeros: a result NaN wherever a key is allowed is still compared where it is finite
    cases = [
        (qkv(rng, (q_shape, k_shape, v_shape)), padded_out(K.padding_mask(rng, batch, keys))[:, None, :]),
        (qkv(rng, (q_shape, k_shape, v_shape)), K.random_mask(rng, (length, keys), full_rows=1)),  # (L, S)
        (qkv(rng, (q4_shape, k4_shape, v4_shape)),
         padded_out(K.padding_mask(rng, q4_shape[0], k4_shape[-2]))[:, None, None, :]),
    ]  # fmt: skip
    with expect.known_errors(KNOWN_ERRORS):
        for (q, k, v), mask in cases:
            expanded = full(mask, (*q.shape[:-1], k.shape[-2]))
            own_c, own_w = call_masked(student, q, k, v, expanded)
            got_c, got_w = call_masked(student, q, k, v, mask)
            shape = f"mask {tuple(mask.shape)}"
            own_w = expect.tensor(own_w, "weights", finite=False)
            own_c = expect.tensor(own_c, "context", finite=False)
            # a 2-D mask, (L, S) here, read as (B, S) padding: a leading axis of the mask's first size
            padding = K.padding_shape(mask, own_w.shape)
            misread = {} if padding is None else {"two_d_mask_as_padding": padding}
            if isinstance(got_w, torch.Tensor):
                expect.tensor(
                    got_w, f"weights ({shape})", tuple(own_w.shape), finite=False, shape_variants=misread
                )
            for got, own, what in ((got_w, own_w, "weights"), (got_c, own_c, "context")):
                if nan_alike(got, own) and answers_unmasked(student, q, k, v):
                    continue  # NaN everywhere both ways, from code that answers unmasked: the same result
                expect.same_as_own(got, own, f"{what} ({shape})")


def blocked_key(rng, shape, full_rows: int = 0) -> torch.Tensor:
    """A random mask of `shape` (K.random_mask) whose last key no query may attend: a test for rows
    with no key taken over the wrong axis (the queries') finds that column, on every seed."""
    mask = K.random_mask(rng, (*shape[:-1], shape[-1] - 1), full_rows=full_rows)
    return torch.cat([mask, torch.zeros((*shape[:-1], 1), dtype=torch.bool)], dim=-1)


def every_key_seen(mask: torch.Tensor, full_rows: int) -> torch.Tensor:
    """`mask` with every key allowed to some query past the first `full_rows` (which allow none):
    no key column is empty, so an empty row stays empty whichever axis code tests for emptiness."""
    mask = mask.clone()
    rows = mask.shape[-2] - full_rows
    for j in range(mask.shape[-1]):
        mask[..., full_rows + j % rows, j] = True
    return mask


def rest(weights: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
    """The evidence beside an empty row's weights: the other rows' weights and the empty row's context."""
    return torch.cat([weights[..., 1:, :].flatten(), context[..., :1, :].flatten()])


def padded_out(mask: torch.Tensor) -> torch.Tensor:
    """A (B, S) padding mask whose last sequence is padded throughout (no key for any of its queries)."""
    mask = mask.clone()
    mask[-1] = False
    return mask


@check("masked_fully_masked_row")
def test_masked_fully_masked_row(student, rng):
    """Row 0 of every matrix allows no key. Only those rows are judged; the other rows are evidence
    that tells mistakes with the same empty row apart (ignoring the mask or inverting it)."""
    q, k, v = qkv(rng, MASKED_SHAPES[0], torch.float64)
    mask = every_key_seen(K.random_mask(rng, (*q.shape[:-1], k.shape[-2]), full_rows=1), full_rows=1)
    with lost_axis(q, k, mask):
        returned = student.masked_attention(q, k, v, mask)
    axis_added(returned, q, k, v, mask)
    lead = q.shape[:-1]
    context, weights = expect.pair_as_meant(returned, ATTEND, ((*lead, v.shape[-1]), (*lead, k.shape[-2])))
    weights = expect.tensor(weights, "weights", (*q.shape[:-1], k.shape[-2]), finite=False)
    context = expect.tensor(context, "context", (*q.shape[:-1], v.shape[-1]), finite=False)
    pairs = {d: A.each(p, lambda pair: (pair[1][..., :1, :], rest(pair[1], pair[0])))
             for d, p in variants(q, k, v, mask).items()}  # fmt: skip
    for got, what in ((weights, "weights"), (context, "context")):
        row = got[..., :1, :]
        if not bool(torch.isfinite(row).all()) or float(row.abs().max()) > 1e-6:
            text = EMPTY_ROW_TEXT.format(
                row=0, what=what, got=float(row.abs().nan_to_num(float("inf")).max())
            )
            joint = rest(weights, context)
            named = expect.find_variant(weights[..., :1, :], pairs, 1e-4, 1e-5, joint=joint)
            expect.fail(text, named)
    # the other rows' own NaN (a masking mistake the value checks charge) reaches every gradient
    # that mixes rows: then only the empty rows' queries, whose gradient is theirs alone, are judged
    others_finite = all(bool(torch.isfinite(t[..., 1:, :]).all()) for t in (weights, context))
    g_context = torch.randn(context.shape, generator=rng, dtype=torch.float64)
    g_weights = torch.randn(weights.shape, generator=rng, dtype=torch.float64)
    cotangents = [g_context if out is context else g_weights if out is weights else None
                  for out in (returned if isinstance(returned, (tuple, list)) else [returned])]  # fmt: skip
    result = expect.vjp(student.masked_attention, [q, k, v, mask], [0, 1, 2], cotangents)
    for name, grad in zip("qkv", result["input_grads"], strict=True):
        if grad is None or not (others_finite or name == "q"):
            continue
        bad = ~torch.isfinite(expect.tensor(grad, f"{name}.grad", finite=False))
        if not others_finite:
            bad[..., 1:, :] = False
        if bool(bad.any()):
            index = tuple(bad.nonzero()[0].tolist())
            named = "nan_gradients" if others_finite else None  # a forward pass with no NaN, NaN gradients
            expect.fail(GRAD_TEXT.format(name=name, count=int(bad.sum()), index=index), named)


# ---------------------------------------------------------------- CrossAttention


@check("cross_structure")
def test_cross_structure(student):
    embed, heads = 12, 3
    info = expect.introspect(student.CrossAttention(embed, heads))
    missing = M.missing_layers(info, embed)
    text = LAYERS_TEXT.format(embed=embed, heads=heads, missing=", ".join(missing) or "nn.Module")
    expect.true(info.get("is_nn_module", False) and not missing, text)


@check("cross_shapes")
def test_cross_shapes(student, rng):
    for batch, length, keys, embed, heads in CROSS_CONFIGS:
        layer, _, x, memory, _ = student_layer(
            student, rng, batch, length, keys, embed, heads, properties=True
        )
        shapes = ((batch, length, embed), (batch, heads, length, keys))
        with sources_differ(x.shape[1], memory.shape[1]):
            got = memory_read_sequence_first(layer, x, memory, None)
        output, weights = expect.pair_in_order(got, "CrossAttention.forward(x, memory)",
                                               shapes, ("output", "weights"))  # fmt: skip
        expect.tensor(weights, "weights", (batch, heads, length, keys), finite=False,
                      shape_variants={"self_vs_cross": (batch, heads, length, length),
                                      "cross_roles_swapped": (batch, heads, keys, length),
                                      "weights_averaged": (batch, length, keys)})  # fmt: skip
        expect.tensor(output, "output", (batch, length, embed), finite=False,
                      shape_variants={"cross_roles_swapped": (batch, keys, embed)})  # fmt: skip


@check("cross_matches_oracle")
def test_cross_matches_oracle(student, rng, evidence):
    for i, (batch, length, keys, embed, heads) in enumerate(CROSS_CONFIGS):
        layer, state, x, memory, mask = student_layer(student, rng, batch, length, keys, embed, heads)
        for memory_mask in (mask, None):
            if memory_mask is None:
                own_unmasked(student, x, memory, state, heads)
            expected = K.torch_cross_oracle(x, memory, state, heads, memory_mask)
            shown = evidence if i == 0 and memory_mask is not None else None
            try:
                compare_cross(student, layer, state, x, memory, memory_mask, heads, expected, shown)
            except (CheckFailed, StudentCodeError) as exc:
                if (
                    memory_mask is None
                    and exc.diagnosis is None
                    and fresh_layer_answers(student, rng, state, x, memory, heads, expected)
                ):
                    exc.diagnosis = "layer_keeps_earlier_call"
                raise


def fresh_layer_answers(student, rng, state, x, memory, heads, expected) -> bool:
    """Whether a CrossAttention built afresh with the same weights, called once without a mask, gives
    the expected output where the layer that ran a masked call before failed: the first call left
    something on the layer (a memory_mask kept for later calls, say) that the second one used."""
    embed = x.shape[-1]
    fresh = cross_module(student, rng).CrossAttention(embed, heads)
    expect.load_weights(fresh, state)
    fresh.eval()
    try:
        output = run(fresh, x, memory, None, heads)[0]
    except StudentCodeError:
        return False
    wanted = expected[0]
    return (
        isinstance(output, torch.Tensor) and output.shape == wanted.shape
        and expect.error_ratio(output.double(), wanted.double(), 1e-4, 1e-5) <= 1
    )  # fmt: skip


def batch_mixed(output, x, memory, state, mask, heads) -> str | None:
    """ "memory_mask_batch_mixed" when `output` is the layer's with each batch element's padding mask
    given to other batch elements' heads (a repeat where repeat_interleave was meant); else None."""
    for mistake in ("memory_mask_batch_mixed_tiled", "memory_mask_batch_mixed_interleaved"):
        try:
            wrong = K.cross(x, memory, state, heads, mask, mistake=mistake)[0]
        except (RuntimeError, KeyError):  # the layer's own weights, of other shapes: nothing to read
            return None
        if output.shape == wrong.shape and expect.error_ratio(output.double(), wrong, 1e-4, 1e-5) <= 1:
            return "memory_mask_batch_mixed"
    return None


def forces_a_key(student) -> str | None:
    """ "key_forced_allowed" when the student's masked_attention, on a mask of its own that hides the
    first and the last key from every query, gives the weights of that mask with the first or the
    last key opened for every query (the rule CrossAttention then runs on: the key at a position,
    not the mask, decides); else None."""
    own = torch.Generator().manual_seed(0)  # inputs of its own: the check's draws stay as they were
    q, k, v = qkv(own, MASKED_SHAPES[0])
    mask = K.random_mask(own, (*q.shape[:-1], k.shape[-2]))
    mask[..., 1] = True  # every row keeps a key once the ends are hidden
    mask[..., 0] = mask[..., -1] = False
    try:
        _, weights = call_masked(student, q, k, v, mask)
    except (StudentFault, TypeError, ValueError):
        return None
    forced = variants(q, k, v, mask).get("key_forced_allowed", [])
    if isinstance(weights, torch.Tensor) and any(
        w.shape == weights.shape and expect.error_ratio(weights, w, 1e-4, 1e-5) <= 1 for _, w in forced
    ):
        return "key_forced_allowed"
    return None


@check("cross_memory_permutation")
def test_cross_memory_permutation(student, rng):
    batch, length, keys, embed, heads = CROSS_CONFIGS[0]
    layer, _, x, memory, mask = student_layer(
        student, rng, batch, length, keys, embed, heads, properties=True
    )
    order = torch.randperm(keys, generator=rng)
    # the last key, padded in every sequence but the first, comes first: a padded key at position 0
    order = torch.cat([order[order == keys - 1], order[order != keys - 1]])
    base = expect.tensor(run(layer, x, memory, mask, heads)[0], "output", finite=False)
    permuted = expect.tensor(run(layer, x, memory[:, order], mask[:, order], heads)[0], "output",
                             tuple(base.shape), finite=False)  # fmt: skip
    expect.responds(base, expect.tensor(run(layer, x.flip(1) + 1, memory + 1, mask, heads)[0], "output",
                                        finite=False), "output")  # fmt: skip
    err = expect.largest_difference(base, permuted)
    if err > 1e-5 * max(1.0, float(base.abs().nan_to_num(0.0).max())):
        expect.fail(PERMUTED_TEXT.format(err=err), forces_a_key(cross_module(student, rng)))


@check("cross_padding_ignored")
def test_cross_padding_ignored(student, rng):
    batch, length, keys, embed, heads = CROSS_CONFIGS[0]
    layer, state, x, memory, mask = student_layer(
        student, rng, batch, length, keys, embed, heads, properties=True
    )
    changed = memory.clone()
    changed[~mask] = 10 * torch.randn(changed[~mask].shape, generator=rng)
    base = expect.tensor(run(layer, x, memory, mask, heads)[0], "output", finite=False)
    moved = expect.tensor(run(layer, x, changed, mask, heads)[0], "output", tuple(base.shape), finite=False)
    expect.responds(base, expect.tensor(run(layer, x.flip(1) + 1, memory + 1, mask, heads)[0], "output",
                                        finite=False), "output")  # fmt: skip
    err = expect.largest_difference(base, moved)
    if err > 1e-5 * max(1.0, float(base.abs().nan_to_num(0.0).max())):
        expect.fail(
            PADDING_TEXT.format(err=err),
            forces_a_key(cross_module(student, rng)) or batch_mixed(base, x, memory, state, mask, heads),
        )
    # large values in the padding, of both signs (a score is linear in the memory, so one of the two
    # gives some masked key a score far above the allowed ones): a masked key that still takes part
    # anywhere (the stabilising max over every key, a finite fill a large score outweighs) shows here
    noise = 1e6 * torch.randn(changed[~mask].shape, generator=rng)
    for sign in (1, -1):
        changed[~mask] = sign * noise
        moved = expect.tensor(
            run(layer, x, changed, mask, heads)[0], "output", tuple(base.shape), finite=False
        )
        err = expect.largest_difference(base, moved)
        if err > 1e-5 * max(1.0, float(base.abs().nan_to_num(0.0).max())):
            expect.fail(PADDING_TEXT.format(err=err) + LARGE_PADDING_TEXT, "masked_key_outweighs")


@check("no_builtin_attention")
def test_no_builtin_attention(student, built_by_hand, rng):
    expect.not_by_hand(built_by_hand.static(), BY_HAND)
    q, k, v = qkv(rng, MASKED_SHAPES[0])  # the point needs code that runs, whatever it computes:
    masks = [K.random_mask(rng, (*q.shape[:-1], k.shape[-2]))]  # an answer that moves with its input
    masks.append(torch.ones_like(masks[0]))  # under some mask (a wrong mask rule may blank one of them)
    moves = []
    for mask in masks:
        context = expect.tensor(call_masked(student, q, k, v, mask)[0], "context", finite=False)
        other = expect.tensor(call_masked(student, q, k, v.flip(-2) + 1, mask)[0], "context", finite=False)
        moves.append(expect.largest_difference(context, other) > 0)
    if not any(moves) and not answers_unmasked(student, q, k, v):
        expect.responds(context, other, "context")
    batch, length, keys, embed, heads = CROSS_CONFIGS[1]
    layer, _, x, memory, mask = student_layer(
        student, rng, batch, length, keys, embed, heads, properties=True
    )
    output = expect.tensor(run(layer, x, memory, mask, heads)[0], "output", finite=False)
    expect.responds(output, expect.tensor(run(layer, x.flip(1) + 1, memory + 1, mask, heads)[0], "output",
                                          finite=False), "output")  # fmt: skip
    expect.not_by_hand(built_by_hand.tripwire(), BY_HAND)  # what ran: the static check cannot see everything


@check("matches_reference")
def test_matches_reference(student, reference, rng):
    for shapes in HIDDEN_MASKED:
        q, k, v = qkv(rng, shapes)
        mask = blocked_key(rng, (*q.shape[:-1], k.shape[-2]), full_rows=1)
        if mask.shape[-2] > 1:  # the next row allows exactly one key (its first), on every seed
            mask[..., 1, :] = False
            mask[..., 1, 0] = True
        context, weights = call_masked(student, q, k, v, mask, shapes=True)
        expected_c, expected_w = reference.masked_attention(q.double(), k.double(), v.double(), mask)
        pairs = expect.once(partial(variants, q, k, v, mask))
        expect.close(weights, expected_w, "weights", variants=A.swapped(pairs), joint=context)
        expect.close(context, expected_c, "context", variants=pairs, joint=weights)
    for batch, length, keys, embed, heads in HIDDEN_CROSS:
        layer, state, x, memory, mask = student_layer(student, rng, batch, length, keys, embed, heads)
        trusted = reference.CrossAttention(embed, heads).double().eval()
        trusted.load_state_dict({n: t.double() for n, t in state.items()})
        with torch.no_grad():
            expected = trusted(x.double(), memory.double(), mask)
        compare_cross(student, layer, state, x, memory, mask, heads, expected)
    # no mask at all (mask=None, the default): the plain softmax
    q, k, v = qkv(rng, HIDDEN_MASKED[0])
    context, weights = unmasked(lambda: call_masked(student, q, k, v, None))
    expected_c, expected_w = reference.masked_attention(q.double(), k.double(), v.double(), None)
    expect.close(weights, expected_w, "weights (mask=None)", joint=context)
    expect.close(context, expected_c, "context (mask=None)", joint=weights)
