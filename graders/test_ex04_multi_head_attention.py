"""Checks for exercise 4: SimpleMultiHeadAttention.

Configurations keep every dimension different (B ≠ L ≠ E ≠ H ≠ d_k, and E ≠ H² so that √E ≠ d_k)
so that a wrong split, merge or scale cannot hide. The independent oracle is torch's own
nn.MultiheadAttention with the student's weights copied in; the gradients are checked against the
float64 formula of graders/multihead.py, which a test proves equal to that oracle.
"""

import torch

from graders import attention as A
from graders import multihead as M
from graders.harness import Text, check, expect
from graders.harness.errors import StudentCodeError

# (B, L, E, H): d_k = 4, then d_k = 6
CONFIGS = [(2, 5, 12, 3), (3, 7, 12, 2)]
HIDDEN_CONFIGS = [(3, 4, 10, 5), (1, 6, 8, 4)]
BAD_SPLITS = [(10, 3), (12, 5), (6, 4)]
FORWARD_ERRORS = {"view_not_contiguous": r"view size is not compatible with input tensor's size and stride"}
BACKWARD_ERRORS = {**FORWARD_ERRORS, "inplace_breaks_backward": r"modified by an inplace operation"}


def student_layer(student, rng, batch, length, embed, heads):
    """The student's SimpleMultiHeadAttention(embed, heads) in eval mode with seeded weights, and x."""
    layer = student.SimpleMultiHeadAttention(embed, heads)
    state = A.linear_weights(M.LAYERS, embed, embed, rng)
    layer.load_state_dict(state)
    layer.eval()
    x = torch.randn(batch, length, embed, generator=rng)
    return layer, state, x


def run(layer, x, name="SimpleMultiHeadAttention.forward(x)"):
    """(output, weights) of the student's forward, naming known runtime mistakes."""
    with expect.known_errors(FORWARD_ERRORS):
        return expect.unpack(layer(x), 2, name)


LAYERS_TEXT = Text(
    zh="SimpleMultiHeadAttention({embed}, {heads}) 应有名为 query、key、value、out_proj 的"
    " nn.Linear({embed}, {embed}) 层；缺少或不对：{missing}。",
    en="SimpleMultiHeadAttention({embed}, {heads}) should have nn.Linear({embed}, {embed}) layers"
    " named query, key, value and out_proj; missing or wrong: {missing}.",
)
BAD_SPLIT_TEXT = Text(
    zh="SimpleMultiHeadAttention({embed}, {heads})：{embed} 不能被 {heads} 整除，"
    "应抛出 ValueError，实际：{got}。",
    en="SimpleMultiHeadAttention({embed}, {heads}): {embed} is not divisible by {heads},"
    " so it should raise ValueError; instead: {got}.",
)
ROWS_TEXT = Text(
    zh="每个头的注意力权重应非负、每行（对所有键）和为 1；最小的权重是 {low:.4g}。",
    en="Each head's attention weights should be non-negative with every row (over the keys)"
    " summing to 1; the smallest weight is {low:.4g}.",
)
NO_GRAD_TEXT = Text(
    zh="梯度没有传到 `{name}`：前向计算中断了计算图（例如 .detach()、.data、.numpy() 或 .item()）。",
    en="No gradient reaches `{name}`: the forward pass broke the autograd graph"
    " (.detach(), .data, .numpy() or .item()).",
)
DETERMINISTIC_TEXT = Text(
    zh="eval 模式下同一个输入调用两次，输出不一致（最大差 {err:.3g}）：前向计算不应有随机性。",
    en="In eval mode, two calls on the same input disagree (largest difference {err:.3g}):"
    " the forward pass must not be random.",
)
BUILTIN_TEXT = Text(
    zh="第 {line} 行用到了 torch 自带的注意力实现（{found}）；本题要求自己实现多头注意力。",
    en="Line {line} uses torch's built-in attention ({found});"
    " this exercise asks you to build multi-head attention yourself.",
)
DYNAMIC_TEXT = Text(
    zh="第 {line} 行以动态方式访问 torch（{found}）；本题要求按名字直接调用你用到的函数。",
    en="Line {line} reaches into torch dynamically ({found}); this exercise asks you to call what you use by its name.",
)
CALLED_TEXT = Text(
    zh="你的代码运行时调用了 torch 自带的注意力实现 {found}（第 {line} 行）；本题要求自己实现多头注意力。",
    en="While your code ran, it called torch's built-in attention {found} (line {line});"
    " this exercise asks you to build multi-head attention yourself.",
)
BY_HAND = {  # finding kind -> (text, diagnosis)
    "banned": (BUILTIN_TEXT, "uses_builtin_attention"),
    "dynamic": (DYNAMIC_TEXT, "dynamic_torch_access"),
    "tripwire": (CALLED_TEXT, "uses_builtin_attention"),
}


