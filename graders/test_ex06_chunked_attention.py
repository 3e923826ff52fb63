"""Checks for exercise 6: chunked_attention, an online softmax over key chunks.

Shapes keep every dimension different (L ≠ S, d_k ≠ d_v, leading batch dimensions) so that a
transposition cannot hide. The right answer is the float64 formula of graders/attention.py; the
known mistakes are reproduced at each check's chunk size by graders/chunked.py.

Checks of one aspect judge it against the student's own code where another mistake could spoil the
comparison (error carried forward): a shorter last chunk against the student's one-chunk result,
the extreme chunk sizes against a middle one, very negative scores against the same scores shifted
up. Peak memory is read by the trusted side from the kernel (`expect.peak_memory`), never taken
from the submission.
"""

from functools import partial

import torch

from graders import attention as A
from graders import chunked as C
from graders.harness import Text, check
from graders.harness.core import expect
from graders.harness.core.diagnoses import COMMON_ERRORS
from graders.harness.core.errors import CheckFailed, StudentCodeError, StudentFault

# (q, k, v) shapes and a chunk size that divides S: leading batch dims, L ≠ S, d_k ≠ d_v
CONFIGS = [(((2, 5, 16), (2, 12, 16), (2, 12, 3)), 4), (((3, 2, 4, 8), (3, 2, 9, 8), (3, 2, 9, 5)), 3)]
# 13 keys in chunks of 4: the last holds 1. L = 5 queries: a loop over range(0, L, 4) stops after
# 8 keys, which is neither the first chunk alone (4) nor the full chunks (12)
PARTIAL = (((2, 5, 16), (2, 13, 16), (2, 13, 3)), 4)
EXTREMES = (((2, 5, 16), (2, 12, 16), (2, 12, 3)), 4, [1, 19])  # middle chunk, then 1 and > S
HIDDEN = [(((4, 9), (11, 9), (11, 2)), 3), (((2, 3, 1, 8), (2, 3, 7, 8), (2, 3, 7, 7)), 2)]
NEGATIVE_SHIFT = -2000.0  # every scaled score of a row sits about this far below zero: exp underflows
LARGE_SHIFT = 1000.0  # every scaled score about this far above zero: exp overflows even in float64
# scaled scores about this far above zero: exp of them is finite in float32 (e^62 < 3e38), while exp
# of them minus the maximum of the unscaled scores (4× them at d_k = 16) underflows to 0/0
RAISED_SHIFT = 60.0
# the levels of the three key chunks of CONFIGS[0] in its first batch element: each chunk's largest
# score 200 below the previous one's, past where exp(m_old − m_new) overflows in float32 (88.7)
FALLING_SHIFTS = [LARGE_SHIFT + 200.0, LARGE_SHIFT, LARGE_SHIFT - 200.0]
BAD_CHUNKS = [0, -2]
MEMORY_SIZE, MEMORY_DIM, MEMORY_CHUNK = 4096, 64, 64
# Trusted code the peak-memory check's fresh worker runs before the student's module loads: torch's
# first use of what a chunked attention computes with, at the measured size (what it keeps from that,
# thread and allocator buffers, is then not counted against the student)
WARM_TORCH = """import torch


def warm(size, dim, chunk):
    q = torch.randn(size, dim)
    top, total, acc = torch.full((size, 1), float("-inf")), torch.zeros(size, 1), torch.zeros(size, dim)
    for start in range(0, 2 * chunk, chunk):  # two blocks: what a third would add, torch already has
        scores = q @ q[start : start + chunk].transpose(-2, -1) / dim**0.5
        new = torch.maximum(top, scores.amax(-1, keepdim=True))
        p, fix = torch.exp(scores - new), torch.exp(top - new)
        total = total * fix + p.sum(-1, keepdim=True)
        acc = acc * fix + p @ q[start : start + chunk]
        top = new
    small = torch.einsum("ld,sd->ls", q[:chunk], q[:chunk]).softmax(-1).logsumexp(-1)
    return float((acc / total).sum() + small.sum())
"""
MIB = 1 << 20
MEMORY_BOUND = 32 * MIB  # what one call may add: blocks of (L, chunk), inputs and output in transit
MATRIX_BYTES = MEMORY_SIZE * MEMORY_SIZE * 4  # the float32 (L, S) score matrix: 64 MiB
NAME = "chunked_attention(q, k, v, chunk_size)"
KNOWN_ERRORS = {  # a reduction (amax, max, …) over a chunk of no keys: the slice came out empty
    "empty_chunk": r"reduction dim -?\d+ to have non-zero size|reduction function \w+ on tensor with no elements",
    # k (or v) cut with a view into S // chunk_size chunks of chunk_size: raises where chunk_size does not divide S
    "chunks_by_view": r"(?s)shape '\[[^\]]*\]' is invalid for input of size \d+.*\n[^\n]*\b(view|reshape)\([^\n]*(//|chunk)",
}
REFUSALS = ("ValueError", "AssertionError")  # how code refuses a chunk size it takes for invalid


