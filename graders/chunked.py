"""Chunked attention for the graders: the online softmax in float64, and the mistakes made in it.

`online` walks the keys chunk by chunk as exercise 6 asks, with switches that reproduce what goes
wrong in practice, so that `variants` can hand `expect.close` the output of each wrong version at
the chunk size a check uses. An independent re-derivation (never the reference solution); the
right formula it must agree with is `graders.attention.attention`.
"""

from __future__ import annotations

import math

import torch


def online(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    chunk: int,
    *,
    scale: float | None = None,
    initial_max: float = float("-inf"),
    subtract_max: bool = True,
    rescale_sum: bool = True,
    rescale_denominator: bool = True,
    drop_last: bool = False,
    per_chunk_softmax: bool = False,
    final_division: bool = True,
    chunk_end: int = 0,
    rescale_after_adding: bool = False,
    max_before_correction: bool = False,
    denominator_over_all: bool = False,
    max_not_running: bool = False,
    compound_scale: bool = False,
    only_chunk: str = "",
    loop: str = "",
    drop_last_full: bool = False,
    reset_sums: bool = False,
    p_own_max: bool = False,
    max_unscaled: bool = False,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """The context (..., L, d_v) in float64, computed `chunk` keys at a time.

    `initial_max`: where the running maximum starts (a finite start underflows to 0/0 when every
    score is far below it); `subtract_max=False`: exp of the raw scores (overflows on large ones);
    `rescale_sum` / `rescale_denominator=False`: the running numerator / denominator is not
    multiplied by exp(m_old − m_new) when the maximum rises; `drop_last`: only the S // chunk full
    chunks are visited; `per_chunk_softmax`: each chunk is normalised on its own and the chunks'
    contexts averaged; `final_division=False`: the running numerator is returned as it is;
    `chunk_end=-1`: each chunk's slice ends one key early (an inclusive end read as exclusive);
    `rescale_after_adding`: the new chunk is added, then the sums rescaled (the new chunk too);
    `max_before_correction`: the running maximum is overwritten before the correction is taken, so
    the correction is exp(0) = 1; `denominator_over_all`: the chunk's p summed over every entry, not
    per query row; `max_not_running`: m_new is the chunk's own maximum, not the larger of it and m
    (consistent, but m may fall, and exp(m_old − m_new) overflows when it falls far);
    `compound_scale`: the queries rescaled inside the loop, so chunk j's scores carry the scale j + 1
    times; `only_chunk="first"`: the result returned after the first chunk (a return inside the
    loop), `"last"`: the running sums started afresh in every chunk, so only the last one counts;
    `loop="every_key"`: a chunk starts at every key (`range(S)`, the step forgotten),
    `"chunk_number"`: chunk i starts at key i (`range(number of chunks)`, never times chunk),
    `"chunk_count"`: the same over the S // chunk full chunks only, `"queries"`: the chunks run over
    the queries' length, range(0, L, chunk) (L < S here: the keys from about L on are dropped);
    `drop_last_full`: the loop runs while start + chunk < S, so the last chunk is dropped even when
    it is full; `reset_sums`: l and acc started afresh in every chunk while m keeps running (on
    ordinary scores the same as `only_chunk="last"`, but a last chunk far below the maximum ends in
    0/0). `loop="first_twice"`: the sums initialised from the first chunk, then the loop run from
    key 0 again, so the first chunk is added twice, `"skip_first"`: the loop starts at chunk_size, so
    the first chunk is never added; `p_own_max`: each chunk's exponentials taken
    relative to the chunk's own maximum while the sums are rescaled to the running one;
    `max_unscaled`: the running maximum taken over the unscaled scores q·kᵀ while the exponentials
    use the scaled ones (right on ordinary scores, 0/0 or inf/inf once they are large). `dtype`: the
    precision the loop runs in (float32, as the student's code does, shows where it overflows).
    """
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    keys = k.shape[-2]
    stop = keys // chunk * chunk if drop_last else keys - chunk if drop_last_full else keys
    starts = (
        list(range(keys)) if loop == "every_key"
        else list(range(-(-keys // chunk))) if loop == "chunk_number"
        else list(range(keys // chunk)) if loop == "chunk_count"
        else [s for s in range(0, q.shape[-2], chunk) if s < keys] if loop == "queries"
        else list(range(0, stop, chunk))
    )  # fmt: skip
    if loop == "first_twice":
        starts = starts[:1] + starts
    if loop == "skip_first":
        starts = starts[1:]
    if only_chunk:
        starts = starts[:1] if only_chunk == "first" else starts[-1:]
    if per_chunk_softmax:
        parts = [
            torch.softmax(q @ k[..., s : s + chunk, :].transpose(-2, -1) * scale, dim=-1)
            @ v[..., s : s + chunk, :]
            for s in starts
        ]
        return sum(parts) / len(parts)
    m = torch.full((*q.shape[:-1], 1), initial_max, dtype=dtype)  # (..., L, 1)
    l = torch.zeros_like(m)  # noqa: E741
    acc = torch.zeros((*q.shape[:-1], v.shape[-1]), dtype=dtype)  # (..., L, d_v)
    for j, s in enumerate(starts):
        end = s + chunk + chunk_end
        if end <= s:  # a chunk of one key, cut short: nothing of it is seen
            continue
        scores = q @ k[..., s:end, :].transpose(-2, -1) * (scale ** (j + 1) if compound_scale else scale)
        if reset_sums:
            l, acc = torch.zeros_like(l), torch.zeros_like(acc)  # noqa: E741
        if subtract_max:
            top = (q @ k[..., s:end, :].transpose(-2, -1) if max_unscaled else scores).amax(-1, keepdim=True)
            m_new = top if max_not_running else torch.maximum(m, top)
            correction, p = (
                torch.exp((m_new if max_before_correction else m) - m_new),
                torch.exp(scores - (top if p_own_max else m_new)),
            )
            m = m_new
        else:
            correction, p = torch.ones_like(m), torch.exp(scores)
        added = p.sum() if denominator_over_all else p.sum(-1, keepdim=True)
        if rescale_after_adding:
            l, acc = (l + added) * correction, (acc + p @ v[..., s:end, :]) * correction  # noqa: E741
            continue
        l = (l * correction if rescale_denominator else l) + added  # noqa: E741
        acc = (acc * correction if rescale_sum else acc) + p @ v[..., s:end, :]
    return acc / l if final_division else acc


MISTAKES: dict[str, dict | list[dict]] = {  # diagnosis id -> the switches of `online` that reproduce it
    # (a list: several ways of writing one mistake, the best fitting one counts)
    "no_scaling": dict(scale=1.0),
    "finite_initial_max": dict(initial_max=0.0),
    "no_running_max": dict(subtract_max=False),
    "missing_rescale": dict(rescale_sum=False),
    "denominator_not_rescaled": dict(rescale_denominator=False),
    "drops_last_chunk": [dict(drop_last=True), dict(drop_last_full=True), dict(loop="queries")],
    "chunks_normalised_separately": dict(per_chunk_softmax=True),
    "missing_final_division": dict(final_division=False),
    "chunk_skips_last_key": dict(chunk_end=-1),
    "rescale_after_adding": dict(rescale_after_adding=True),
    "max_before_correction": dict(max_before_correction=True),
    "denominator_over_all": dict(denominator_over_all=True),
    "max_not_running": dict(max_not_running=True),
    "scale_compounds": dict(compound_scale=True),
    "only_first_chunk": dict(only_chunk="first"),
    "only_last_chunk": [dict(only_chunk="last"), dict(reset_sums=True)],
    "chunks_overlap": [dict(loop="every_key"), dict(loop="chunk_number"), dict(loop="chunk_count")],
    "first_chunk_twice": dict(loop="first_twice"),
    "first_chunk_skipped": dict(loop="skip_first"),
    "p_uses_chunk_max": dict(p_own_max=True),
    "max_of_unscaled_scores": dict(max_unscaled=True),
}


def mistake(q, k, v, chunk: int, diagnosis: str, dtype: torch.dtype = torch.float64):
    """The context the mistake `diagnosis` gives here (a list where it is written several ways)."""
    switches = MISTAKES[diagnosis]
    if isinstance(switches, list):
        return [online(q, k, v, chunk, dtype=dtype, **one) for one in switches]
    return online(q, k, v, chunk, dtype=dtype, **switches)


def variants(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, chunk: int) -> dict[str, torch.Tensor]:
    """The context each known mistake gives at this chunk size, keyed by diagnosis id. A mistake
    that gives the right answer here (a rescale that never happens with one chunk, say) is left
    out: it cannot be told from a right answer on this input; so is one whose output here has no
    finite value."""
    right = online(q, k, v, chunk)
    out = {d: mistake(q, k, v, chunk, d) for d in MISTAKES}
    if q.shape[-1] != v.shape[-1]:
        out["scale_uses_dv"] = online(q, k, v, chunk, scale=1 / math.sqrt(v.shape[-1]))
    out["divide_by_dk"] = online(q, k, v, chunk, scale=1 / q.shape[-1])  # the scale applied twice
    out["scale_inverted"] = online(q, k, v, chunk, scale=math.sqrt(q.shape[-1]))  # times √d_k
    # the scale read off the keys' axis: 1/√S (k.shape[-2]) or 1/√chunk (a full chunk's length)
    counts = [n for n in {k.shape[-2], chunk if chunk < k.shape[-2] else 0} if n > 1 and n != q.shape[-1]]
    if counts:
        out["scale_uses_num_keys"] = [online(q, k, v, chunk, scale=1 / math.sqrt(n)) for n in sorted(counts)]
    # a mistake whose output here is all NaN tells nothing: any other NaN-making slip would match it
    kept = {d: [t for t in each(got) if not _same(t, right) and bool(torch.isfinite(t).any())]
            for d, got in out.items()}  # fmt: skip
    return {d: got[0] if len(got) == 1 else got for d, got in kept.items() if got}


def each(got) -> list[torch.Tensor]:
    """The ways of writing one mistake (a single output, or a list of them) as a list."""
    return got if isinstance(got, list) else [got]


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True))


def shifted_keys(rng: torch.Generator, q_shape, k_shape, v_shape, shift: float):
    """q, k, v and k moved by a constant per query: every scaled score q·k/√d_k is the score of
    (q, k_plain) plus `shift`, the same for all keys of a row, so the softmax, and the context, are
    those of (q, k_plain, v). q's last feature is 1 and k's gets shift·√d_k added: q·k moves by
    exactly shift·√d_k (up to float32 rounding of k). Returns q, k, k_plain, v."""
    q = torch.randn(q_shape, generator=rng)
    q[..., -1] = 1.0
    k_plain = torch.randn(k_shape, generator=rng)
    v = torch.randn(v_shape, generator=rng)
    k = k_plain.clone()
    k[..., -1] += shift * math.sqrt(q_shape[-1])
    return q, k, k_plain, v


def stepped_keys(rng: torch.Generator, q_shape, k_shape, v_shape, chunk: int, shifts: list[float]):
    """q, k, v as `shifted_keys` makes them, but in the first batch element the keys of chunk j are
    moved by shifts[j] (the last shift for any further chunk): each chunk's scores sit near a level
    of their own, so its largest score differs from the previous chunk's by about the step between
    them. The other batch elements keep one level, shifts[0]. Returns q, k, v."""
    q, k, _, v = shifted_keys(rng, q_shape, k_shape, v_shape, shifts[0])
    root = math.sqrt(q_shape[-1])
    for j, start in enumerate(range(0, k_shape[-2], chunk)):
        k[0, ..., start : start + chunk, -1] += (shifts[min(j, len(shifts) - 1)] - shifts[0]) * root
    return q, k, v