def fail_not_by_hand(findings):
    """Fail on the first finding of the built-by-hand rule (see graders.harness.banned)."""
    for finding in findings[:1]:
        text, diagnosis = BY_HAND[finding.kind]
        expect.fail(text.format(found=finding.what, line=finding.line), diagnosis,
                    found=finding.what, line=finding.line)  # fmt: skip


def compare(layer, state, x, heads, expected_out, expected_w, evidence=None, outputs=None):
    """Weights first (they name split and scale mistakes), then the output (merge, out_proj).

    `outputs` is the (output, weights) pair when the forward pass already ran (inside `_vjp`).
    """
    output, weights = outputs if outputs is not None else run(layer, x)
    out_variants, w_variants = M.variants(x, state, heads)
    if evidence is not None and isinstance(weights, torch.Tensor) and weights.dim() == 4:
        evidence.heatmap("weights[0, 0]", weights[0, 0].double(), expected_w[0, 0])
    expect.close(weights, expected_w, "weights", variants=w_variants,
                 estimators=[M.scale_estimator(x, state, heads)])  # fmt: skip
    expect.close(output, expected_out, "output", variants=out_variants)


@check("mha_structure")
def test_mha_structure(student):
    embed, heads = 12, 3
    info = student.SimpleMultiHeadAttention(embed, heads)._introspect()
    params = {name: shape for name, shape, _ in info.get("parameters", [])}
    missing = [
        name for name in M.LAYERS
        if params.get(f"{name}.weight") != [embed, embed] or params.get(f"{name}.bias") != [embed]
    ]  # fmt: skip
    text = LAYERS_TEXT.format(embed=embed, heads=heads, missing=", ".join(missing) or "nn.Module")
    expect.true(info.get("is_nn_module", False) and not missing, text)


@check("mha_rejects_bad_split")
def test_mha_rejects_bad_split(student):
    student.SimpleMultiHeadAttention(12, 3)  # a valid split must construct
    for embed, heads in BAD_SPLITS:
        try:
            student.SimpleMultiHeadAttention(embed, heads)
            got = "no exception"
        except StudentCodeError as exc:
            if exc.type_name == "ValueError":
                continue
            got = exc.type_name
        expect.fail(BAD_SPLIT_TEXT.format(embed=embed, heads=heads, got=got), "bad_split_not_rejected",
                    embed=embed, heads=heads, got=got)  # fmt: skip


@check("mha_shapes")
def test_mha_shapes(student, rng):
    for batch, length, embed, heads in CONFIGS:
        layer, _, x = student_layer(student, rng, batch, length, embed, heads)
        output, weights = run(layer, x)
        expect.tensor(weights, "weights", (batch, heads, length, length), finite=False,
                      shape_variants={"weights_averaged": (batch, length, length)})  # fmt: skip
        expect.tensor(output, "output", (batch, length, embed), finite=False)


@check("mha_rows_sum_to_one")
def test_mha_rows_sum_to_one(student, rng):
    batch, length, embed, heads = CONFIGS[0]
    layer, state, x = student_layer(student, rng, batch, length, embed, heads)
    _, weights = run(layer, x)
    weights = expect.tensor(weights, "weights", (batch, heads, length, length))
    expect.true(bool((weights >= 0).all()), ROWS_TEXT.format(low=float(weights.min())))
    sums = weights.double().sum(-1)
    variants = {name: w.sum(-1) for name, w in M.variants(x, state, heads)[1].items()}
    expect.close(sums, torch.ones_like(sums), "weights.sum(-1)", atol=1e-4, variants=variants)