def qkv(rng, shapes, dtype=torch.float32):
    return [torch.randn(s, generator=rng, dtype=dtype) for s in shapes]


def lost_axis(q, v, chunk=None):
    """Name the shape error of a per-query sum that lost its last axis, `l.squeeze(-1)` or `l[..., 0]`:
    (..., L) where (..., L, 1) was meant, so dividing the (..., L, d_v) numerator by it lines its
    axes up one place to the right. The error torch gives for that pair of shapes (the first axis,
    from the right, where they differ) names it."""
    numerator = (*q.shape[:-1], v.shape[-1])
    reduced = (1, *q.shape[:-1])  # right-aligned against the numerator
    clash = next(((reduced[i], numerator[i], i) for i in reversed(range(len(numerator)))
                  if 1 not in (reduced[i], numerator[i]) and reduced[i] != numerator[i]), None)  # fmt: skip
    known = chunk_errors(q, v, chunk)
    if clash is None:
        return expect.known_errors(known)
    a, b, axis = clash
    pattern = "|".join(
        rf"size of tensor a \({x}\) must match the size of tensor b \({y}\) at non-singleton dimension {axis}\b"
        for x, y in ((a, b), (b, a))
    )
    return expect.known_errors({"denominator_lost_axis": pattern, **known})


def chunk_errors(q, v, chunk) -> dict[str, str]:
    """The shape errors of two chunk slips at this chunk size: the keys cut on their feature axis,
    k[..., a:b] (its transpose has `chunk` rows where d_k were expected), and a running state with
    one entry per key of the chunk, (..., L, chunk) (a maximum over the queries, dim=-2, or none),
    met by the (..., L, d_v) numerator."""
    d_k, d_v, rank = q.shape[-1], v.shape[-1], q.dim()
    if chunk is None:
        return {}
    # a chunk of features where d_k were expected; past the last feature, a chunk of none
    rows = f"({chunk}|0)" if chunk < d_k else "0"
    known = {
        "chunk_sliced_on_features": rf"Expected size for first two dimensions of batch2 tensor to be: \[\d+, {d_k}\]"
        rf" but got: \[\d+, {rows}\]|mat1 and mat2 shapes cannot be multiplied \(\d+x{d_k} and {rows}x\d+\)",
    }
    if 1 not in (chunk, d_v) and chunk != d_v:
        known["chunk_shaped_state"] = (
            rf"size of tensor a \(({d_v}|{chunk})\) must match the size of tensor b"
            rf" \(({chunk}|{d_v})\) at non-singleton dimension {rank - 1}\b"
        )
    return known


def call(student, q, k, v, chunk):
    """chunked_attention(q, k, v, chunk), the shape errors of known slips named (`lost_axis`). A shape
    error no pattern names, which goes away when v is given d_k features like q and k, is a running
    state built with q's shape where v's width d_v is due: `state_shaped_like_q`."""
    try:
        with lost_axis(q, v, chunk):
            return student.chunked_attention(q, k, v, chunk)
    except StudentCodeError as exc:
        d_k, d_v = q.shape[-1], v.shape[-1]
        if (
            exc.diagnosis is None
            and d_k != d_v
            and exc.matching({"shape": COMMON_ERRORS["shapes_do_not_fit"]})
        ):
            wide = (
                v[..., :d_k] if d_v > d_k else torch.cat([v, v[..., :1].expand(*v.shape[:-1], d_k - d_v)], -1)
            )
            try:
                student.chunked_attention(q, k, wide.contiguous(), chunk)
            except StudentFault:
                raise exc from None
            exc.diagnosis = "state_shaped_like_q"
        raise


