"""Attention maths shared by the graders: float64 oracles, known wrong variants, estimators.

The harness knows nothing about attention; this module is where the graders keep it. Every
function here is an independent re-derivation (never the reference solution), so a check can
compare a student's output against the right formula and against each wrong formula students
write, and name the one that matches.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def scores(q: torch.Tensor, k: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    """q kᵀ · scale in float64, scale defaulting to 1/√d_k.   (..., L, S)"""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    return q.double() @ k.double().transpose(-2, -1) * scale


def attention(q, k, v, *, scale: float | None = None, softmax_dim: int = -1):
    """(context, weights) in float64 with a configurable scale and softmax axis."""
    weights = torch.softmax(scores(q, k, scale), dim=softmax_dim)  # (..., L, S)
    return weights @ v.double(), weights  # (..., L, d_v), (..., L, S)


def attention_oracle(q, k, v) -> torch.Tensor:
    """torch's own F.scaled_dot_product_attention, in float64: the independent context oracle."""
    return F.scaled_dot_product_attention(q.double(), k.double(), v.double())


def naive_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """exp(x) / Σ exp(x) in float32 without subtracting the max: overflows on large scores."""
    e = torch.exp(x.float())
    return (e / e.sum(dim=dim, keepdim=True)).double()


def global_max_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """softmax in float32 shifted by the maximum of the whole tensor instead of each row's: a row
    far below the global maximum underflows to 0/0 = NaN on large scores."""
    e = torch.exp(x.float() - x.float().max())
    return (e / e.sum(dim=dim, keepdim=True)).double()


def row_min_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """softmax in float32 shifted by each row's minimum instead of its maximum: exact in theory, but
    exp() of (largest − smallest) overflows on large scores."""
    e = torch.exp(x.float() - x.float().amin(dim=dim, keepdim=True))
    return (e / e.sum(dim=dim, keepdim=True)).double()


def mistakes(q, k, v) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """(context, weights) as the common wrong formulas compute them, keyed by diagnosis id.

    Pairs, so that a check judging one output can ask the other to agree (`expect.close(...,
    joint=)`): dividing V by √d_k instead of the scores and dividing the weights by √d_k after the
    softmax give the same context, and only the weights tell them apart.
    """
    d_k = q.shape[-1]
    v64 = v.double()
    right_c, right_w = attention(q, k, v)
    plain = attention(q, k, v, scale=1.0)[1]
    after = plain / math.sqrt(d_k)
    naive = naive_softmax(scores(q, k))
    shifted = global_max_softmax(scores(q, k))
    row_min = row_min_softmax(scores(q, k))
    twice = torch.softmax(right_w, dim=-1)
    column_shift = torch.exp(scores(q, k) - scores(q, k).amax(-2, keepdim=True))  # the max over the queries
    column_shift = column_shift / column_shift.sum(-1, keepdim=True)
    shifted_rows = torch.exp(scores(q, k) - scores(q, k).amax(-1, keepdim=True))  # the max trick, per row
    whole = [torch.exp(scores(q, k)) / torch.exp(scores(q, k)).sum(), shifted_rows / shifted_rows.sum()]
    out = {
        "no_scaling": (plain @ v64, plain),
        "divide_by_dk": attention(q, k, v, scale=1.0 / d_k),
        "softmax_wrong_axis": attention(q, k, v, softmax_dim=-2),
        "scale_after_softmax": (after @ v64, after),
        "scaled_values": (plain @ v64 / math.sqrt(d_k), plain),  # V divided by √d_k instead of the scores
        "naive_softmax": (naive @ v64, naive),
        "global_max_softmax": (shifted @ v64, shifted),
        "softmax_implicit_dim": attention(q, k, v, softmax_dim=0 if q.dim() in (0, 1, 3) else 1),
        "context_from_keys": (right_w @ k.double(), right_w),
        "row_min_softmax": (row_min @ v64, row_min),
        "double_softmax": (twice @ v64, twice),
        "max_shift_wrong_axis": (column_shift @ v64, column_shift),
        "context_from_scores": (scores(q, k) @ v64, right_w),
        "returns_scores": (right_c, scores(q, k)),
        "softmax_whole_tensor": [(w @ v64, w) for w in whole],
        "log_softmax": (
            torch.log_softmax(scores(q, k), dim=-1) @ v64,
            torch.log_softmax(scores(q, k), dim=-1),
        ),
    }
    causal = torch.ones(right_w.shape[-2:], dtype=torch.bool).tril()  # (L, S): query i sees keys ≤ i
    masked = torch.softmax(scores(q, k).masked_fill(~causal, float("-inf")), dim=-1)
    out["unwanted_mask"] = (masked @ v64, masked)
    if right_w.shape[-1] != right_w.shape[-2]:
        out["transposed_weights"] = (right_c, right_w.transpose(-2, -1))
    else:  # wᵀ V only has a shape when L = S
        out["transposed_in_context"] = (right_w.transpose(-2, -1) @ v64, right_w)
    return out