@check("mha_scaling")
def test_mha_scaling(student, rng, evidence):
    batch, length, embed, heads = CONFIGS[0]
    layer, state, x = student_layer(student, rng, batch, length, embed, heads)
    _, weights = run(layer, x)
    expected = M.forward(x, state, heads)[1]
    if isinstance(weights, torch.Tensor) and weights.dim() == 4:
        evidence.heatmap("weights[0, 0]", weights[0, 0].double(), expected[0, 0])
    expect.close(weights, expected, "weights", variants=M.variants(x, state, heads)[1],
                 estimators=[M.scale_estimator(x, state, heads)])  # fmt: skip


@check("mha_matches_oracle")
def test_mha_matches_oracle(student, rng, evidence):
    for i, (batch, length, embed, heads) in enumerate(CONFIGS):
        layer, state, x = student_layer(student, rng, batch, length, embed, heads)
        expected_out, expected_w = M.torch_oracle(x, state, heads)
        compare(layer, state, x, heads, expected_out, expected_w, evidence if i == 0 else None)


@check("mha_matches_reference")
def test_mha_matches_reference(student, reference, rng):
    for batch, length, embed, heads in HIDDEN_CONFIGS:
        layer, state, x = student_layer(student, rng, batch, length, embed, heads)
        trusted = reference.SimpleMultiHeadAttention(embed, heads).double().eval()
        trusted.load_state_dict({k: v.double() for k, v in state.items()})
        with torch.no_grad():
            expected_out, expected_w = trusted(x.double())
        compare(layer, state, x, heads, expected_out, expected_w)


@check("mha_batch_independence")
def test_mha_batch_independence(student, rng):
    batch, length, embed, heads = 3, 4, 12, 2
    layer, _, x = student_layer(student, rng, batch, length, embed, heads)
    together = expect.tensor(run(layer, x)[0], "output", (batch, length, embed))
    for i in range(batch):
        alone = run(layer, x[i : i + 1], "SimpleMultiHeadAttention.forward(x[i:i+1])")[0]
        alone = expect.tensor(alone, f"output of batch {i} alone", (1, length, embed))
        expect.close(together[i : i + 1], alone, f"output[{i}] (batch of {batch} vs alone)")


@check("mha_gradients")
def test_mha_gradients(student, rng):
    batch, length, embed, heads = CONFIGS[0]
    layer, state, x = student_layer(student, rng, batch, length, embed, heads)
    g_out = torch.randn(batch, length, embed, generator=rng)
    with expect.known_errors(BACKWARD_ERRORS):
        result = layer._vjp([x], [0], [g_out, None])
    outputs = expect.unpack(result["outputs"], 2, "SimpleMultiHeadAttention.forward(x)")
    compare(layer, state, x, heads, *M.forward(x, state, heads), outputs=outputs)  # a wrong forward first
    x64 = x.double().requires_grad_()
    params = {k: v.double().requires_grad_() for k, v in state.items()}
    (M.forward(x64, params, heads)[0] * g_out.double()).sum().backward()
    got = {"x": result["input_grads"][0], **result["param_grads"]}
    want = {"x": x64.grad, **{k: p.grad for k, p in params.items()}}
    for name in want:  # every gradient present before any value is compared
        expect.true(got.get(name) is not None, NO_GRAD_TEXT.format(name=name), "no_gradient")
    for name, expected in want.items():
        expect.close(got[name], expected, f"{name}.grad", rtol=1e-3, atol=1e-4)


@check("mha_deterministic")
def test_mha_deterministic(student, rng):
    batch, length, embed, heads = CONFIGS[0]
    layer, state, x = student_layer(student, rng, batch, length, embed, heads)
    first = expect.tensor(run(layer, x)[0], "output", (batch, length, embed))
    second = expect.tensor(run(layer, x)[0], "output", (batch, length, embed))
    err = float((first - second).abs().max())
    expect.true(err <= 1e-6, DETERMINISTIC_TEXT.format(err=err), "randomness_in_forward")
    expect.close(first, M.forward(x, state, heads)[0], "output", variants=M.variants(x, state, heads)[0])


@check("mha_no_builtin_attention")
def test_mha_no_builtin_attention(student, built_by_hand, rng):
    fail_not_by_hand(built_by_hand.static())
    batch, length, embed, heads = CONFIGS[1]  # the points need a working module, not just a clean file
    layer, state, x = student_layer(student, rng, batch, length, embed, heads)
    expected_out, expected_w = M.forward(x, state, heads)
    compare(layer, state, x, heads, expected_out, expected_w)
    fail_not_by_hand(built_by_hand.tripwire())  # what ran: the static check cannot see everything