def context(student, q, k, v, chunk):
    """The student's context, as a tensor of the right shape (finite or not). A tuple whose first
    item is a tensor of the context's shape ((context, lse), as FlashAttention returns) is read as
    meant: its first item is the context; chunked_shapes alone charges the return type."""
    got = call(student, q, k, v, chunk)
    shape = (*q.shape[:-1], v.shape[-1])
    return expect.tensor(as_meant(got, shape), "context", shape, finite=False)


def as_meant(got, shape):
    """The context inside a (context, extra, …) tuple or list, else `got` unchanged."""
    return got[0] if context_first(got, shape) else got


def context_first(got, shape) -> bool:
    return (
        isinstance(got, (tuple, list))
        and len(got) >= 2
        and isinstance(got[0], torch.Tensor)
        and tuple(got[0].shape) == tuple(shape)
    )


HALF_TYPES = (torch.float16, torch.bfloat16)


def low_precision_numerator(q, k, v, chunk, half, twice: bool) -> torch.Tensor:
    """The context when the running numerator is kept in `half`: updated in place, each step
    computed in float32 as the inputs are and rounded to `half`, after the rescale and after the
    addition (`twice`: acc.mul_(correction).add_(p @ v_chunk)) or once (acc.copy_(acc * correction
    + p @ v_chunk)); the maximum and the denominator stay in float32."""
    q, k, v = q.float(), k.float(), v.float()
    scale = 1 / q.shape[-1] ** 0.5
    m = torch.full((*q.shape[:-1], 1), float("-inf"))
    l = torch.zeros_like(m)  # noqa: E741
    acc = torch.zeros((*q.shape[:-1], v.shape[-1]), dtype=half)
    for start in range(0, k.shape[-2], chunk):
        scores = q @ k[..., start : start + chunk, :].transpose(-2, -1) * scale
        m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))
        correction, p = torch.exp(m - m_new), torch.exp(scores - m_new)
        l = l * correction + p.sum(dim=-1, keepdim=True)  # noqa: E741
        rescaled = acc.float() * correction
        rescaled = rescaled.to(half).float() if twice else rescaled
        acc = (rescaled + p @ v[..., start : start + chunk, :]).to(half)
        m = m_new
    return (acc / l).double()


def variants(q, k, v, chunk) -> dict:
    """`C.variants`, the running numerator kept in half precision, and each chunk's slice taking one
    key more, start : start + chunk_size + 1 (an inclusive end): the first key of every next chunk
    counted twice."""
    out = C.variants(q, k, v, chunk)
    out["accumulator_low_precision"] = [
        low_precision_numerator(q, k, v, chunk, half, twice) for half in HALF_TYPES for twice in (True, False)
    ]
    wide = C.online(q, k, v, chunk, chunk_end=1)
    if not C._same(wide, C.online(q, k, v, chunk)) and bool(torch.isfinite(wide).any()):
        out["chunk_end_overlaps"] = wide
    return out


def nan_alike(got, own) -> bool:
    """Whether `got` and `own` are tensors of one shape with no finite value, NaN in the same places."""
    return (
        isinstance(got, torch.Tensor) and isinstance(own, torch.Tensor) and got.shape == own.shape
        and got.numel() > 0 and not bool(torch.isfinite(got).any()) and not bool(torch.isfinite(own).any())
        and bool((torch.isnan(got) == torch.isnan(own)).all())
    )  # fmt: skip