def context_variants(q, k, v) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """`mistakes` as (context, weights) pairs: for a check of the context, joint with the weights."""
    return mistakes(q, k, v)


def each(variant, fn):
    """`fn` applied to a variant's pair, or to each pair of a variant written several ways (a list)."""
    return [fn(pair) for pair in variant] if isinstance(variant, list) else fn(variant)


def swapped(variants):
    """(a, b) pairs as (b, a), for the check of the other output, joined by the first. Given a
    function that computes the pairs (`expect.close` calls it only for a wrong answer), a function."""
    if callable(variants):
        return lambda: swapped(variants())
    return {d: each(v, lambda pair: (pair[1], pair[0])) for d, v in variants.items()}


def picked(variants, index: int):
    """One output of each pair (0: the first, 1: the second), for a check without joint evidence;
    a function for a function, as `swapped`."""
    if callable(variants):
        return lambda: picked(variants(), index)
    return {d: each(v, lambda pair: pair[index]) for d, v in variants.items()}


def weight_variants(q, k, v) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """`mistakes` as (weights, context) pairs: for a check of the weights, joint with the context."""
    return swapped(mistakes(q, k, v))


def row_sum_variants(q, k, v) -> dict[str, torch.Tensor]:
    """weights.sum(-1) of every mistake whose weights' rows do not sum to one."""
    out = {}
    for diagnosis, sums in picked(mistakes(q, k, v), 1).items():
        sums = each(sums, lambda w: w.sum(-1))
        forms = sums if isinstance(sums, list) else [sums]
        if not all(torch.allclose(s, torch.ones_like(s), atol=1e-3) for s in forms):
            out[diagnosis] = sums
    return out


# ---------------------------------------------------------------- the scale, read off the weights


def fit_softmax_scale(
    weights: torch.Tensor, raw_scores: torch.Tensor, dim: int = -1
) -> tuple[float, float] | None:
    """Recover s from weights ∝ exp(s · raw_scores) along `dim`, by least squares on log-weights
    centred within each slice along `dim` (so each slice may carry its own factor).

    Zero weights are left out of the fit: a dropout mask, a causal mask or an underflow does not
    hide the scale.
    Whether the slices sum to one is another check's business. Returns (s, relative residual), or
    None when there is too little to fit (non-finite or negative weights, fewer than two nonzero
    weights per slice, no spread).
    """
    w, x = weights.double(), raw_scores.double()
    if w.shape != x.shape or not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
        return None
    kept = (w > 1e-12).double()
    kept = kept * (kept.sum(dim, keepdim=True) >= 2)  # a slice with one weight left (a mask) says nothing
    count = kept.sum(dim, keepdim=True).clamp_min(1)
    if float(kept.sum()) < 4:
        return None
    y = torch.log(w.clamp_min(1e-300)) * kept
    x = x * kept
    y = (y - y.sum(dim, keepdim=True) / count) * kept
    x = (x - x.sum(dim, keepdim=True) / count) * kept
    denominator = float((x * x).sum())
    if denominator < 1e-9:
        return None
    s = float((x * y).sum()) / denominator
    residual = float((y - s * x).norm() / max(float(y.norm()), 1e-12))
    return s, residual


