"""Checks for exercise 7: TransformerEncoderLayer, post-norm, around exercise 4's attention.

Every check grades the student's file with a correct exercise 4 in place of theirs
(`expect.with_siblings`): their `from ex04_multi_head_attention import SimpleMultiHeadAttention`
then gets a right one, so a mistake in exercise 4 (or an exercise 4 not written yet) costs points
in exercise 4 only. The oracle is torch's own nn.TransformerEncoderLayer(batch_first=True) with the
same weights; the float64 formula of graders/encoder.py, which a test proves equal to it, gives the
outputs of known mistakes. Dropout is judged in train mode by probes (`encoder.probe_state`) that
make each dropout site's zeros and scale readable from the layer's output, over many draws.
"""

import math
from functools import partial

import torch

from graders import encoder as E
from graders.harness import Text, check
from graders.harness.core import expect
from graders.harness.core.banned import BuiltByHand
from graders.harness.core.errors import StudentCodeError

# (B, L, E, H, F): every dimension different, d_k = 4 then 4
CONFIGS = [(2, 5, 12, 3, 20), (3, 4, 8, 2, 14)]
HIDDEN_CONFIGS = [(1, 6, 10, 5, 16), (2, 3, 16, 4, 24)]
P = 0.25  # the probes' dropout: 1/(1−p) = 4/3 and 1/p = 4 tell scaling mistakes apart
DRAWS = 6  # train-mode calls per probe
PROBE_BATCH, PROBE_LENGTH = 4, 16
SHARE_TOL = 0.06  # ≥ 6.5 standard deviations of the zeroed share over DRAWS·B·L·8 entries
SCALE_RTOL = 1e-3
KNOWN_ERRORS = {
    # self.train, the method that switches modes, passed where dropout wants the flag self.training
    "train_method_as_flag": r"argument '(train|training)' \(position \d+\) must be bool, not method"
    r"|must be bool, not method",
    "mha_args_swapped": r"^ValueError: \d+ features cannot be cut into \d+ heads",  # the stand-in exercise 4's check
    "mha_pair_not_unpacked": r"unsupported operand type\(s\) for \+: 'Tensor' and 'tuple'|'tuple' object has no attribute|must be Tensor, not tuple",
    "ff_sizes_wrong": r"size mismatch for linear[12]\.",  # the grader's weights do not fit the student's linears
    # exercise 4's layer called or built as nn.MultiheadAttention is (the stand-in takes its template's arguments)
    "mha_called_with_wrong_arguments": r"^TypeError: SimpleMultiHeadAttention\.forward\(\)",
    "mha_built_with_wrong_arguments": r"^TypeError: SimpleMultiHeadAttention\.__init__\(\)",
    # autograd refuses an in-place write into a leaf that requires grad: the input x given to forward
    # (`enc_eval_deterministic` passes one), or a parameter
    "input_changed_in_place": r"a leaf Variable that requires grad is being used in an in-place operation",
    # a LayerNorm and what it normalises of different widths (a norm built dim_feedforward wide, or fed
    # the feed-forward block's hidden activations)
    "norm_wrong_width": r"Given normalized_shape=\[\d+\], expected input with shape \[\*, \d+\]|"
    r"size mismatch for norm[12]\.(weight|bias)",  # the grader's (d_model,) weights do not fit the norm
}  # fmt: skip
SITES = {  # probe -> (where, in en and zh; share zeroed; scale of what is kept)
    "attention": ("after the attention (dropout1)", "注意力之后（dropout1）", P, 1 / (1 - P)),
    "output": ("after the feed-forward block (dropout2)", "前馈网络之后（dropout2）", P, 1 / (1 - P)),
    "hidden": (
        "inside the feed-forward block (dropout)",
        "前馈网络内部（dropout）",
        1 - (1 - P) ** 2,
        1 / (1 - P) ** 2,
    ),
}
ATTRIBUTES = {"attention": "dropout1", "output": "dropout2", "hidden": "dropout"}  # named in diagnoses