def compare(got, q, k, v, chunk, readings=(), name="context"):
    """`got` against the formula (or a reading of the student's own), naming the mistakes of
    graders/chunked.py at this chunk size. Judged against the student's own result (`readings`), a
    result with no finite value, NaN where the own one is NaN, is that result: the chunk size
    changed nothing (the value checks charge the NaN)."""
    if any(nan_alike(got, own) for own in readings):
        return
    try:
        expect.close(
            got,
            A.attention(q, k, v)[0],
            name,
            readings=list(readings),
            variants=partial(variants, q, k, v, chunk),
        )
    except CheckFailed as exc:
        # NaN in every entry on ordinary scores (no known mistake gives that but a broken update)
        if (
            exc.diagnosis is None
            and isinstance(got, torch.Tensor)
            and got.numel()
            and bool(got.isnan().all())
        ):
            exc.diagnosis = "nan_everywhere"
        raise


def answers(first, second) -> None:
    """Two outputs for different inputs are an answer (`expect.responds`); so are two outputs with no
    finite value (NaN from a slip in the loop, say): such code runs and answers, and the value checks
    charge its values, not the checks of how it runs."""
    if nan_alike(first, second):
        return
    expect.responds(first, second, "context")


# Trusted code appended to the student's module (`expect.with_definitions`): a check's calls made
# again in order on the same tensors, as a caller reuses its q, k and v (each remote call hands the
# worker fresh copies, so a call that writes into an input is invisible across calls). Which inputs a
# call changed comes back only to name the mistake; the results are judged here.
IN_SEQUENCE = """

def grader_calls_in_sequence(q, k, v, chunks):
    import torch as grader_torch

    sent = [t.clone() for t in (q, k, v)]
    outs, changed, error = [], [], None
    for chunk in chunks:
        try:
            outs.append(chunked_attention(q, k, v, chunk))
        except Exception as exc:
            error = type(exc).__name__ + ": " + str(exc)[:300]
            break
        changed.append([not grader_torch.equal(a, b) for a, b in zip(sent, (q, k, v))])
    return outs, changed, error
"""
SEQUENCE_TEXT = Text(
    zh="在同一组 q、k、v 上依次调用（先 chunk_size={first}，之后 chunk_size={chunk}），后一次的结果与单独调用时不同{detail}。",
    en="Called in turn on the same q, k, v (chunk_size={first} first, later chunk_size={chunk}), the later call's"
    " result differs from what that call gives on its own{detail}.",
)
SEQUENCE_DETAIL = {
    "changed": Text(
        zh="：之前的调用改写了调用者的 {names}", en=": the calls before it changed the caller's {names}"
    ),
    "raised": Text(zh="；它出错了（{error}）", en="; it raised ({error})"),
}


BAD_CHUNK_TEXT = Text(
    zh="chunked_attention(..., chunk_size={chunk}) 应抛出 ValueError（块大小必须是正整数），实际：{got}。",
    en="chunked_attention(..., chunk_size={chunk}) should raise ValueError (a chunk size is a positive"
    " integer); instead: {got}.",
)
MEMORY_TEXT = Text(
    zh="L = S = {size}、d = {dim}、chunk_size = {chunk} 时，这次调用的内存峰值比调用前多 {used} MiB"
    "（内核统计，来源：{source}），上限是 {bound} MiB；完整的 L×S 分数矩阵（float32）就要 {matrix} MiB。",
    en="At L = S = {size}, d = {dim}, chunk_size = {chunk}, the call's peak memory rose {used} MiB above what"
    " the worker held before it (counted by the kernel: {source}); the bound is {bound} MiB, and the full"
    " L×S score matrix in float32 alone is {matrix} MiB.",
)
EXTRA_OUTPUTS_TEXT = Text(
    zh="chunked_attention 返回了一个含 {count} 项的 {kind}，第一项是形状为 {shape} 的上下文；应当只返回上下文这一个张量。",
    en="chunked_attention returns a {kind} of {count} items whose first is the context, of shape {shape};"
    " it should return the context tensor alone.",
)
BY_HAND = expect.by_hand_rule(Text(zh="自己实现分块注意力", en="build chunked attention yourself"))


