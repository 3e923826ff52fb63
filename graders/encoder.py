"""Encoder-layer maths for exercise 7: the post-norm layer in float64, its known wrong variants,
torch's own layer as the oracle, a correct exercise 4 to grade it with, and the dropout probes.

Conventions (those of `nn.TransformerEncoderLayer(batch_first=True)`, which the statement states):
`x` is `(B, L, E)`; the layer holds `self_attn` (exercise 4's SimpleMultiHeadAttention: `query`,
`key`, `value`, `out_proj`), `linear1` (E -> F), `linear2` (F -> E), `norm1`, `norm2` and three
dropouts (`dropout1` after the attention, `dropout` inside the feed-forward block, `dropout2` after
it). Post-norm: h = norm1(x + attention(x)); out = norm2(h + linear2(relu(linear1(h)))).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from graders import attention as A
from graders import multihead as M

EX04 = "ex04_multi_head_attention"

# A correct exercise 4, loaded in place of the student's file of that name while exercise 7 is
# graded: a mistake in exercise 4 costs points there, not here. It runs inside the sandbox.
MHA_SOURCE = '''
import torch
from torch import nn


class SimpleMultiHeadAttention(nn.Module):
    """Exercise 4 as the grader of exercise 7 uses it (weights per head are returned too)."""

    def __init__(self, embed_dim, num_heads):  # the names of exercise 4's template: keywords work too
        super().__init__()
        width, heads = embed_dim, num_heads
        if width % heads:
            raise ValueError(f"{width} features cannot be cut into {heads} heads")
        self.heads = heads
        self.query, self.key = nn.Linear(width, width), nn.Linear(width, width)
        self.value, self.out_proj = nn.Linear(width, width), nn.Linear(width, width)

    def forward(self, x):
        b, n, e = x.shape
        h = self.heads

        def per_head(t):
            return t.reshape(b, n, h, e // h).permute(0, 2, 1, 3)

        q, k, v = per_head(self.query(x)), per_head(self.key(x)), per_head(self.value(x))
        w = torch.softmax(torch.einsum("bhid,bhjd->bhij", q, k) * (e // h) ** -0.5, dim=-1)
        mixed = torch.einsum("bhij,bhjd->bhid", w, v).permute(0, 2, 1, 3).reshape(b, n, e)
        return self.out_proj(mixed), w
'''

LINEARS = ["self_attn.query", "self_attn.key", "self_attn.value", "self_attn.out_proj"]


def parameter_shapes(embed: int, ff: int) -> dict[str, list[int]]:
    """name -> shape of every parameter the layer must have (those nn.TransformerEncoderLayer has,
    with exercise 4's four projections for its attention)."""
    shapes = {f"{n}.weight": [embed, embed] for n in LINEARS} | {f"{n}.bias": [embed] for n in LINEARS}
    shapes.update({"linear1.weight": [ff, embed], "linear1.bias": [ff], "linear2.weight": [embed, ff],
                   "linear2.bias": [embed]})  # fmt: skip
    shapes.update({f"norm{i}.{p}": [embed] for i in (1, 2) for p in ("weight", "bias")})
    return shapes


def random_state(embed: int, ff: int, rng: torch.Generator) -> dict[str, torch.Tensor]:
    """Seeded float32 weights for every parameter; the two norms differ (so that using one twice shows)."""
    state = {f"self_attn.{k}": v for k, v in A.linear_weights(M.LAYERS, embed, embed, rng).items()}
    state.update(A.linear_weights(["linear1"], embed, ff, rng))
    state.update(A.linear_weights(["linear2"], ff, embed, rng))
    for name in ("norm1", "norm2"):
        state[f"{name}.weight"] = 1 + 0.3 * torch.randn(embed, generator=rng)
        state[f"{name}.bias"] = 0.3 * torch.randn(embed, generator=rng)
    return state


# ---------------------------------------------------------------- the formula and torch's oracle


def _norm_of(z: torch.Tensor, state: dict, name: str, kind: str = "layer", eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm `name` with its weights (and `eps`); `kind` "no_affine": without weight and bias;
    "per_feature": a norm that does not normalise the token (a BatchNorm in eval mode at its initial
    running statistics, mean 0 and variance 1): each feature only scaled and shifted; "unbiased":
    written by hand with the unbiased variance (x.var(), which divides by E − 1)."""
    weight, bias = state[f"{name}.weight"].double(), state[f"{name}.bias"].double()
    if kind == "no_affine":
        return F.layer_norm(z.double(), (z.shape[-1],), None, None, eps)
    if kind == "per_feature":
        return z.double() / math.sqrt(1 + eps) * weight + bias
    if kind == "per_sample":  # over the sequence and the features together (F.layer_norm(z, z.shape[1:]))
        z = z.double()
        return F.layer_norm(z, tuple(z.shape[1:]), None, None, eps) * weight + bias
    if kind == "unbiased":
        z = z.double()
        centred = z - z.mean(-1, keepdim=True)
        return centred / torch.sqrt(z.var(-1, keepdim=True) + eps) * weight + bias
    return F.layer_norm(z.double(), (z.shape[-1],), weight, bias, eps)


ACTIVATIONS = {
    "relu": torch.relu, "gelu": F.gelu, "none": lambda t: t, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
    "silu": F.silu, "elu": F.elu, "leaky_relu": F.leaky_relu,
}  # fmt: skip


def forward(
    x: torch.Tensor,
    state: dict[str, torch.Tensor],
    heads: int,
    *,
    norm_first: bool = False,
    activation: str = "relu",
    attention_residual: bool = True,
    ff_residual: bool = True,
    second_norm: str | None = "norm2",
    ff_input: str = "h",
    ff_residual_from: str = "h",
    norm_inside: str = "",
    first_norm: str | None = "norm1",
    activation_at: str = "inner",
    discarded: str = "",
    norm_kind: str = "layer",
    attention_activation: bool = False,
    input_scale: float = 1.0,
    attention_input: str = "",
    norm_eps: float = 1e-5,
    branch_scale: tuple[float, float] = (1.0, 1.0),
) -> torch.Tensor:
    """The layer's output in float64 (eval mode: no dropout); the keywords reproduce mistakes:
    `norm_first` (pre-norm), another `activation`, a residual left out, `second_norm` "norm1"
    (one norm used twice) or None (no norm after the feed-forward block), the feed-forward block
    fed the raw attention output (`ff_input` "attention") or its residual taken from the layer's
    input (`ff_residual_from` "x"), or each norm applied to its block's output inside the residual
    (`norm_inside` "both": x + norm1(attn), then h + norm2(ff); "first": the first one only),
    `first_norm` None (no norm after the attention) or "norm2" (with `second_norm` "norm1": the two
    norms swapped), the activation after linear2 (`activation_at` "outer") or after both linears
    ("both"), or one sub-layer's result computed and never used (`discarded` "ff": the layer
    returns h; "attention": h is x), `ff_residual_from` "sum" (the second residual adds x + attention,
    the sum before norm1), or both norms of another `norm_kind` (see `_norm_of`); `ff_input` "x": the
    feed-forward block fed the layer's input; `attention_activation`: the activation applied to the
    attention's output before its residual; `input_scale`: the layer's input multiplied by it
    first (x * √d_model, the embedding's scale); `attention_input` "norm1" / "norm2": the attention
    fed that norm of x while the layer stays post-norm; `ff_residual_from` "attention": the second
    residual adds the attention's output; `norm_eps`: both norms' eps (the dropout rate, from
    nn.LayerNorm(d_model, dropout)); `branch_scale`: the attention's and the feed-forward block's
    outputs multiplied by these before their residuals (1 − p in eval mode: the paper's test-time
    rule added to inverted dropout)."""

    def _norm(z, state, name):
        return _norm_of(z, state, name, norm_kind, norm_eps)

    mha_state = {k.removeprefix("self_attn."): v for k, v in state.items() if k.startswith("self_attn.")}

    def attention(t):
        return M.forward(t, mha_state, heads)[0]  # (B, L, E)

    def feed_forward(t):
        act = ACTIVATIONS[activation]
        hidden = A.project(t, state, "linear1")  # (B, L, F)
        hidden = act(hidden) if activation_at in ("inner", "both") else hidden
        out = A.project(hidden, state, "linear2")  # (B, L, E)
        return (act(out) if activation_at in ("outer", "both") else out) * branch_scale[1]

    x = x.double() * input_scale
    if norm_first:
        h = x + attention(_norm(x, state, "norm1"))  # (B, L, E)
        return h + feed_forward(_norm(h, state, second_norm or "norm2"))
    attended = (
        attention(_norm(x, state, attention_input) if attention_input else x) * branch_scale[0]
    )  # (B, L, E)
    attended = ACTIVATIONS[activation](attended) if attention_activation else attended
    if norm_inside:
        h = x + _norm(attended, state, "norm1")  # (B, L, E)
        if norm_inside == "both":
            return h + _norm(feed_forward(h), state, "norm2")
        return _norm(h + feed_forward(h), state, "norm2")
    h = (x if attention_residual else 0) + attended  # (B, L, E)
    summed = h
    h = _norm(h, state, first_norm) if first_norm else h
    if discarded == "ff":
        return h
    h = x if discarded == "attention" else h
    fed = {"attention": attended, "x": x}.get(ff_input, h)
    residual = {"x": x, "sum": summed, "attention": attended}.get(ff_residual_from, h)
    z = (residual if ff_residual else 0) + feed_forward(fed)  # (B, L, E)
    return _norm(z, state, second_norm) if second_norm else z


def torch_layer(
    state: dict[str, torch.Tensor], heads: int, *, dropout: float = 0.0, norm_first: bool = False
) -> nn.TransformerEncoderLayer:
    """torch's own `nn.TransformerEncoderLayer(batch_first=True)` in float64 with the student's
    weights copied in (`in_proj_weight` stacks W_q, W_k, W_v); its attention has no dropout of its
    own, as exercise 4's has none."""
    embed, ff = state["linear1.weight"].shape[1], state["linear1.weight"].shape[0]
    layer = nn.TransformerEncoderLayer(
        embed, heads, ff, dropout=dropout, batch_first=True, norm_first=norm_first, dtype=torch.float64
    )
    layer.self_attn.dropout = 0.0
    qkv = ("query", "key", "value")
    own = {k: v for k, v in state.items() if not k.startswith(tuple(f"self_attn.{n}." for n in qkv))}
    own["self_attn.in_proj_weight"] = torch.cat([state[f"self_attn.{n}.weight"] for n in qkv])
    own["self_attn.in_proj_bias"] = torch.cat([state[f"self_attn.{n}.bias"] for n in qkv])
    layer.load_state_dict({k: v.double() for k, v in own.items()})
    return layer


def torch_oracle(x: torch.Tensor, state: dict[str, torch.Tensor], heads: int) -> torch.Tensor:
    """The output of `torch_layer` in eval mode: the independent oracle."""
    with torch.no_grad():
        return torch_layer(state, heads).eval()(x.double())


def variants(x: torch.Tensor, state: dict[str, torch.Tensor], heads: int) -> dict[str, torch.Tensor | list]:
    """The output each known mistake gives, keyed by diagnosis id (a list: ways of writing one mistake)."""
    wrong = {
        "pre_norm": dict(norm_first=True),
        "no_attention_residual": dict(attention_residual=False),
        "no_ff_residual": dict(ff_residual=False),
        "norm_reused": [dict(second_norm="norm1"), dict(first_norm="norm2")],
        "norms_swapped": dict(first_norm="norm2", second_norm="norm1"),
        "missing_norm2": dict(second_norm=None),
        "missing_norm1": dict(first_norm=None),
        "no_layer_norm": dict(first_norm=None, second_norm=None),
        "no_activation": dict(activation="none"),
        "gelu_activation": dict(activation="gelu"),
        "other_activation": [dict(activation=a) for a in ("tanh", "sigmoid", "silu", "elu", "leaky_relu")],
        "activation_misplaced": [dict(activation_at="outer"), dict(activation_at="both")],
        "ff_reads_attention": dict(ff_input="attention"),
        "ff_residual_from_input": dict(ff_residual_from="x"),
        "norm_inside_residual": [dict(norm_inside="both"), dict(norm_inside="first")],
        "ff_result_discarded": dict(discarded="ff"),
        "attention_result_discarded": dict(discarded="attention"),
        "ff_residual_unnormalised": dict(ff_residual_from="sum"),
        "norm_not_layer_norm": dict(norm_kind="per_feature"),
        "norm_without_affine": dict(norm_kind="no_affine"),
        "norm_over_sequence": dict(norm_kind="per_sample"),
        "activation_on_attention": dict(attention_activation=True),
        "ff_reads_input": dict(ff_input="x"),
        "ff_residual_from_attention": dict(ff_residual_from="attention"),
        "attention_input_normalised": [dict(attention_input="norm1"), dict(attention_input="norm2")],
    }
    out = {
        diagnosis: [forward(x, state, heads, **o) for o in options]
        if isinstance(options, list)
        else forward(x, state, heads, **options)
        for diagnosis, options in wrong.items()
    }
    # linear1 or linear2 built with bias=False: the bias the grader loads has nowhere to go
    biases = [["linear1.bias"], ["linear2.bias"], ["linear1.bias", "linear2.bias"]]
    out["ff_linear_without_bias"] = [forward(x, without(state, names), heads) for names in biases]
    embed = x.shape[-1]  # the input scaled as an embedding is: by √d_model (or d_model)
    factors = (math.sqrt(embed), float(embed))
    out["input_rescaled"] = [forward(x, state, heads, input_scale=f) for f in factors]
    if heads > 1:  # SimpleMultiHeadAttention(d_model, 1): the layer's nhead never reaches the attention
        out["nhead_ignored"] = forward(x, state, 1)
    return out


def without(state: dict[str, torch.Tensor], names: list[str]) -> dict[str, torch.Tensor]:
    """`state` with the parameters `names` set to zero (a layer that has no such parameter)."""
    return {name: torch.zeros_like(value) if name in names else value for name, value in state.items()}


# ---------------------------------------------------------------- dropout probes
#
# Features come in three groups of G: R (input -1), Z (input 0) and D (input 0, plus what one
# dropout site acts on). Every weight is chosen so that, per token, the layer is an increasing
# affine map of the values at the probed site, whatever the order of norms and residuals: the
# LayerNorms see one vector each and have equal weights and zero biases. So D entries that a
# dropout zeroed sit exactly at the Z level, kept ones above it, and (kept − Z) / (Z − R) is the
# kept entries' scale times a factor that depends only on where the norms are (`READ_FACTORS`).

GROUP = 8
LEVEL = 1.0  # the value dropout acts on at the probed site
HIDDEN = 10.0  # linear1's bias: relu, gelu and no activation at all all give 10 there


def probe_sizes(heads: int) -> tuple[int, int]:
    return 3 * GROUP, 4 * GROUP  # E, F


def probe_input(batch: int, length: int) -> torch.Tensor:
    x = torch.zeros(batch, length, 3 * GROUP)
    x[..., :GROUP] = -1.0
    return x


def residual_input(batch: int, length: int) -> torch.Tensor:
    """An input with no zero entry and no constant row (for the "residual" probe: a dropout that
    zeroes any entry of the residual path shows in the output)."""
    features = torch.arange(3 * GROUP, dtype=torch.float32)
    tokens = torch.arange(batch * length, dtype=torch.float32).reshape(batch, length, 1)
    return (features % 5 - 1.75) + 0.1 * (tokens % 7)


def probe_state(site: str, ff: int = 4 * GROUP) -> dict[str, torch.Tensor]:
    """Weights under which dropout site `site` ("attention": dropout1; "output": dropout2 alone;
    "hidden": the feed-forward block's inner dropout, then dropout2) acts on LEVEL at the D group;
    "residual": both sub-layers output zero whatever their input, so that a dropout on a sub-layer's
    output has nothing to drop and only one on the residual path changes the output. `ff`: the
    feed-forward width (at least GROUP), for a layer whose linears have another one than asked."""
    embed = 3 * GROUP
    d = slice(2 * GROUP, 3 * GROUP)
    state = {f"{n}.{p}": torch.zeros(embed, embed) if p == "weight" else torch.zeros(embed)
             for n in LINEARS for p in ("weight", "bias")}  # fmt: skip
    state.update({"linear1.weight": torch.zeros(ff, embed), "linear1.bias": torch.full((ff,), HIDDEN),
                  "linear2.weight": torch.zeros(embed, ff), "linear2.bias": torch.zeros(embed)})  # fmt: skip
    state.update({f"norm{i}.{p}": torch.ones(embed) if p == "weight" else torch.zeros(embed)
                  for i in (1, 2) for p in ("weight", "bias")})  # fmt: skip
    if site == "attention":
        state["self_attn.out_proj.bias"][d] = LEVEL  # the attention's output, whatever the input
    elif site == "output":
        state["linear2.bias"][d] = LEVEL
    elif site == "hidden":
        for i in range(GROUP):
            state["linear2.weight"][2 * GROUP + i, i] = LEVEL / HIDDEN
    return state


def read_factors(site: str) -> dict[str, float]:
    """(kept − Z)/(Z − R) over the kept entries' scale, for each layout that keeps the probe affine:
    before the first norm the R–Z gap is 1; after it (post-norm, probes past the attention) it is
    1/σ of the input row, σ² = (1/3)(2/3)."""
    if site == "attention":
        return {"post-norm": 1.0}
    gap = 1 / math.sqrt(2 / 9 + 1e-5)
    layouts = {"post-norm": 1 / gap, "pre-norm": 1.0}
    if site != "hidden":
        return layouts
    # the inner dropout acts on activation(HIDDEN): HIDDEN for ReLU, GELU, ELU, leaky ReLU, none at all;
    # about 1 for a saturating activation (tanh, sigmoid), which the value checks charge
    saturating = {name: float(ACTIVATIONS[name](torch.tensor(HIDDEN, dtype=torch.float64))) / HIDDEN
                  for name in ("tanh", "sigmoid")}  # fmt: skip
    return layouts | {f"{k}, {a}": f * r for k, f in layouts.items() for a, r in saturating.items()}


def read_probe(outputs: list[torch.Tensor]) -> tuple[int, int, list[float]]:
    """(D entries read, D entries at the Z level, the (kept − Z)/(Z − R) ratios of kept entries),
    over tokens where the Z and R levels differ (elsewhere the output shows nothing of the site)."""
    read = dropped = 0
    ratios: list[float] = []
    for out in outputs:
        rows = out.double().reshape(-1, 3 * GROUP)
        r, z, dd = rows[:, :GROUP], rows[:, GROUP : 2 * GROUP], rows[:, 2 * GROUP :]
        r_level, z_level = r.mean(1, keepdim=True), z.mean(1, keepdim=True)
        gap = z_level - r_level  # (tokens, 1)
        tol = 1e-5 * (1 + gap.abs().squeeze(1))
        flat = ((r - r_level).abs().amax(1) <= tol) & ((z - z_level).abs().amax(1) <= tol)
        usable = flat & (gap.squeeze(1).abs() > 1e-3)  # R and Z apart: the row shows the site
        if not bool(usable.any()):
            continue
        gap, dd, z_level = gap[usable], dd[usable], z_level[usable]
        rel = (dd - z_level) / gap  # 0 where dropped
        at_zero = rel.abs() < 1e-4
        read += rel.numel()
        dropped += int(at_zero.sum())
        ratios += rel[~at_zero].flatten().tolist()
    return read, dropped, ratios


def read_unit(out: torch.Tensor) -> float | None:
    """(D − Z)/(Z − R) of an eval-mode output of the probe (no dropout: every D entry kept, scale
    1), when every usable row reads the same nonzero value; None otherwise (dropout at eval time,
    a layout where the site's value does not pass through affinely)."""
    read, dropped, ratios = read_probe([out])
    if not read or dropped or max(ratios) - min(ratios) > 1e-4 * max(abs(r) for r in ratios):
        return None
    return sorted(ratios)[len(ratios) // 2]
