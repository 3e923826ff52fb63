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
    per query row.
    """
    q, k, v = q.double(), k.double(), v.double()
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    keys = k.shape[-2]
    stop = keys // chunk * chunk if drop_last else keys
    starts = list(range(0, stop, chunk))
    if per_chunk_softmax:
        parts = [
            torch.softmax(q @ k[..., s : s + chunk, :].transpose(-2, -1) * scale, dim=-1)
            @ v[..., s : s + chunk, :]
            for s in starts
        ]
        return sum(parts) / len(parts)
    m = torch.full((*q.shape[:-1], 1), initial_max, dtype=torch.float64)  # (..., L, 1)
    l = torch.zeros_like(m)  # noqa: E741
    acc = torch.zeros((*q.shape[:-1], v.shape[-1]), dtype=torch.float64)  # (..., L, d_v)
    for s in starts:
        end = s + chunk + chunk_end
        if end <= s:  # a chunk of one key, cut short: nothing of it is seen
            continue
        scores = q @ k[..., s:end, :].transpose(-2, -1) * scale  # (..., L, c)
        if subtract_max:
            m_new = torch.maximum(m, scores.amax(-1, keepdim=True))
            correction, p = (
                torch.exp((m_new if max_before_correction else m) - m_new),
                torch.exp(scores - m_new),
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


MISTAKES: dict[str, dict] = {  # diagnosis id -> the switches of `online` that reproduce it
    "no_scaling": dict(scale=1.0),
    "finite_initial_max": dict(initial_max=0.0),
    "no_running_max": dict(subtract_max=False),
    "missing_rescale": dict(rescale_sum=False),
    "denominator_not_rescaled": dict(rescale_denominator=False),
    "drops_last_chunk": dict(drop_last=True),
    "chunks_normalised_separately": dict(per_chunk_softmax=True),
    "missing_final_division": dict(final_division=False),
    "chunk_skips_last_key": dict(chunk_end=-1),
    "rescale_after_adding": dict(rescale_after_adding=True),
    "max_before_correction": dict(max_before_correction=True),
    "denominator_over_all": dict(denominator_over_all=True),
}


def variants(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, chunk: int) -> dict[str, torch.Tensor]:
    """The context each known mistake gives at this chunk size, keyed by diagnosis id. A mistake
    that gives the right answer here (a rescale that never happens with one chunk, say) is left
    out: it cannot be told from a right answer on this input; so is one whose output here has no
    finite value."""
    right = online(q, k, v, chunk)
    out = {d: online(q, k, v, chunk, **switches) for d, switches in MISTAKES.items()}
    if q.shape[-1] != v.shape[-1]:
        out["scale_uses_dv"] = online(q, k, v, chunk, scale=1 / math.sqrt(v.shape[-1]))
    # a mistake whose output here is all NaN tells nothing: any other NaN-making slip would match it
    return {d: got for d, got in out.items() if not _same(got, right) and bool(torch.isfinite(got).any())}


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