def in_sequence(student, q, k, v, chunks, fresh):
    """The calls `chunks` made again in turn on the same q, k, v: each after the first must give what
    it gave on fresh copies (`fresh`, already judged), or the formula, or the first call's result (the
    check's own reading). A call that writes into an input (k_chunk *= scale on a view of k, say) leaves
    the next one wrong: named when the trusted side sees which input changed."""
    probe = expect.with_definitions(student, IN_SEQUENCE, "in_sequence")
    outs, changed, error = probe.grader_calls_in_sequence(q, k, v, list(chunks))
    shape = (*q.shape[:-1], v.shape[-1])
    first = as_meant(outs[0], shape) if outs else None
    for i, chunk in enumerate(chunks[1:], start=1):
        names = (
            ", ".join(n for n, c in zip("qkv", changed[i - 1], strict=True) if c)
            if i - 1 < len(changed)
            else ""
        )
        if i < len(outs):
            got = as_meant(outs[i], shape)
            if any(nan_alike(got, ok) or fits(got, ok) for ok in (fresh[i], first, A.attention(q, k, v)[0])):
                continue
            detail = {"zh": "", "en": ""}
        else:
            detail = {
                lang: SEQUENCE_DETAIL["raised"](lang).format(error=error or "?") for lang in ("zh", "en")
            }
        if names:
            detail = {
                lang: SEQUENCE_DETAIL["changed"](lang).format(names=names) + detail[lang]
                for lang in ("zh", "en")
            }
        text = Text(**{lang: SEQUENCE_TEXT(lang).format(first=chunks[0], chunk=chunk, detail=detail[lang])
                       for lang in ("zh", "en")})  # fmt: skip
        expect.fail(text, "input_changed_in_place" if names else None, names=names)


def fits(got, expected) -> bool:
    return (
        isinstance(got, torch.Tensor) and isinstance(expected, torch.Tensor) and got.shape == expected.shape
        and expect.error_ratio(got.double(), expected.double(), 1e-4, 1e-5) <= 1
    )  # fmt: skip


@check("chunked_shapes")
def test_chunked_shapes(student, rng):
    for shapes, chunk in CONFIGS:
        q, k, v = qkv(rng, shapes)
        got = call(student, q, k, v, chunk)
        shape = (*q.shape[:-1], v.shape[-1])
        if context_first(got, shape):  # the context and more: the one check that charges the return type
            text = EXTRA_OUTPUTS_TEXT.format(kind=type(got).__name__, count=len(got), shape=shape)
            expect.fail(text, "returns_extra_outputs", count=len(got))
        expect.tensor(got, "context", shape, finite=False)


@check("chunked_rejects_bad_chunk")
def test_chunked_rejects_bad_chunk(student, rng):
    shapes, _ = CONFIGS[0]
    q, k, v = qkv(rng, shapes)
    for chunk in BAD_CHUNKS:
        try:
            student.chunked_attention(q, k, v, chunk)
            got = "no exception"
        except StudentCodeError as exc:
            if exc.type_name == "ValueError":
                continue
            got = exc.type_name
        expect.fail(
            BAD_CHUNK_TEXT.format(chunk=chunk, got=got), "bad_chunk_not_rejected", chunk=chunk, got=got
        )


@check("chunked_matches_formula")
def test_chunked_matches_formula(student, rng):
    for shapes, chunk in CONFIGS:
        q, k, v = qkv(rng, shapes)
        compare(context(student, q, k, v, chunk), q, k, v, chunk)


@check("chunked_partial_last_chunk")
def test_chunked_partial_last_chunk(student, rng):
    shapes, chunk = PARTIAL
    q, k, v = qkv(rng, shapes)
    one_chunk = context(student, q, k, v, k.shape[-2])  # all S keys at once: no last chunk to drop
    got = context(student, q, k, v, chunk)
    compare(got, q, k, v, chunk, readings=[one_chunk])
    # the same two calls in turn on one q, k, v, as a caller makes them: the first must leave them usable
    in_sequence(student, q, k, v, [k.shape[-2], chunk], [one_chunk, got])