def recovered_scale(weights: torch.Tensor, raw_scores: torch.Tensor | list[torch.Tensor]) -> float | None:
    """The factor the scores were multiplied by before a softmax, read off the weights alone.

    Tried on every reading a weights tensor can have, so that another mistake does not hide the
    scale: a softmax along any axis (the keys, the queries, the heads), weights returned as (L, S)
    or transposed, weights that are the scaled scores themselves (no softmax), any of several
    `raw_scores` (the unscaled scores as the right formula and as other known mistakes compute
    them, e.g. a wrong split into heads), and, last, slice by slice: each (L, S) slice of the
    weights against whichever slice of the scores it fits (batch and heads shuffled). None when no
    reading fits (within a relative residual of 1e-3).
    """
    candidates = raw_scores if isinstance(raw_scores, list) else [raw_scores]
    for raw in candidates:
        found = _scale_of(weights, raw)
        if found is not None:
            return found
    if weights.dim() < 3:
        return None
    for raw in candidates:
        rows, cols = raw.shape[-2:]
        pieces = [r for r in raw.reshape(-1, rows, cols)]
        for i in range(weights.dim()):  # any two axes of the weights may hold (queries, keys)
            for j in range(weights.dim()):
                if i != j and (weights.shape[i], weights.shape[j]) == (rows, cols):
                    found = _scale_slice_by_slice(weights.movedim((i, j), (-2, -1)), pieces)
                    if found is not None:
                        return found
    return None


def _scale_slice_by_slice(weights: torch.Tensor, pieces: list[torch.Tensor]) -> float | None:
    """One scale shared by every (L, S) slice of `weights`, each fitted to whichever of `pieces` (raw
    score slices) it matches: heads and batch elements may come in any order."""
    common: list[float] | None = None
    for piece in weights.reshape(-1, *weights.shape[-2:]):
        fits = {_scale_of(piece, r) for r in pieces} - {None}
        if not fits:
            return None
        common = (
            sorted(fits)
            if common is None
            else [s for s in common if any(abs(s / t - 1) < 1e-3 for t in fits)]
        )
        if not common:
            return None
    return common[0] if common else None


def _scale_of(weights: torch.Tensor, raw: torch.Tensor) -> float | None:
    """The scale of `weights` against one tensor of raw scores, under every layout and axis."""
    layouts = [weights] + ([weights.transpose(-2, -1)] if weights.dim() >= 2 else [])
    for layout in layouts:
        for dim in range(-1, -layout.dim() - 1, -1):
            fitted = fit_softmax_scale(layout, raw, dim)
            if fitted is not None and fitted[1] < 1e-3 and fitted[0] > 0:
                return fitted[0]
        if layout.shape == raw.shape and bool(torch.isfinite(layout).all()):  # the scaled scores, no softmax
            x, y = raw.double(), layout.double()
            s = float((x * y).sum() / (x * x).sum().clamp_min(1e-12))
            if s > 0 and float((y - s * x).norm()) < 1e-3 * max(float(y.norm()), 1e-12):
                return s
    return None


def scale_diagnosis(found: float, expected: float, what: str, named: dict[str, float]) -> tuple[str, dict]:
    """The diagnosis for a recovered scale `found` where `expected` is due: a named one when it is
    one of `named` (diagnosis id -> the scale that mistake gives), else `wrong_scale` with both."""
    for diagnosis, scale in named.items():
        if abs(found / scale - 1) < 1e-3:
            return diagnosis, {}
    return "wrong_scale", {
        "got_scale": as_fraction(found),
        "expected_scale": as_fraction(expected),
        "what": what,
    }


def as_fraction(scale: float) -> str:
    """A scale as a student writes it: "1" or "1/4" (or "1/5.657")."""
    return "1" if abs(scale - 1) < 1e-3 else f"1/{1 / scale:.4g}"


def scale_estimator(raw_scores: torch.Tensor, expected_scale: float, what: str = "√d_k"):
    """An `expect.close` estimator naming a wrong softmax scale, e.g. 1/4 where 1/2 = 1/√d_k."""

    def estimate(got: torch.Tensor):
        found = recovered_scale(got, raw_scores)
        if found is None or abs(found / expected_scale - 1) < 1e-3:
            return None
        return scale_diagnosis(found, expected_scale, what, {})

    return estimate


