"""Positional-encoding and permutation maths shared by the graders: float64 oracles and wrong variants.

Like `graders/attention.py`, everything here is re-derived from the formulas (never taken from the
reference solution), so visible checks can use it. The sinusoidal table is

    PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))
    PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))

with positions counted from 0; for an odd d_model the last column is a sine without a cosine
partner. `pe_variants` computes the tables that the common wrong formulas produce, keyed by
diagnosis id, so a check can name the mistake a student's table matches.

Permutations follow the exercise's convention: `order` lists the original token indices in their
new positions, so a permuted sequence is `tokens[order]` and undoing it needs the inverse.
"""

from __future__ import annotations

import math

import torch

from graders import attention as A

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LESSON_ORDERS: list[list[int]] = [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [0, 2, 1, 4, 3]]  # ABCDE, EDCBA, ACBED
LAYERS = ["query", "key", "value"]


# ---------------------------------------------------------------- sinusoidal tables


def _positions(seq_len: int, first: int = 0) -> torch.Tensor:
    return torch.arange(first, first + seq_len, dtype=torch.float64)[:, None]  # (L, 1)


def _interleaved(angles: torch.Tensor, swap: bool = False) -> torch.Tensor:
    """sin on even columns and cos on odd ones (the other way round with `swap`).   (L, d)"""
    even = torch.zeros(angles.shape[-1], dtype=torch.bool)
    even[0::2] = True
    first, second = (torch.cos, torch.sin) if swap else (torch.sin, torch.cos)
    return torch.where(even, first(angles), second(angles))


def column_exponents(d_model: int) -> torch.Tensor:
    """2i / d_model for every column j (i = j // 2): both columns of a sin/cos pair share it.   (d,)"""
    j = torch.arange(d_model, dtype=torch.float64)
    return 2 * torch.div(j, 2, rounding_mode="floor") / d_model


def sinusoidal(seq_len: int, d_model: int) -> torch.Tensor:
    """The correct table in float64.   (seq_len, d_model)"""
    return _interleaved(_positions(seq_len) / 10000.0 ** column_exponents(d_model))