@check("chunked_chunk_extremes")
def test_chunked_chunk_extremes(student, rng):
    shapes, middle, extremes = EXTREMES
    q, k, v = qkv(rng, shapes)
    own = context(student, q, k, v, middle)
    results = [own]
    for chunk in extremes:
        try:
            got = context(student, q, k, v, chunk)
        except StudentCodeError as exc:  # a size the code answered in the middle refused at the extremes
            if exc.diagnosis is None and exc.type_name in REFUSALS:
                exc.diagnosis = "valid_chunk_rejected"
                exc.diagnosis_params = {"chunk": chunk, "keys": k.shape[-2]}
            raise
        compare(got, q, k, v, chunk, readings=[own], name=f"context (chunk_size={chunk})")
        results.append(got)
    in_sequence(student, q, k, v, [middle, *extremes], results)  # the same calls in turn on one q, k, v


@check("chunked_very_negative_scores")
def test_chunked_very_negative_scores(student, rng):
    """Judged against the student's own result for the same scores shifted up (a softmax ignores a
    constant added to a row); the large-score result is evidence that tells a finite initial
    maximum (right on large scores) from no maximum at all (wrong on both)."""
    (q_shape, k_shape, v_shape), chunk = CONFIGS[0]
    q, k, k_plain, v = C.shifted_keys(rng, q_shape, k_shape, v_shape, NEGATIVE_SHIFT)
    plain = context(student, q, k_plain, v, chunk)
    got = context(student, q, k, v, chunk)
    k_large = k_plain.clone()
    k_large[..., -1] += LARGE_SHIFT * q_shape[-1] ** 0.5  # the same scores shifted far up
    large = context(student, q, k_large, v, chunk)
    evidence = {
        d: (C.mistake(q, k, v, chunk, d), C.mistake(q, k_large, v, chunk, d))
        for d in overflow_mistakes(plain, raised(student, q, k_plain, v, chunk))
    }
    variants = {**C.variants(q, k, v, chunk), **evidence}  # what other mistakes give on these scores
    expect.close(got, A.attention(q, k, v)[0], "context", readings=[plain], joint=large, variants=variants,
                 rtol=1e-3, atol=1e-3)  # fmt: skip


def overflow_mistakes(ordinary, raised=None) -> tuple[str, ...]:
    """The running-maximum mistakes that can explain a NaN at extreme scores: all give finite
    results on ordinary scores, so code that is not finite there (a flipped rescale sign, say) has
    another mistake, and naming one of these would mislead. At extreme scores a maximum taken over
    the unscaled scores is NaN wherever no maximum at all is; `raised` (the student's context on
    scores raised by RAISED_SHIFT, with its inputs) tells them apart: only the mistakes whose
    result there is finite exactly when the student's is are kept."""
    finite = isinstance(ordinary, torch.Tensor) and bool(torch.isfinite(ordinary).all())
    if not finite:
        return ()
    mistakes = ("no_running_max", "finite_initial_max", "max_of_unscaled_scores")
    if raised is None:
        return mistakes
    got, (q, k, v, chunk) = raised
    return tuple(
        d for d in mistakes if all_finite(C.mistake(q, k, v, chunk, d, torch.float32)) == all_finite(got)
    )


def all_finite(got) -> bool:
    return all(isinstance(t, torch.Tensor) and bool(torch.isfinite(t).all()) for t in C.each(got))


def raised(student, q, k_plain, v, chunk):
    """The student's context on the scores of (q, k_plain) raised by RAISED_SHIFT, and its inputs."""
    k = k_plain.clone()
    k[..., -1] += RAISED_SHIFT * q.shape[-1] ** 0.5
    return context(student, q, k, v, chunk), (q, k, v, chunk)


@check("chunked_large_scores")
def test_chunked_large_scores(student, rng):
    (q_shape, k_shape, v_shape), chunk = CONFIGS[0]
    q, k, k_plain, v = C.shifted_keys(rng, q_shape, k_shape, v_shape, LARGE_SHIFT)
    got = context(student, q, k, v, chunk)
    plain = context(student, q, k_plain, v.flip(-2), chunk)
    known = overflow_mistakes(plain, raised(student, q, k_plain, v, chunk))
    variants = {d: C.mistake(q, k, v, chunk, d) for d in known}
    expect.finite(got, "context", variants=variants)
    expect.responds(got, plain, "context")
    # the chunks' levels falling by hundreds in the first batch element: a maximum that is not kept
    # running falls with them, and exp(m_old − m_new) overflows (in float32, as the inputs are)
    q, k, v = C.stepped_keys(rng, q_shape, k_shape, v_shape, chunk, FALLING_SHIFTS)
    falling = context(student, q, k, v, chunk)
    expect.finite(falling, "context", variants=falling_mistakes(plain, q, k, v, chunk))