def localised(right_weights: torch.Tensor, weights: torch.Tensor | None, before: str, after: str):
    """An `expect.close` estimator for an output that no known formula explains: it says which side
    of the attention weights the mistake is on. The student's own `weights` are the evidence: right
    weights put the mistake after them (`after`); weights that are a proper distribution over the
    keys (every row ≥ 0, summing to one) but not the right one put it in the scores or the softmax
    (`before`). Other weights say nothing."""

    def estimate(_: torch.Tensor):
        if weights is None or weights.shape != right_weights.shape or not bool(torch.isfinite(weights).all()):
            return None
        w = weights.double()
        if torch.allclose(w, right_weights.double(), rtol=1e-4, atol=1e-5):
            return after, {}
        rows = w.sum(-1)
        if bool((w >= 0).all()) and torch.allclose(rows, torch.ones_like(rows), atol=1e-3):
            return before, {}
        return None

    return estimate


def dropped_out(right_weights: torch.Tensor, weights: torch.Tensor | None, name: str = "dropout_on_weights"):
    """An `expect.close` estimator naming a dropout on the attention weights (F.dropout, which drops
    whenever it is not told training=False): the student's own `weights` are the right ones with
    some entries zeroed and every other one scaled by the same 1/(1 − p)."""

    def estimate(_: torch.Tensor):
        if weights is None or weights.shape != right_weights.shape or not bool(torch.isfinite(weights).all()):
            return None
        w, right = weights.detach().double(), right_weights.double()
        kept = (w != 0) & (right > 1e-3)
        if int(kept.sum()) < 4:  # (a small tensor may come through with nothing dropped: still scaled)
            return None
        ratios = w[kept] / right[kept]
        factor = float(ratios.median())
        if factor <= 1.0 + 1e-6 or not torch.allclose(ratios, torch.full_like(ratios, factor), rtol=1e-3):
            return None
        return name, {"p": f"{1 - 1 / factor:.2g}"}

    return estimate


def scale_estimator_via_weights(weights: torch.Tensor | None, q, k, v, what: str = "√d_k"):
    """An `expect.close` estimator for the context: when the context is the student's own weights
    times V, the scale read off those weights names the mistake (e.g. 1/2 where 1/4 is due)."""

    def estimate(context: torch.Tensor):
        if weights is None or weights.shape != context.shape[:-1] + (v.shape[-2],):
            return None
        if not torch.allclose(context.double(), weights.double() @ v.double(), rtol=1e-3, atol=1e-4):
            return None
        return scale_estimator(scores(q, k, 1.0), 1 / math.sqrt(q.shape[-1]), what)(weights)

    return estimate


# ---------------------------------------------------------------- layers


def linear_weights(
    names: list[str], dim_in: int, dim_out: int, rng: torch.Generator
) -> dict[str, torch.Tensor]:
    """Seeded float32 weights and biases for nn.Linear layers called `names` (a state dict)."""
    bound = 1 / math.sqrt(dim_in)
    out = {}
    for name in names:
        out[f"{name}.weight"] = (torch.rand(dim_out, dim_in, generator=rng) * 2 - 1) * bound
        out[f"{name}.bias"] = (torch.rand(dim_out, generator=rng) * 2 - 1) * bound
    return out


def project(x: torch.Tensor, state: dict[str, torch.Tensor], name: str, *, mistake: str = "") -> torch.Tensor:
    """x Wᵀ + b in float64 for the layer `name` of a state dict; `mistake` reproduces a hand-made
    linear gone wrong: "weight_not_transposed" (x W + b), "missing_bias" (x Wᵀ)."""
    weight, bias = state[f"{name}.weight"].double(), state[f"{name}.bias"].double()
    if mistake == "weight_not_transposed":
        return x.double() @ weight + bias
    if mistake == "missing_bias":
        return x.double() @ weight.T
    return x.double() @ weight.T + bias


def scaled_dot_product_attention(q, k, v):
    """A correct scaled_dot_product_attention, put in place of a student's own when that one cannot
    answer, so that the layer built on it is graded as written (error carried forward). It runs
    inside the sandbox, appended to the student's module: it imports what it needs itself."""
    import torch

    weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)  # (..., L, S)
    return weights @ v, weights  # (..., L, d_v), (..., L, S)
