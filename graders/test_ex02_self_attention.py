"""Checks for exercise 2: scaled_dot_product_attention and SimpleSelfAttention.

Shapes are chosen with every dimension different (L ≠ S, d_k ≠ d_v, B ≠ L ≠ E) so that a
transposition cannot hide, and d_k = 16 so that a wrong scale changes the weights visibly.
"""

import math

import torch

from graders import attention as A
from graders.harness import Text, check, expect

# (q, k, v) shapes: leading batch dims, L ≠ S, d_k ≠ d_v
SDPA_SHAPES = [((2, 5, 16), (2, 7, 16), (2, 7, 3)), ((3, 2, 4, 16), (3, 2, 6, 16), (3, 2, 6, 5))]
HIDDEN_SHAPES = [((4, 9), (6, 9), (6, 2)), ((2, 3, 1, 8), (2, 3, 11, 8), (2, 3, 11, 7))]
LAYERS = ["query", "key", "value"]
BACKWARD_ERRORS = {"inplace_breaks_backward": r"modified by an inplace operation"}


def qkv(rng, shapes, spread=1.0):
    return [torch.randn(s, generator=rng) * spread for s in shapes]


def call_sdpa(student, q, k, v):
    return expect.unpack(
        student.scaled_dot_product_attention(q, k, v), 2, "scaled_dot_product_attention(q, k, v)"
    )


def student_layer(student, rng, batch, length, embed):
    """The student's SimpleSelfAttention(embed) in eval mode, loaded with seeded weights, and an input x.

    Eval mode, as in exercise 4: an nn.Dropout that eval() switches off is fair; randomness that
    stays on in eval mode is the mistake `randomness_in_forward`.
    """
    layer = student.SimpleSelfAttention(embed)
    state = A.linear_weights(LAYERS, embed, embed, rng)
    layer.load_state_dict(state)
    layer.eval()
    x = torch.randn(batch, length, embed, generator=rng)
    return layer, state, x


def expected_layer(state, x):
    q, k, v = (A.project(x, state, name) for name in LAYERS)
    return A.attention(q, k, v)


def layer_variants(state, x):
    """Outputs of SimpleSelfAttention as common mistakes compute them: (context, weights) dicts."""
    q, k, v = (A.project(x, state, name) for name in LAYERS)
    shared = A.project(x, state, "query")
    ctx, weights = A.context_variants(q, k, v), A.weight_variants(q, k, v)
    ctx["shared_qkv"], weights["shared_qkv"] = A.attention(shared, shared, shared)
    right = A.attention(q, k, v)[1]  # (B, L, L): with L = S a transposition keeps the shape
    weights["transposed_weights"] = right.transpose(-2, -1)
    ctx["transposed_in_context"] = right.transpose(-2, -1) @ v  # wᵀ V
    return ctx, weights


ROWS_TEXT = Text(
    zh="注意力权重每一行（对所有键）应非负且和为 1；实际行和的范围是 [{low:.4g}, {high:.4g}]。",
    en="Each row of the attention weights (over the keys) should be non-negative and sum to 1; row sums range over [{low:.4g}, {high:.4g}].",
)
NO_GRAD_TEXT = Text(
    zh="梯度没有传到 `{name}`：前向计算中断了计算图（例如 .detach()、.data、.numpy() 或 .item()）。",
    en="No gradient reaches `{name}`: the forward pass broke the autograd graph (.detach(), .data, .numpy() or .item()).",
)
DETERMINISTIC_TEXT = Text(
    zh="同一个输入调用两次，输出不一致（最大差 {err:.3g}）：前向计算中不应有随机性。",
    en="Two calls on the same input disagree (largest difference {err:.3g}): the forward pass must not be random.",
)
LAYERS_TEXT = Text(
    zh="SimpleSelfAttention({embed}) 应有名为 query、key、value 的 nn.Linear({embed}, {embed}) 层；缺少或不对：{missing}。",
    en="SimpleSelfAttention({embed}) should have nn.Linear({embed}, {embed}) layers named query, key and value; missing or wrong: {missing}.",
)


# ---------------------------------------------------------------- scaled_dot_product_attention


@check("sdpa_shapes")
def test_sdpa_shapes(student, rng):
    for shapes in SDPA_SHAPES:
        q, k, v = qkv(rng, shapes)
        context, weights = call_sdpa(student, q, k, v)
        lead, length, keys = q.shape[:-2], q.shape[-2], k.shape[-2]
        expect.tensor(weights, "weights", (*lead, length, keys), finite=False,
                      shape_variants={"transposed_weights": (*lead, keys, length)})  # fmt: skip
        expect.tensor(context, "context", (*lead, length, v.shape[-1]), finite=False)