def falling_mistakes(ordinary, q, k, v, chunk) -> dict:
    """The known mistakes that put a NaN or inf into the falling chunks' context, computed in
    float32 as the inputs are (a maximum that falls by 200 overflows there, not in float64). Only
    for code that is finite on ordinary scores: code that is not has another mistake."""
    if not overflow_mistakes(ordinary):
        return {}
    out = {d: C.mistake(q, k, v, chunk, d, torch.float32) for d in C.MISTAKES}
    return {d: got for d, got in out.items() if not all(bool(torch.isfinite(t).all()) for t in C.each(got))}


@check("chunked_no_builtin_attention")
def test_chunked_no_builtin_attention(student, built_by_hand, rng):
    expect.not_by_hand(built_by_hand.static(), BY_HAND)
    (shapes, chunk) = CONFIGS[1]  # the point needs a function that runs, whatever it computes
    q, k, v = qkv(rng, shapes)
    got = context(student, q, k, v, chunk)
    answers(got, context(student, q, k, v.flip(-2) + 1, chunk))
    expect.not_by_hand(built_by_hand.tripwire(), BY_HAND)  # what ran: the static check cannot see everything


@check("chunked_matches_reference")
def test_chunked_matches_reference(student, reference, rng):
    for shapes, chunk in HIDDEN:
        q, k, v = qkv(rng, shapes)
        expected = reference.chunked_attention(q.double(), k.double(), v.double(), chunk)
        got = context(student, q, k, v, chunk)
        expect.close(got, expected, "context", variants=partial(variants, q, k, v, chunk))


# Last: the one call at full size. Code too slow for it (a loop over every key, say) times out here,
# and a call that timed out is not run again: the checks above are graded on small inputs first.
@check("chunked_peak_memory")
def test_chunked_peak_memory(student, rng):
    """Two full-size calls on different values, both measured from before the first: they must
    answer (a tensor of the right shape that depends on its input), and their peak stays under the
    bound. Both count, so that memory set aside by the first call (a buffer kept for the second to
    work in) is counted where it is taken."""
    shape = (MEMORY_SIZE, MEMORY_DIM)
    q, k, v, v_other = qkv(rng, [shape] * 4)
    warm = 2 * MEMORY_CHUNK  # a size the code must accept (chunk_size ≤ S)
    context(student, q[:warm], k[:warm], v[:warm], MEMORY_CHUNK)  # a small call's own failure, first
    # measured from a fresh worker in which torch has done what a chunked solution does, before the
    # module loads: memory its import or the small call sets aside counts (it could be freed inside
    # the full-size calls to hide a full score matrix), torch's own first-use memory does not
    with expect.peak_memory(student, WARM_TORCH, (MEMORY_SIZE, MEMORY_DIM, MEMORY_CHUNK)) as peak:
        context(student, q[:warm], k[:warm], v[:warm], MEMORY_CHUNK)
        first = context(student, q, k, v, MEMORY_CHUNK)
        with lost_axis(q, v, MEMORY_CHUNK):
            got = student.chunked_attention(q, k, v_other, MEMORY_CHUNK)
    second = expect.tensor(as_meant(got, shape), "context", shape, finite=False)
    answers(first, second)
    used, bound, matrix = (round(n / MIB, 1) for n in (peak.growth, MEMORY_BOUND, MATRIX_BYTES))
    text = MEMORY_TEXT.format(size=MEMORY_SIZE, dim=MEMORY_DIM, chunk=MEMORY_CHUNK, used=used, bound=bound,
                              matrix=matrix, source=peak.source)  # fmt: skip
    full = peak.growth >= MATRIX_BYTES
    expect.true(peak.growth <= MEMORY_BOUND, text, "builds_full_matrix" if full else None, used=used,
                matrix=matrix)  # fmt: skip