STRUCTURE_TEXT = Text(
    zh="TransformerEncoderLayer({embed}, {heads}, {ff}) 的参数应与 nn.TransformerEncoderLayer 同名同形状（注意力用你的 SimpleMultiHeadAttention 的 query、key、value、out_proj）；缺少或形状不对：{missing}。",
    en="TransformerEncoderLayer({embed}, {heads}, {ff}) should have the parameters of nn.TransformerEncoderLayer under the same names and shapes (with your SimpleMultiHeadAttention's query, key, value and out_proj for the attention); missing or of another shape: {missing}.",
)
NOT_EX04_TEXT = Text(
    zh="self_attn 应是从 ex04_multi_head_attention 导入的 SimpleMultiHeadAttention，实际是 {got}。",
    en="self_attn should be the SimpleMultiHeadAttention imported from ex04_multi_head_attention; it is {got}.",
)
NORM_KIND_TEXT = Text(
    zh="norm1 和 norm2 应像 nn.TransformerEncoderLayer 那样是 nn.LayerNorm(d_model)；实际：{got}。",
    en="norm1 and norm2 should be nn.LayerNorm(d_model), as in nn.TransformerEncoderLayer; got {got}.",
)
PAIR_TEXT = Text(
    zh="forward(x) 返回了 {count} 个值；编码器层只返回一个 (B, L, E) 的张量。",
    en="forward(x) returned {count} values; the encoder layer returns one (B, L, E) tensor.",
)
DETERMINISTIC_TEXT = Text(
    zh="eval 模式下同一个输入调用两次，输出不一致（最大差 {err:.3g}）：eval 模式下这一层应是确定的。",
    en="In eval mode, two calls on the same input disagree (largest difference {err:.3g}): in eval mode the layer must give one answer.",
)
SHARE_TEXT = Text(
    zh="train 模式下，{where_zh}被置零的比例是 {got:.3f}（{count} 个值），应约为 {expected:.3f}（p = {p}）。",
    en="In train mode, the dropout {where_en} zeroed a share {got:.3f} of {count} values; expected about {expected:.3f} (p = {p}).",
)
RESIDUAL_TEXT = Text(
    zh="train 模式下，在两个子层的输出恒为 0 的权重下（子层上的 dropout 无值可丢），同一输入调用 {count} 次，输出仍然不同（最大差 {err:.3g}）：有 dropout 作用在了残差通路上（层的输入或 norm 之后的结果），而不只是子层的输出上。",
    en="In train mode, with weights under which both sub-layers output zero (a dropout on a sub-layer's output then has nothing to drop), {count} calls on the same input still disagree (largest difference {err:.3g}): a dropout acts on the residual path (the layer's input, or what a norm gives), not only on the sub-layers' outputs.",
)
SCALE_TEXT = Text(
    zh="train 模式下，{where_zh}保留下来的值被乘以了 {got}，应为 {expected}（1/(1−p)，p = {p}）。",
    en="In train mode, the dropout {where_en} scaled the values it kept by {got}; expected {expected} (1/(1−p), p = {p}).",
)
BY_HAND = expect.by_hand_rule(
    Text(zh="自己搭建编码器层", en="build the encoder layer yourself"),
    uses=Text(zh="torch 自带的层", en="a layer torch provides"),
    diagnosis="uses_builtin_layer",
)


def graded(student):
    """The student's module with a correct exercise 4 in place of theirs (see the module docstring)."""
    return expect.with_siblings(student, {E.EX04: E.MHA_SOURCE}, "correct_ex04")


