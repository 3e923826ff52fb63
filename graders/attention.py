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
    """exp(x) / Σ exp(x) without subtracting the max: overflows on large scores (a known mistake)."""
    e = torch.exp(x.float())
    return (e / e.sum(dim=dim, keepdim=True)).double()


def weight_variants(q, k, v) -> dict[str, torch.Tensor]:
    """Attention weights as the common wrong formulas compute them, keyed by diagnosis id."""
    d_k = q.shape[-1]
    right = attention(q, k, v)[1]
    out = {
        "no_scaling": attention(q, k, v, scale=1.0)[1],
        "divide_by_dk": attention(q, k, v, scale=1.0 / d_k)[1],
        "softmax_wrong_axis": attention(q, k, v, softmax_dim=-2)[1],
        "scale_after_softmax": attention(q, k, v, scale=1.0)[1] / math.sqrt(d_k),
        "naive_softmax": naive_softmax(scores(q, k)),
    }
    if right.shape[-1] != right.shape[-2]:
        out["transposed_weights"] = right.transpose(-2, -1)
    return out


def context_variants(q, k, v) -> dict[str, torch.Tensor]:
    """Context vectors as the common wrong formulas compute them, keyed by diagnosis id."""
    d_k = q.shape[-1]
    v64 = v.double()
    plain = attention(q, k, v, scale=1.0)[1]
    return {
        "no_scaling": plain @ v64,
        "divide_by_dk": attention(q, k, v, scale=1.0 / d_k)[0],
        "softmax_wrong_axis": attention(q, k, v, softmax_dim=-2)[0],
        "scale_after_softmax": plain @ v64 / math.sqrt(d_k),
        "naive_softmax": naive_softmax(scores(q, k)) @ v64,
    }


def fit_softmax_scale(weights: torch.Tensor, raw_scores: torch.Tensor) -> tuple[float, float] | None:
    """Recover s from weights = softmax(s · raw_scores) by least squares on centred log-weights.

    Returns (s, relative residual), or None when the weights are not a softmax of the scores at
    all (rows not summing to one, zeros, too little spread to fit).
    """
    w, x = weights.double(), raw_scores.double()
    if (
        w.shape != x.shape
        or bool((w <= 1e-12).any())
        or not torch.allclose(w.sum(-1), torch.ones(()).double(), atol=1e-4)
    ):
        return None
    y = torch.log(w)
    y = y - y.mean(-1, keepdim=True)
    x = x - x.mean(-1, keepdim=True)
    denominator = float((x * x).sum())
    if denominator < 1e-9:
        return None
    s = float((x * y).sum()) / denominator
    residual = float((y - s * x).norm() / max(float(y.norm()), 1e-12))
    return s, residual


def scale_estimator(raw_scores: torch.Tensor, expected_scale: float, what: str = "√d_k"):
    """An `expect.close` estimator naming a wrong softmax scale, e.g. 1/4 where 1/2 = 1/√d_k."""

    def estimate(got: torch.Tensor):
        fitted = fit_softmax_scale(got, raw_scores)
        if fitted is None:
            return None
        s, residual = fitted
        if residual > 1e-3 or abs(s / expected_scale - 1) < 1e-3 or s <= 0:
            return None
        return "wrong_scale", {
            "got_scale": f"1/{1 / s:.4g}",
            "expected_scale": f"1/{1 / expected_scale:.4g}",
            "what": what,
        }

    return estimate


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


def project(x: torch.Tensor, state: dict[str, torch.Tensor], name: str) -> torch.Tensor:
    """x Wᵀ + b in float64 for the layer `name` of a state dict."""
    return x.double() @ state[f"{name}.weight"].double().T + state[f"{name}.bias"].double()