@check("sdpa_rows_sum_to_one")
def test_sdpa_rows_sum_to_one(student, rng):
    q, k, v = qkv(rng, SDPA_SHAPES[0])
    _, weights = call_sdpa(student, q, k, v)
    weights = expect.tensor(weights, "weights", (*q.shape[:-1], k.shape[-2]))
    sums = weights.double().sum(-1)
    variants = {name: w.sum(-1) for name, w in A.weight_variants(q, k, v).items()}
    expect.true(bool((weights >= 0).all()), ROWS_TEXT.format(low=float(sums.min()), high=float(sums.max())))
    expect.close(sums, torch.ones_like(sums), "weights.sum(-1)", atol=1e-4, variants=variants)


@check("sdpa_scaling")
def test_sdpa_scaling(student, rng, evidence):
    q, k, v = qkv(rng, SDPA_SHAPES[0])
    _, weights = call_sdpa(student, q, k, v)
    expected = A.attention(q, k, v)[1]
    if isinstance(weights, torch.Tensor):
        evidence.heatmap("weights[0]", weights[0].double(), expected[0])
    d_k = q.shape[-1]
    expect.close(
        weights, expected, "weights",
        variants=A.weight_variants(q, k, v),
        estimators=[A.scale_estimator(A.scores(q, k, 1.0), 1 / math.sqrt(d_k))],
    )  # fmt: skip


@check("sdpa_matches_oracle")
def test_sdpa_matches_oracle(student, rng):
    for shapes in SDPA_SHAPES:
        q, k, v = qkv(rng, shapes)
        context, _ = call_sdpa(student, q, k, v)
        expect.close(context, A.attention_oracle(q, k, v), "context", variants=A.context_variants(q, k, v))


@check("sdpa_matches_reference")
def test_sdpa_matches_reference(student, reference, rng):
    for shapes in HIDDEN_SHAPES:
        q, k, v = qkv(rng, shapes)
        context, weights = call_sdpa(student, q, k, v)
        expected_c, expected_w = reference.scaled_dot_product_attention(q.double(), k.double(), v.double())
        expect.close(weights, expected_w, "weights", variants=A.weight_variants(q, k, v))
        expect.close(context, expected_c, "context", variants=A.context_variants(q, k, v))


@check("sdpa_large_scores")
def test_sdpa_large_scores(student, rng):
    q, k, v = qkv(rng, SDPA_SHAPES[0], spread=12.0)  # scores in the hundreds: exp() overflows float32
    context, weights = call_sdpa(student, q, k, v)
    expected_c, expected_w = A.attention(q, k, v)
    variants = A.weight_variants(q, k, v)
    expect.close(weights, expected_w, "weights", rtol=1e-3, atol=1e-4, variants=variants)
    expect.close(context, expected_c, "context", rtol=1e-3, atol=1e-3, variants=A.context_variants(q, k, v))


@check("sdpa_gradients")
def test_sdpa_gradients(student, rng):
    q, k, v = qkv(rng, SDPA_SHAPES[0])
    g_context = torch.randn(*q.shape[:-1], v.shape[-1], generator=rng)
    with expect.known_errors(BACKWARD_ERRORS):
        result = student.scaled_dot_product_attention._vjp([q, k, v], [0, 1, 2], [g_context, None])
    q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
    (A.attention(q64, k64, v64)[0] * g_context.double()).sum().backward()
    grads = list(zip("qkv", result["input_grads"], (q64.grad, k64.grad, v64.grad), strict=True))
    for name, got, _ in grads:  # every gradient present before any value is compared
        expect.true(got is not None, NO_GRAD_TEXT.format(name=name), "no_gradient")
    for name, got, want in grads:
        expect.close(got, want, f"{name}.grad", rtol=1e-3, atol=1e-4)


# ---------------------------------------------------------------- SimpleSelfAttention


@check("layer_structure")
def test_layer_structure(student):
    embed = 6
    info = student.SimpleSelfAttention(embed)._introspect()
    params = {name: shape for name, shape, _ in info.get("parameters", [])}
    missing = [
        name for name in LAYERS
        if params.get(f"{name}.weight") != [embed, embed] or params.get(f"{name}.bias") != [embed]
    ]  # fmt: skip
    expect.true(info.get("is_nn_module", False) and not missing,
                LAYERS_TEXT.format(embed=embed, missing=", ".join(missing) or "nn.Module"))  # fmt: skip