def build(module, embed, heads, ff, dropout):
    """TransformerEncoderLayer(embed, heads, ff, dropout), called as the statement's signature says. When
    that raises and the same values passed by name build a layer, the constructor takes its
    parameters in another order than the statement's: named `ctor_params_order`."""
    try:
        return module.TransformerEncoderLayer(embed, heads, ff, dropout)
    except StudentCodeError as exc:
        if exc.diagnosis is None:
            try:
                module.TransformerEncoderLayer(
                    d_model=embed, nhead=heads, dim_feedforward=ff, dropout=dropout
                )
            except StudentCodeError:
                raise exc from None
            exc.diagnosis = "ctor_params_order"
        raise


DROPOUT = 0.1  # the layers' dropout rate where a check gives none


def student_layer(module, rng, batch, length, embed, heads, ff, *, state=None, x=None, dropout=DROPOUT,
                  properties=False, train=False):  # fmt: skip
    """The student's TransformerEncoderLayer(embed, heads, ff, dropout) with seeded weights (or `state`)
    in eval mode (or train mode), and x."""
    layer = build(module, embed, heads, ff, dropout)
    state = E.random_state(embed, ff, rng) if state is None else state
    x = torch.randn(batch, length, embed, generator=rng) if x is None else x
    state = expect.load_weights(layer, state, own_if_mismatched=properties)
    layer.train() if train else layer.eval()
    return layer, state, x


def output_of(layer, x):
    """The layer's output, read as meant: of a pair, the first (`enc_shapes` charges the pair)."""
    got = layer(x)
    if isinstance(got, (tuple, list)) and got and isinstance(got[0], torch.Tensor):
        return got[0]
    return got


def disagree(layer, x) -> bool:
    """Two calls of `layer` on x, each continuing the random state, give different outputs."""
    with expect.fresh_draws(layer):
        first, second = (output_of(layer, x) for _ in range(2))
    if isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor) and first.shape == second.shape:
        return expect.largest_difference(first, second) > 1e-6
    return False


def random_not_dropout(module, rng) -> str | None:
    """Where a layer's randomness comes from when it is not its dropout: with dropout p = 0, in eval
    mode, two calls that continue the random state still disagree. "attention_built_in_forward" when,
    besides, the output does not move with self_attn's weights (each call starts from the same random
    state there, so only those weights differ): the attention used is built anew inside forward;
    "random_in_forward" otherwise; None when p = 0 in eval mode makes the layer deterministic."""
    batch, length, embed, heads, ff = CONFIGS[0]
    layer, state, x = student_layer(
        module, rng, batch, length, embed, heads, ff, dropout=0.0, properties=True
    )
    if not disagree(layer, x):
        return None
    other = E.random_state(embed, ff, rng)
    other = {k: (other[k] if k.startswith("self_attn.") and k in other else v) for k, v in state.items()}
    first = output_of(layer, x)
    layer, _, _ = student_layer(module, rng, batch, length, embed, heads, ff, state=other, x=x, dropout=0.0,
                                properties=True)  # fmt: skip
    second = output_of(layer, x)
    if isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor) and first.shape == second.shape:
        if expect.largest_difference(first, second) <= 1e-6:
            return "attention_built_in_forward"
    return "random_in_forward"


def random_in_eval(module, rng, layer, x):
    """An `expect.close` estimator: names dropout at eval time when two fresh calls disagree, unless
    the randomness stays with p = 0 (`random_not_dropout` names its source then)."""

    def estimate(got):
        if disagree(layer, x):
            return random_not_dropout(module, rng) or "dropout_at_eval", {}
        return None

    return estimate


