"""Exercise 7's grader maths: the float64 formula is torch's layer, and the dropout probes read a
correct layer's dropout within their fixed tolerance under every seed (so that `enc_train_dropout`
gives the same verdict whatever the draw), in either norm layout."""

from __future__ import annotations

import importlib
import warnings

import pytest
import torch

from graders import encoder as E

with warnings.catch_warnings():  # the grader's @check marker is registered by the grading plugin only
    warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
    GRADER = importlib.import_module("graders.test_ex07_transformer_encoder_layer")


@pytest.mark.parametrize("config", GRADER.CONFIGS + GRADER.HIDDEN_CONFIGS)
def test_the_formula_is_torchs_layer(config):
    batch, length, embed, heads, ff = config
    rng = torch.Generator().manual_seed(7)
    state = E.random_state(embed, ff, rng)
    x = torch.randn(batch, length, embed, generator=rng)
    assert torch.allclose(E.forward(x, state, heads), E.torch_oracle(x, state, heads), atol=1e-12)
    pre = E.torch_layer(state, heads, norm_first=True).eval()
    with torch.no_grad():
        assert torch.allclose(E.variants(x, state, heads)["pre_norm"], pre(x.double()), atol=1e-12)


@pytest.mark.parametrize("norm_first", [False, True])
def test_probes_read_a_correct_dropout_with_margin_under_every_seed(norm_first):
    x = E.probe_input(GRADER.PROBE_BATCH, GRADER.PROBE_LENGTH).double()
    worst = 0.0
    for site, (_, _, share, scale) in GRADER.SITES.items():
        layer = E.torch_layer(E.probe_state(site), 3, dropout=GRADER.P, norm_first=norm_first).train()
        for seed in range(40):
            torch.manual_seed(seed)
            with torch.no_grad():
                outputs = [layer(x) for _ in range(GRADER.DRAWS)]
            read, dropped, ratios = E.read_probe(outputs)
            assert read > 0.9 * GRADER.DRAWS * GRADER.PROBE_BATCH * GRADER.PROBE_LENGTH * E.GROUP
            worst = max(worst, abs(dropped / read - share))
            kept = sorted(ratios)[len(ratios) // 2]
            readings = [kept / f for f in E.read_factors(site).values()]
            assert any(abs(r / scale - 1) < 1e-6 for r in readings), (site, readings, scale)
            GRADER.judge_site(site, read, dropped, ratios)  # passes: raises on a failure
    assert worst < GRADER.SHARE_TOL / 2  # the tolerance is more than twice the worst deviation seen


def test_probes_name_unscaled_and_missing_dropout():
    from graders.harness.core.errors import CheckFailed

    x = E.probe_input(GRADER.PROBE_BATCH, GRADER.PROBE_LENGTH).double()
    layer = E.torch_layer(E.probe_state("attention"), 3, dropout=GRADER.P).train()
    torch.manual_seed(0)
    with torch.no_grad():
        read, dropped, ratios = E.read_probe([layer(x) for _ in range(GRADER.DRAWS)])
    unscaled = [r * (1 - GRADER.P) for r in ratios]
    with pytest.raises(CheckFailed) as caught:
        GRADER.judge_site("attention", read, dropped, unscaled)
    assert caught.value.diagnosis == "dropout_not_scaled"
    with pytest.raises(CheckFailed) as caught:
        GRADER.judge_site("attention", read, 0, [1.0] * read)
    assert caught.value.diagnosis == "dropout_missing"


@pytest.mark.parametrize("norm_first", [False, True])
def test_residual_probe_holds_a_correct_layer_still_and_moves_a_dropped_residual(norm_first):
    x = E.residual_input(GRADER.PROBE_BATCH, GRADER.PROBE_LENGTH).double()
    assert bool((x != 0).all()) and bool((x.std(-1) > 0).all())  # every entry of the input is visible
    layer = E.torch_layer(E.probe_state("residual"), 3, dropout=GRADER.P, norm_first=norm_first).train()
    norm = torch.nn.LayerNorm(x.shape[-1], dtype=torch.float64)
    for seed in range(20):
        torch.manual_seed(seed)
        with torch.no_grad():
            outputs = [layer(x) for _ in range(GRADER.DRAWS)]
            dropped_sum = [norm(torch.nn.functional.dropout(x, GRADER.P)) for _ in range(2)]
        assert all(torch.equal(outputs[0], other) for other in outputs[1:])  # dropout on zero branches only
        assert float((dropped_sum[0] - dropped_sum[1]).abs().max()) > 0.1  # norm(dropout(x + 0)) moves


@pytest.mark.parametrize("activation", [torch.tanh, torch.sigmoid, torch.nn.functional.silu])
def test_probes_read_the_inner_dropout_through_another_activation(activation):
    # the activation is charged by the value checks; the dropouts around it are right and read as right
    x = E.probe_input(GRADER.PROBE_BATCH, GRADER.PROBE_LENGTH).double()
    layer = E.torch_layer(E.probe_state("hidden"), 3, dropout=GRADER.P).train()
    layer.activation = activation
    torch.manual_seed(0)
    with torch.no_grad():
        read, dropped, ratios = E.read_probe([layer(x) for _ in range(GRADER.DRAWS)])
    GRADER.judge_site("hidden", read, dropped, ratios)  # passes: raises on a failure
    unscaled = [r * (1 - GRADER.P) ** 2 for r in ratios]
    from graders.harness.core.errors import CheckFailed

    with pytest.raises(CheckFailed) as caught:
        GRADER.judge_site("hidden", read, dropped, unscaled)
    assert caught.value.diagnosis == "dropout_not_scaled"