@check("layer_shapes")
def test_layer_shapes(student, rng):
    batch, length, embed = 2, 5, 6
    layer, _, x = student_layer(student, rng, batch, length, embed)
    context, weights = expect.unpack(layer(x), 2, "SimpleSelfAttention.forward(x)")
    expect.tensor(context, "context", (batch, length, embed))
    expect.tensor(weights, "weights", (batch, length, length))


@check("layer_matches_oracle")
def test_layer_matches_oracle(student, rng, evidence):
    layer, state, x = student_layer(student, rng, 2, 5, 16)
    context, weights = expect.unpack(layer(x), 2, "SimpleSelfAttention.forward(x)")
    expected_c, expected_w = expected_layer(state, x)
    ctx_variants, w_variants = layer_variants(state, x)
    if isinstance(weights, torch.Tensor):
        evidence.heatmap("weights[0]", weights[0].double(), expected_w[0])
    expect.close(weights, expected_w, "weights", variants=w_variants)
    expect.close(context, expected_c, "context", variants=ctx_variants)


@check("layer_matches_reference")
def test_layer_matches_reference(student, reference, rng):
    layer, state, x = student_layer(student, rng, 3, 4, 10)
    context, weights = expect.unpack(layer(x), 2, "SimpleSelfAttention.forward(x)")
    trusted = reference.SimpleSelfAttention(10).double()
    trusted.load_state_dict({k: v.double() for k, v in state.items()})
    with torch.no_grad():
        expected_c, expected_w = trusted(x.double())
    ctx_variants, w_variants = layer_variants(state, x)
    expect.close(weights, expected_w, "weights", variants=w_variants)
    expect.close(context, expected_c, "context", variants=ctx_variants)


@check("layer_batch_independence")
def test_layer_batch_independence(student, rng):
    layer, _, x = student_layer(student, rng, 3, 4, 6)
    together, _ = expect.unpack(layer(x), 2, "SimpleSelfAttention.forward(x)")
    together = expect.tensor(together, "context", (3, 4, 6))
    for i in range(x.shape[0]):
        alone, _ = expect.unpack(layer(x[i : i + 1]), 2, "SimpleSelfAttention.forward(x[i:i+1])")
        expect.close(together[i : i + 1], expect.tensor(alone, f"context of batch {i} alone", (1, 4, 6)),
                     f"context[{i}] (batch of 3 vs alone)")  # fmt: skip


@check("layer_gradients")
def test_layer_gradients(student, rng):
    layer, state, x = student_layer(student, rng, 2, 5, 6)
    g_context = torch.randn(2, 5, 6, generator=rng)
    with expect.known_errors(BACKWARD_ERRORS):
        result = layer._vjp([x], [0], [g_context, None])
    context = expect.unpack(result["outputs"], 2, "SimpleSelfAttention.forward(x)")[0]
    expect.close(context, expected_layer(state, x)[0], "context", variants=layer_variants(state, x)[0])
    x64 = x.double().requires_grad_()
    params = {k: v.double().requires_grad_() for k, v in state.items()}
    (expected_layer(params, x64)[0] * g_context.double()).sum().backward()
    grads = {"x": result["input_grads"][0], **result["param_grads"]}
    wanted = [("x", x64.grad), *((k, p.grad) for k, p in params.items())]
    for name, _ in wanted:  # every gradient present before any value is compared
        expect.true(grads.get(name) is not None, NO_GRAD_TEXT.format(name=name), "no_gradient")
    for name, want in wanted:
        expect.close(grads[name], want, f"{name}.grad", rtol=1e-3, atol=1e-4)


@check("layer_deterministic")
def test_layer_deterministic(student, rng):
    layer, state, x = student_layer(student, rng, 2, 5, 6)
    first, _ = expect.unpack(layer(x), 2, "SimpleSelfAttention.forward(x)")
    second, _ = expect.unpack(layer(x), 2, "SimpleSelfAttention.forward(x)")
    first, second = expect.tensor(first, "context", (2, 5, 6)), expect.tensor(second, "context", (2, 5, 6))
    err = float((first - second).abs().max())
    expect.true(err <= 1e-6, DETERMINISTIC_TEXT.format(err=err), "randomness_in_forward")
    expect.close(first, expected_layer(state, x)[0], "context")