def _concatenated(seq_len: int, d_model: int) -> torch.Tensor:
    """All sines first, then all cosines (torch.cat instead of interleaving).   (L, d)"""
    pair_exponents = column_exponents(d_model)[0::2]  # (ceil(d/2),)
    angles = _positions(seq_len) / 10000.0**pair_exponents  # (L, ceil(d/2))
    return torch.cat([torch.sin(angles), torch.cos(angles[:, : d_model // 2])], dim=-1)


def pe_variants(seq_len: int, d_model: int) -> dict[str, torch.Tensor]:
    """The table as common wrong formulas compute it, keyed by diagnosis id.   each (L, d)"""
    pos = _positions(seq_len)
    j = torch.arange(d_model, dtype=torch.float64)
    two_i = 2 * torch.div(j, 2, rounding_mode="floor")
    out = {
        "pe_sin_cos_swapped": _interleaved(pos / 10000.0 ** (two_i / d_model), swap=True),
        "pe_concatenated": _concatenated(seq_len, d_model),
        # the angles never multiplied by pos: every row is the row of pos = 1
        "pe_ignores_position": _interleaved(torch.ones_like(pos) / 10000.0 ** (two_i / d_model)),
        "pe_positions_from_one": _interleaved(_positions(seq_len, 1) / 10000.0 ** (two_i / d_model)),
        "pe_exponent_i_over_d": _interleaved(pos / 10000.0 ** (two_i / 2 / d_model)),
        "pe_exponent_doubled": _interleaved(pos / 10000.0 ** (2 * two_i / d_model)),
        "pe_odd_column_exponent": _interleaved(pos / 10000.0 ** (j / d_model)),
        "pe_frequency_inverted": _interleaved(pos * 10000.0 ** (two_i / d_model)),
        "pe_exponent_column_index": _interleaved(pos / 10000.0 ** (2 * j / d_model)),
        "pe_row0_zero": torch.cat(
            [torch.zeros(1, d_model, dtype=torch.float64), sinusoidal(seq_len, d_model)[1:]]
        ),
        "pe_cos_of_sin": _odd_columns(sinusoidal(seq_len, d_model), lambda t: torch.cos(torch.sin(t))),
        "pe_all_sines": _odd_columns(sinusoidal(seq_len, d_model), torch.sin),
        "pe_cos_sign": _odd_columns(sinusoidal(seq_len, d_model), lambda t: -torch.cos(t)),
        "pe_scaled": sinusoidal(seq_len, d_model) * d_model**0.5,
        "pe_power_of_position": _interleaved((pos / 10000.0) ** (two_i / d_model)),
        "pe_integer_values": sinusoidal(seq_len, d_model).trunc(),
        "pe_pos_and_i_swapped": _interleaved(two_i / 2 / 10000.0 ** (2 * pos / d_model)),
        # the cosines computed into a new tensor (cos_cols = torch.cos(...) rebinds a view's name) and
        # never written into the table: its odd columns stay at the zeros it was made with
        "pe_columns_never_written": _odd_columns(sinusoidal(seq_len, d_model), torch.zeros_like),
    }
    if d_model % 2:  # a loop over the d_model // 2 (sin, cos) pairs: the last (sine) column stays 0
        last_zero = sinusoidal(seq_len, d_model)
        last_zero[:, -1] = 0.0
        out["pe_odd_last_column_zero"] = last_zero
    return out


def _odd_columns(table: torch.Tensor, of_angle) -> torch.Tensor:
    """`table` with each odd column replaced by `of_angle` of its pair's angle.   (L, d)"""
    angles = _positions(table.shape[0]) / 10000.0 ** column_exponents(table.shape[1])  # (L, d)
    out = table.clone()
    out[:, 1::2] = of_angle(angles[:, 1::2])
    return out


def rows_all_equal(table: torch.Tensor, atol: float = 1e-6) -> bool:
    """True when every row of the table is the same vector (no position information at all)."""
    t = table.detach().double()
    return bool(torch.allclose(t, t[:1].expand_as(t), rtol=0, atol=atol))


def pair_norms(table: torch.Tensor) -> torch.Tensor:
    """PE[:, 2i]² + PE[:, 2i+1]² for every complete pair: all ones when each pair is (sin θ, cos θ)."""
    t = table.detach().double()
    pairs = t.shape[-1] // 2
    return t[:, 0 : 2 * pairs : 2] ** 2 + t[:, 1 : 2 * pairs : 2] ** 2  # (L, d // 2)


def pair_frequencies(table: torch.Tensor, atol: float) -> list[float] | None:
    """ω_i of each complete pair of columns when the table is PE[pos, 2i] = sin(pos·ω_i),
    PE[pos, 2i+1] = cos(pos·ω_i) for pos = 0, 1, …; None when it is not.

    ω_i is read off position 1 (atan2 of the pair), so it is known modulo 2π, which is all that
    integer positions can tell. Any frequency is accepted here: which frequencies are right is the
    formula's business, and the structure (interleaved sines and cosines sharing one angle,
    positions counted from 0) is judged on its own.
    """
    t = table.detach().double()
    if t.dim() != 2 or t.shape[0] < 2 or t.shape[1] < 2:
        return None
    pos = torch.arange(t.shape[0], dtype=torch.float64)
    out = []
    for i in range(t.shape[1] // 2):
        omega = float(torch.atan2(t[1, 2 * i], t[1, 2 * i + 1]))
        angles = pos * omega
        if not (
            torch.allclose(t[:, 2 * i], torch.sin(angles), rtol=0, atol=atol)
            and torch.allclose(t[:, 2 * i + 1], torch.cos(angles), rtol=0, atol=atol)
        ):
            return None
        out.append(omega)
    return out


def last_column_is_sine(table: torch.Tensor, atol: float) -> bool:
    """Is the last column a sine of an angle that grows from 0 at position 0 (the lone sine of an odd
    d_model)? 0 at position 0, within [-1, 1], and not a column of zeros; which angle is the
    formula checks' business."""
    if table.dim() != 2 or table.shape[0] < 2:
        return False
    column = table.detach().double()[:, -1]
    largest = float(column.abs().max())
    return abs(float(column[0])) <= atol and 0.0 < largest <= 1 + atol


def base_of(table: torch.Tensor, atol: float) -> float | None:
    """b when the table's pairs turn at ω_i = b^(-2i/d_model) for one b (None when they do not)."""
    omegas = pair_frequencies(table, atol)
    d_model = table.shape[-1]
    if omegas is None or len(omegas) < 2 or not all(0 < o < 1 for o in omegas[1:]):
        return None
    bases = [o ** (-d_model / (2 * i)) for i, o in enumerate(omegas) if i > 0]
    return bases[0] if max(bases) - min(bases) < 1e-3 * max(bases) else None


def exponent_shift(factor: float, d_model: int) -> int | None:
    """k when `factor` is 10000^(-k/d_model) for a small non-zero integer k: the exponent is
    (2i + k)/d_model (an arange of 2i that starts at 1, or at 2), which turns every pair at the same
    wrong factor, as scaled positions would; None otherwise."""
    if factor <= 0:
        return None
    k = -d_model * math.log(factor) / math.log(10000.0)
    nearest = round(k)
    if nearest == 0 or abs(nearest) > 4 or abs(k - nearest) > 1e-3:
        return None
    return nearest


def frequency_estimator(d_model: int, atol: float, others: list[torch.Tensor] = ()):
    """An `expect.close` estimator for a table whose structure is right but whose frequencies are
    not: names every frequency 1 (an integer division in the exponent); every frequency off by the
    same factor (the positions scaled, e.g. pos / seq_len, not the frequency term); another base than 10000,
    when the student's tables for the other sizes in `others` show that same base (a frequency term
    that only looks like another base for one d_model is no base mistake); or else the first pair
    whose frequency is wrong, with both values."""

    def estimate(got: torch.Tensor):
        omegas = pair_frequencies(got, atol)
        if omegas is None:
            return None
        wanted = [10000.0 ** (-2 * i / d_model) for i in range(len(omegas))]
        wrong = [i for i, (o, w) in enumerate(zip(omegas, wanted, strict=True)) if abs(o - w) > 1e-3]
        if not wrong:
            return None
        if all(abs(o - 1.0) < 1e-3 for o in omegas):
            return "pe_integer_division", {}
        ratios = [o / w for o, w in zip(omegas, wanted, strict=True)]
        if max(ratios) - min(ratios) < 1e-3 * max(ratios):  # every frequency off by one factor
            shift = exponent_shift(ratios[0], d_model)
            if shift is not None:  # 10000^(-k/d): the exponent counts 2i from k, not the positions
                sign = "+" if shift > 0 else "-"
                return "pe_exponent_shifted", {
                    "factor": f"{ratios[0]:.4g}",
                    "exponent": f"(2i {sign} {abs(shift)})/d_model",
                }
            return "pe_positions_scaled", {"factor": f"{ratios[0]:.4g}", "seq_len": got.shape[0]}
        bases = [base_of(t, atol) for t in (got, *others)]
        if bases[0] is not None and all(b is not None and abs(b / bases[0] - 1) < 1e-3 for b in bases):
            return "pe_wrong_base", {"base": f"{bases[0]:.6g}"}
        i = wrong[0]
        return "pe_wrong_frequency", {"pair": i, "got": f"{omegas[i]:.6g}", "expected": f"{wanted[i]:.6g}"}

    return estimate


# ---------------------------------------------------------------- permutations


def inverse(order: list[int]) -> list[int]:
    """The permutation that undoes `order`: inverse[order[k]] = k."""
    out = [0] * len(order)
    for k, original in enumerate(order):
        out[original] = k
    return out


def restore(outputs: torch.Tensor, order: list[int]) -> torch.Tensor:
    """Outputs of `x[..., order, :]` put back in the original token order.   (..., L, E)"""
    return outputs[..., inverse(order), :]


def letters(order: list[int]) -> str:
    return " ".join(LETTERS[i] for i in order)


def token_order(got: torch.Tensor, tokens: torch.Tensor, atol: float = 1e-5) -> list[int] | None:
    """For each row of `got`, the index of the token it equals; None when a row is no token."""
    if got.dim() != 2 or got.shape != tokens.shape:
        return None
    found = []
    for row in got.detach().double():
        hits = [i for i, t in enumerate(tokens.double()) if torch.allclose(row, t, rtol=0, atol=atol)]
        if not hits:
            return None
        found.append(hits[0])
    return found


def token_order_estimator(tokens: torch.Tensor, expected: list[int], sample: int):
    """An `expect.close` estimator naming a sample whose rows are the right tokens in a wrong order."""

    def estimate(got: torch.Tensor):
        found = token_order(got, tokens)
        if found is None or found == expected:
            return None
        return "wrong_token_order", {"sample": sample, "got": letters(found), "expected": letters(expected)}

    return estimate


# ---------------------------------------------------------------- a trusted self-attention layer


def attention_layer(embed_dim: int, rng: torch.Generator) -> dict[str, torch.Tensor]:
    """Seeded weights of a one-head self-attention layer (query, key, value), as a state dict."""
    return A.linear_weights(LAYERS, embed_dim, embed_dim, rng)


def self_attention(x: torch.Tensor, state: dict[str, torch.Tensor]) -> torch.Tensor:
    """Context vectors of the layer `state` on x in float64, no positions added.   (..., L, E)"""
    q, k, v = (A.project(x.detach(), state, name) for name in LAYERS)
    return A.attention(q, k, v)[0]