def variants(x: torch.Tensor, state: dict[str, torch.Tensor], heads: int) -> dict:
    """`E.variants`, and the layer run on x read sequence first, (L, B, E): every step but the
    attention works per token, so that is the attention across the batch elements at each position."""
    out = E.variants(x, state, heads)
    # the layers of these checks are built with dropout DROPOUT: nn.LayerNorm(d_model, dropout) takes it
    # for eps; 1 − p is the keep probability the paper's test-time rule scales by
    out["norm_eps_from_dropout"] = E.forward(x, state, heads, norm_eps=DROPOUT)
    out["layer_norm_unbiased"] = [
        E.forward(x, state, heads, norm_kind="unbiased", norm_eps=e) for e in (1e-5, 0)
    ]
    keep = 1 - DROPOUT
    out["eval_scaled_by_keep_prob"] = [
        E.forward(x, state, heads, branch_scale=scales) for scales in ((keep, keep), (keep, 1.0), (1.0, keep))
    ]
    out["sequence_first_layout"] = E.forward(x.transpose(0, 1), state, heads).transpose(0, 1)
    # an activation on what the layer returns, after norm2
    right = E.forward(x, state, heads)
    out["output_activation"] = [E.ACTIVATIONS[a](right) for a in ("relu", "gelu")]
    embed = x.shape[
        -1
    ]  # SimpleMultiHeadAttention(d_model, d_model // nhead): the head size as the head count
    if embed % heads == 0 and embed // heads != heads and embed % (embed // heads) == 0:
        out["nhead_as_head_dim"] = E.forward(x, state, embed // heads)
    return out


def compare(module, rng, config, evidence=None):
    batch, length, embed, heads, ff = config
    layer, state, x = student_layer(module, rng, batch, length, embed, heads, ff)
    got = output_of(layer, x)
    expected = E.torch_oracle(x, state, heads)
    if evidence is not None and isinstance(got, torch.Tensor) and got.shape == expected.shape:
        evidence.heatmap("output[0]", got[0].double(), expected[0])
    expect.close(
        got,
        expected,
        "output",
        variants=partial(variants, x, state, heads),
        estimators=[random_in_eval(module, rng, layer, x)],
    )


@check("enc_structure")
def test_enc_structure(student):
    embed, heads, ff = 12, 3, 20
    info = expect.introspect(build(graded(student), embed, heads, ff, 0.1))
    params = {name: shape for name, shape, _ in info["parameters"]}  # confirmed by a state the grader loads
    linear = {f"{name}.weight": [out, inp] for name, (out, inp, bias) in info["linear"].items()}
    linear |= {f"{name}.bias": [out] for name, (out, inp, bias) in info["linear"].items() if bias}
    missing = [
        name for name, shape in E.parameter_shapes(embed, ff).items()
        if (linear if name.rsplit(".", 1)[0] in {*E.LINEARS, "linear1", "linear2"} else params).get(name) != shape
    ]  # fmt: skip
    text = STRUCTURE_TEXT.format(embed=embed, heads=heads, ff=ff, missing=", ".join(missing) or "nn.Module")
    modules = {name: (kind, where) for name, kind, where in info.get("modules", [])}
    attention = modules.get("self_attn")
    if attention != ("SimpleMultiHeadAttention", E.EX04) and info.get("is_nn_module", False):
        got = f"{attention[1]}.{attention[0]}" if attention else "missing"
        expect.fail(NOT_EX04_TEXT.format(got=got), "mha_not_from_ex04", got=got)
    # linear1 and linear2 built, with other sizes (their arguments swapped, dim_feedforward ignored)
    ff_sizes = bool(missing) and all(n.split(".")[0] in {"linear1", "linear2"} for n in missing)
    ff_sizes = ff_sizes and {"linear1", "linear2"} <= set(info["linear"])
    # ... or of the right sizes, one of them (or both) without its bias (nn.Linear(..., bias=False))
    no_bias = ff_sizes and set(missing) <= {"linear1.bias", "linear2.bias"}
    # norm1 and norm2 there, without their weight and bias (LayerNorm(d_model, elementwise_affine=False))
    no_affine = bool(missing) and set(missing) <= {f"norm{i}.{p}" for i in (1, 2) for p in ("weight", "bias")}
    no_affine = no_affine and {name.rsplit(".", 1)[0] for name in missing} <= set(modules)
    # ... or there, of another width than d_model (LayerNorm(dim_feedforward), say): not the affine missing
    norm_width = no_affine and all(name in params for name in missing)
    diagnosis = (
        "ff_linear_without_bias" if no_bias
        else "ff_sizes_wrong" if ff_sizes
        else "norm_wrong_width" if norm_width
        else "norm_without_affine" if no_affine
        else None
    )  # fmt: skip
    expect.true(info.get("is_nn_module", False) and not missing, text, diagnosis)
    # a norm of another kind with LayerNorm's parameter shapes (BatchNorm1d(d_model): statistics per feature)
    other = {name: modules[name][0] for name in ("norm1", "norm2") if name in modules}
    other = {name: kind for name, kind in other.items() if kind.startswith(("BatchNorm", "InstanceNorm"))}
    got = ", ".join(f"{name} = {kind}" for name, kind in other.items())
    expect.true(not other, NORM_KIND_TEXT.format(got=got), "norm_not_layer_norm")


@check("enc_shapes")
def test_enc_shapes(student, rng):
    module = graded(student)
    for batch, length, embed, heads, ff in CONFIGS:
        layer, _, x = student_layer(module, rng, batch, length, embed, heads, ff, properties=True)
        got = layer(x)
        if isinstance(got, (tuple, list)):
            expect.fail(PAIR_TEXT.format(count=len(got)), "returns_pair")
        expect.tensor(got, "output", (batch, length, embed), finite=False)


@check("enc_eval_deterministic")
def test_enc_eval_deterministic(student, rng):
    batch, length, embed, heads, ff = CONFIGS[0]
    module = graded(student)
    layer, _, x = student_layer(module, rng, batch, length, embed, heads, ff, dropout=0.5,
                                properties=True)  # fmt: skip
    x.requires_grad_(True)  # the same tensor twice: a forward that writes into its input x raises here
    with expect.fresh_draws(layer):
        first, second = (
            expect.tensor(output_of(layer, x), "output", finite=False).detach() for _ in range(2)
        )
    x = x.detach()
    err = expect.largest_difference(first, second)
    if err > 1e-6:
        diagnosis = random_not_dropout(module, rng) or "dropout_at_eval"
        expect.fail(DETERMINISTIC_TEXT.format(err=err), diagnosis)
    other = expect.tensor(output_of(layer, x.flip(1) + 1), "output", finite=False)
    expect.responds(first, other, "output")


@check("enc_matches_oracle")
def test_enc_matches_oracle(student, rng, evidence):
    module = graded(student)
    for i, config in enumerate(CONFIGS):
        compare(module, rng, config, evidence if i == 0 else None)


@check("enc_matches_oracle_other_shapes")
def test_enc_matches_oracle_other_shapes(student, rng):
    module = graded(student)
    for config in HIDDEN_CONFIGS:
        compare(module, rng, config)


def kept_scales(site: str, ratios: list[float], unit: float | None = None) -> list[float]:
    """The scale of the kept entries as each layout that keeps the probe affine reads it: the median
    ratio (every kept entry reads the same; the median is one of them) over that layout's factor,
    and over `unit`, the same ratio read off the layer's own eval-mode output, where there is one."""
    if not ratios:
        return []
    kept = sorted(ratios)[len(ratios) // 2]
    return [kept / factor for factor in [*E.read_factors(site).values(), *([unit] if unit else [])]]


def fixed_p(site: str, share: float, ratios: list[float], unit: float | None = None) -> float | None:
    """The p of a dropout that is right in itself but ignores the layer's p (a number written in its
    place), when the share zeroed and the scale of the kept entries both read as that same p."""
    for scale in kept_scales(site, ratios, unit):  # 1/(1−p), or 1/(1−p)² through the two hidden dropouts
        if scale <= 1:
            continue
        p = 1 - (1 / scale if site != "hidden" else 1 / math.sqrt(scale))
        zeroed = p if site != "hidden" else 1 - (1 - p) ** 2
        if abs(zeroed - share) <= SHARE_TOL and abs(p - P) > SHARE_TOL:
            return p
    return None


def judge_site(site: str, read: int, dropped: int, ratios: list[float], eval_unit=lambda: None) -> None:
    """Fail on a zeroed share or a kept scale that is not the site's (see `SITES`). `eval_unit()`
    reads the kept entries' unit off the layer's eval-mode output, for a layout no known factor
    fits (asked for only then)."""
    where_en, where_zh, share, scale = SITES[site]
    where = {"where_en": where_en, "where_zh": where_zh}
    got = dropped / read
    named = {"where": ATTRIBUTES[site]}
    if abs(got - share) > SHARE_TOL:
        text = SHARE_TEXT.format(got=got, count=read, expected=share, p=P, **where)
        inverted = 1 - P if site != "hidden" else 1 - P**2  # p read as the share kept
        if got < SHARE_TOL / 2 and site != "hidden":
            expect.fail(text, "dropout_missing", **named)
        if abs(got - inverted) <= SHARE_TOL:
            expect.fail(text, "dropout_keeps_p", got=f"{got:.2f}", p=P, **named)
        if site == "hidden" and abs(got - P) <= SHARE_TOL:  # one of the two dropouts is not there
            expect.fail(text, "dropout_missing", where=ATTRIBUTES[site])
        unit = eval_unit()
        twice = 1 - (1 - P) ** 2  # the share two dropouts in a row zero, each scaling by 1/(1−p)
        if site == "output" and abs(got - twice) <= SHARE_TOL:
            if any(abs(r * (1 - P) ** 2 - 1) <= SCALE_RTOL for r in kept_scales(site, ratios, unit)):
                expect.fail(text, "inner_dropout_misplaced", got=f"{got:.2f}")
        fixed = fixed_p(site, got, ratios, unit)
        if fixed is not None:
            expect.fail(text, "dropout_p_fixed", got=f"{fixed:.2g}", p=P, **named)
        expect.fail(text)
    if not ratios or max(ratios) - min(ratios) > SCALE_RTOL * max(abs(r) for r in ratios):
        return  # no kept scale to read: a layout where the site's value does not pass through affinely
    readings = kept_scales(site, ratios)
    if any(abs(r / scale - 1) <= SCALE_RTOL for r in readings):
        return
    readings = kept_scales(site, ratios, eval_unit())  # a layout of its own (a norm elsewhere, say)
    if any(abs(r / scale - 1) <= SCALE_RTOL for r in readings):
        return
    best = min(readings, key=lambda r: abs(r / scale - 1))
    text = SCALE_TEXT.format(got=f"{best:.4g}", expected=f"{scale:.4g}", p=P, **where)
    unscaled = [1.0] if site != "hidden" else [1.0, 1 / (1 - P)]
    if any(abs(r / u - 1) <= SCALE_RTOL for r in readings for u in unscaled):
        expect.fail(text, "dropout_not_scaled", got=f"{best:.4g}", expected=f"{scale:.4g}", **named)
    over_p = [1 / P] if site != "hidden" else [1 / P, 1 / P**2, 1 / (P * (1 - P))]  # 1/p for 1/(1−p)
    if any(abs(r / u - 1) <= SCALE_RTOL for r in readings for u in over_p):
        expect.fail(text, "dropout_divides_by_p", got=f"{best:.4g}", expected=f"{scale:.4g}", p=P, **named)
    expect.fail(text)


def probe_layer(module, rng, site: str, x):
    """The student's layer in train mode with the probe weights of `site` (`E.probe_state`). A layer
    whose linear1 and linear2 have another feed-forward width than asked (`enc_structure` charges
    that) gets the same probe at its own width: its dropouts are judged as built."""
    embed, ff = E.probe_sizes(3)
    layer, state, _ = student_layer(module, rng, PROBE_BATCH, PROBE_LENGTH, embed, 3, ff, state=E.probe_state(site),
                                    x=x, dropout=P, train=True, properties=True)  # fmt: skip
    width = state.get("linear1.weight", torch.zeros(ff, embed)).shape[0]
    own = E.probe_state(site, width) if width >= E.GROUP else None
    if width == ff or own is None or any(state.get(k, v).shape != v.shape for k, v in own.items()):
        state = E.probe_state(site)  # the probe as asked: a layer it does not fit fails with its own error
    else:
        state = own
    layer, _, _ = student_layer(module, rng, PROBE_BATCH, PROBE_LENGTH, embed, 3, ff, state=state, x=x,
                                dropout=P, train=True)  # fmt: skip
    return layer


def residual_path_kept(module, rng) -> None:
    """Fail when a dropout acts on the residual path: with both sub-layers' outputs zero, a layer
    whose dropouts sit on the sub-layer branches gives the same output on every train-mode call."""
    x = E.residual_input(PROBE_BATCH, PROBE_LENGTH)
    layer = probe_layer(module, rng, "residual", x)
    with expect.fresh_draws(layer):
        outputs = [expect.tensor(output_of(layer, x), "output", tuple(x.shape)) for _ in range(DRAWS)]
    err = max(expect.largest_difference(outputs[0], other) for other in outputs[1:])
    expect.true(err <= 1e-6, RESIDUAL_TEXT.format(count=DRAWS, err=err), "dropout_on_residual")


@check("enc_train_dropout")
def test_enc_train_dropout(student, rng):
    module = graded(student)
    batch, length, embed, heads, ff = CONFIGS[0]  # a property needs an answer: an output that moves with x
    layer, _, x = student_layer(module, rng, batch, length, embed, heads, ff, properties=True)
    first = expect.tensor(output_of(layer, x), "output", finite=False)
    expect.responds(first, expect.tensor(output_of(layer, x.flip(1) + 1), "output", finite=False), "output")
    if random_not_dropout(module, rng) == "attention_built_in_forward":
        # the probes set self_attn's weights, which this layer does not use, and its own attention is
        # drawn afresh on every call: no reading of the dropouts is possible (`enc_eval_deterministic`
        # and the value checks charge the attention)
        return
    residual_path_kept(module, rng)
    for site in SITES:
        x = E.probe_input(PROBE_BATCH, PROBE_LENGTH)
        layer = probe_layer(module, rng, site, x)
        with expect.fresh_draws(layer):
            outputs = [expect.tensor(output_of(layer, x), "output", tuple(x.shape)) for _ in range(DRAWS)]
        read, dropped, ratios = E.read_probe(outputs)

        def eval_unit(layer=layer, x=x):
            layer.eval()
            return E.read_unit(expect.tensor(output_of(layer, x), "output", finite=False))

        # a layout that hides this site (no residual before a norm, say; every entry read sits at the
        # zero level, so the site's value never reaches the output) is judged elsewhere; so is one
        # that shows it in only some rows, which rows depending on what was dropped (a ReLU after the
        # last norm zeroes a row's levels when its kept share shifts the row's mean): the share read
        # over those rows is not the share dropped
        if read and dropped < read and read == DRAWS * x[..., : E.GROUP].numel():
            judge_site(site, read, dropped, ratios, eval_unit)


@check("enc_built_by_hand")
def test_enc_built_by_hand(student, built_by_hand, rng):
    expect.not_by_hand(
        built_by_hand.static(skip=[E.EX04]), BY_HAND
    )  # exercise 4's file is graded in exercise 4
    module = graded(student)
    batch, length, embed, heads, ff = CONFIGS[1]
    layer, _, x = student_layer(module, rng, batch, length, embed, heads, ff, properties=True)
    first = expect.tensor(output_of(layer, x), "output", finite=False)
    expect.responds(first, expect.tensor(output_of(layer, x.flip(1) + 1), "output", finite=False), "output")
    expect.not_by_hand(BuiltByHand(module, built_by_hand.path, built_by_hand.banned).tripwire(), BY_HAND)
