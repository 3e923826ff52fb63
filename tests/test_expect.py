"""The comparison and diagnosis mechanism, tested directly (no sandbox involved)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from graders import attention as A
from graders.harness.core import expect
from graders.harness.core.errors import CheckFailed
from graders.harness.core.i18n import Text


def failure(fn, *args, **kwargs) -> CheckFailed:
    with pytest.raises(CheckFailed) as info:
        fn(*args, **kwargs)
    return info.value


def test_shape_is_checked_exactly_never_broadcast():
    err = failure(expect.close, torch.ones(1, 3), torch.ones(2, 3), "x")
    assert "(2, 3)" in err.text.en and "(1, 3)" in err.text.en
    assert "形状" in err.text.zh


def test_values_message_gives_got_expected_and_index():
    got = torch.zeros(2, 2)
    got[1, 0] = 0.5
    err = failure(expect.close, got, torch.zeros(2, 2), "w")
    assert "(1, 0)" in err.text.en and "got 0.5" in err.text.en and "expected 0" in err.text.en
    assert err.diagnosis is None


def test_matching_variant_names_the_mistake():
    expected, wrong = torch.zeros(3), torch.ones(3)
    err = failure(
        expect.close, wrong.clone(), expected, "w", variants={"other": torch.full((3,), 7.0), "mine": wrong}
    )
    assert err.diagnosis == "mine"


def test_variants_given_as_a_function_are_computed_only_for_a_wrong_answer():
    expected = torch.tensor([1.0, 2.0])
    wrong = expected * 2

    def variants():
        calls.append(1)
        return {"doubled": wrong}

    calls: list[int] = []
    expect.close(expected.clone(), expected, "x", variants=variants)
    assert calls == []  # a right answer needs no diagnosis
    assert failure(expect.close, wrong, expected, "x", variants=variants).diagnosis == "doubled"
    assert failure(expect.finite, torch.tensor([float("nan")]), "x", variants=lambda: {}).diagnosis is None
    assert calls == [1]


def test_nan_output_matches_an_overflowing_variant():
    q = torch.randn(2, 4, 16) * 12
    variant = A.naive_softmax(A.scores(q, q))
    assert not torch.isfinite(variant).all()
    err = failure(
        expect.close, variant.float(), A.attention(q, q, q)[1], "w", variants={"naive_softmax": variant}
    )
    assert err.diagnosis == "naive_softmax" and "NaN" in err.text.en


def test_non_tensor_and_complex_and_int_outputs_fail_cleanly():
    assert "list" in failure(expect.tensor, [1.0], "x").text.en
    assert "complex64" in failure(expect.tensor, torch.zeros(2, dtype=torch.complex64), "x").text.en
    assert "int64" in failure(expect.tensor, torch.zeros(2, dtype=torch.int64), "x").text.en


def test_convert_accepts_hand_written_lists_and_arrays():
    assert expect.tensor([[1, 2]], "x", (1, 2), convert=True).dtype == torch.float64
    assert expect.tensor(np.ones((2, 2)), "x", (2, 2), convert=True).shape == (2, 2)
    failure(expect.tensor, [[1, 2], [3]], "x", convert=True)


@pytest.mark.parametrize("used", [1 / 4, 1 / 8, 1 / 3])
def test_scale_estimator_recovers_the_scale_the_student_used(used):
    q, k = torch.randn(2, 5, 16, dtype=torch.float64), torch.randn(2, 7, 16, dtype=torch.float64)
    raw = A.scores(q, k, 1.0)
    got = torch.softmax(raw * used, dim=-1)
    found = A.scale_estimator(raw, 1 / math.sqrt(16))(got)
    if math.isclose(used, 1 / 4):
        assert found is None  # the right scale is not a mistake
    else:
        assert found[0] == "wrong_scale"
        assert found[1]["got_scale"] == f"1/{1 / used:.4g}" and found[1]["expected_scale"] == "1/4"


def test_scale_estimator_ignores_outputs_that_are_not_a_softmax_of_the_scores():
    raw = torch.randn(3, 4, 4, dtype=torch.float64)
    assert A.scale_estimator(raw, 0.5)(torch.rand(3, 4, 4, dtype=torch.float64)) is None


# ---------------------------------------------------------------- fair scores: naming, readings, properties


def test_a_diagnosis_is_not_shown_when_another_mistake_fits_as_well():
    expected, wrong = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    ambiguous = {"mine": wrong, "other": wrong + 1e-6}
    assert failure(expect.close, wrong.clone(), expected, "w", variants=ambiguous).diagnosis is None
    clearer = {"mine": wrong, "other": wrong + 5e-5}  # still a match, but a much worse fit
    assert failure(expect.close, wrong.clone(), expected, "w", variants=clearer).diagnosis == "mine"


def test_a_paired_variant_needs_the_joint_evidence_to_agree():
    q, k, v = (torch.randn(2, 5, 16, dtype=torch.float64) for _ in range(3))
    mistakes = A.mistakes(q, k, v)  # V scaled and weights scaled after the softmax: the same context
    context, weights = mistakes["scaled_values"]
    assert expect.matches(context, mistakes["scale_after_softmax"][0], 1e-6, 1e-9)
    variants = A.context_variants(q, k, v)
    expected = A.attention(q, k, v)[0]
    assert (
        failure(expect.close, context, expected, "c", variants=variants, joint=weights).diagnosis
        == "scaled_values"
    )
    after = mistakes["scale_after_softmax"][1]
    assert (
        failure(expect.close, context, expected, "c", variants=variants, joint=after).diagnosis
        == "scale_after_softmax"
    )
    assert failure(expect.close, context, expected, "c", variants=variants).diagnosis is None  # no evidence


def test_a_reading_carried_forward_counts_as_right_and_is_the_one_compared_with():
    expected, own = torch.zeros(2, 2), torch.full((2, 2), 3.0)
    assert expect.close(own.clone(), expected, "x", readings=[own]) is not None
    err = failure(expect.close, own + 0.5, expected, "x", readings=[own])
    assert "expected 3" in err.text.en  # the nearest right answer, not the formula's


def test_nan_carried_forward_only_where_the_own_reading_has_it_and_is_mostly_finite():
    nan, inf = float("nan"), float("inf")
    expected = torch.zeros(2, 2)
    own = torch.tensor([[nan, inf], [1.0, 2.0]])  # the earlier part, as the student wrote it
    assert expect.close(own.clone(), expected, "x", readings=[own]) is not None
    for got in (
        torch.tensor([[nan, inf], [1.0, 2.5]]),  # wrong where the reading is finite
        torch.tensor([[nan, nan], [1.0, 2.0]]),  # NaN where the reading has inf
        torch.tensor([[nan, inf], [nan, 2.0]]),  # a NaN of its own
    ):
        failure(expect.close, got, expected, "x", readings=[own])
    nothing = torch.tensor([[nan, nan], [nan, 1.0]])  # mostly no answer: copying it earns nothing
    failure(expect.close, nothing.clone(), expected, "x", readings=[nothing])
    failure(expect.close, own.clone(), expected, "x")  # without the reading, NaN is never right


def test_hidden_answers_say_where_and_what_but_never_the_expected_number():
    expected = torch.tensor([[0.5761, 0.2119], [0.4223, 0.1554]], dtype=torch.float64)
    got = expected.clone()
    got[1, 0] = 0.33
    err = failure(expect.close, got, expected, "WEIGHTS", rtol=0, atol=0.006, reveal=False)
    assert "(1, 0)" in err.text.en and "0.33" in err.text.en and "1 wrong entries out of 4" in err.text.en
    assert "0.4223" not in err.text.en + err.text.zh and "expected" not in err.text.en


def test_gradients_are_judged_against_the_forward_pass_itself():
    rng = torch.Generator().manual_seed(0)
    point = {"a": torch.randn(3, 4, dtype=torch.float64), "b": torch.randn(4, 2, dtype=torch.float64)}
    cotangent = torch.randn(3, 2, dtype=torch.float64)
    texts = {
        "missing": Text(zh="缺 {name}", en="missing {name}"),
        "wrong": Text(zh="错 {name}", en="wrong {name}"),
    }

    def grads_of(fn):
        a, b = (t.clone().requires_grad_() for t in point.values())
        out = fn({"a": a, "b": b})
        out.backward(cotangent) if out.requires_grad else None
        return {"a": a.grad, "b": b.grad}

    def cubed(values):  # a wrong forward pass (not a @ b) with an intact graph: nothing to charge here
        return (values["a"] @ values["b"]) ** 3

    expect.gradients_match_forward(cubed, point, grads_of(cubed), cotangent, rng, **texts)

    def cut(values):  # part of the graph cut off: the gradient of b misses a path
        return values["a"] @ values["b"] + values["a"].detach() @ values["b"].detach() ** 2

    def cut_forward(values):
        return values["a"] @ values["b"] + values["a"] @ values["b"] ** 2

    err = failure(expect.gradients_match_forward, cut_forward, point, grads_of(cut), cotangent, rng, **texts)
    assert err.diagnosis == "no_gradient" and "wrong" in err.text.en

    def unused_b(values):  # b is not used: no gradient is the right gradient
        return values["a"].sum(-1, keepdim=True).expand(3, 2) * 1.0

    expect.gradients_match_forward(unused_b, point, {"a": grads_of(unused_b)["a"], "b": None}, cotangent, rng,
                                   **texts)  # fmt: skip

    def constant(values):  # depends on nothing: no property of it can be judged
        return torch.zeros(3, 2, dtype=torch.float64)

    err = failure(
        expect.gradients_match_forward, constant, point, {"a": None, "b": None}, cotangent, rng, **texts
    )
    assert "does not depend on its input" in err.text.en


def test_batch_independence_perturbs_one_element_and_needs_a_responsive_output():
    rng = torch.Generator().manual_seed(1)
    x = torch.randn(3, 4, 5)
    expect.batch_independent(lambda t: t.softmax(-1), x, rng, "y")
    assert "batch element 0" in failure(expect.batch_independent, lambda t: t.softmax(0), x, rng, "y").text.en
    assert (
        "does not depend"
        in failure(expect.batch_independent, lambda t: torch.zeros(3, 2), x, rng, "y").text.en
    )
    assert (
        "first dimension"
        in failure(expect.batch_independent, lambda t: t.transpose(0, 1), x, rng, "y").text.en
    )


@pytest.mark.parametrize("layout", ["rows", "columns", "transposed", "masked", "no softmax"])
def test_the_scale_is_read_off_weights_whatever_else_is_wrong(layout):
    q, k = torch.randn(2, 5, 16, dtype=torch.float64), torch.randn(2, 5, 16, dtype=torch.float64)
    raw = A.scores(q, k, 1.0)
    scaled = raw / 4
    weights = {
        "rows": torch.softmax(scaled, -1),
        "columns": torch.softmax(scaled, -2),
        "transposed": torch.softmax(scaled, -1).transpose(-2, -1),
        "masked": torch.softmax(
            scaled.masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf")), -1
        ),
        "no softmax": scaled,
    }[layout]
    assert A.recovered_scale(weights, raw) == pytest.approx(0.25, rel=1e-6)
    assert A.recovered_scale(torch.softmax(raw, -1), raw) == pytest.approx(1.0, rel=1e-6)


def test_same_as_own_compares_nan_for_nan():
    nan = float("nan")
    own = torch.tensor([1.0, nan])
    assert expect.same_as_own(own.clone(), own, "x") is not None
    for other in (torch.tensor([1.0, 0.0]), torch.tensor([nan, nan]), torch.tensor([1.1, nan])):
        with pytest.raises(CheckFailed):
            expect.same_as_own(other, own, "x")
    with pytest.raises(CheckFailed):  # all NaN, both times: no answer to judge a property of
        expect.same_as_own(torch.tensor([nan, nan]), torch.tensor([nan, nan]), "x")


def test_a_named_wrong_shape_gives_its_message_the_shapes():
    """A diagnosis named by `shape_variants`, or by a variant in `close`, may show the shapes in its
    message (`{name}` has shape {got}); without them it printed its placeholders raw."""
    with pytest.raises(CheckFailed) as named:
        expect.tensor(torch.zeros(6, 5), "weights", (2, 3, 5), shape_variants={"folded": (6, 5)})
    assert named.value.diagnosis == "folded"
    assert named.value.diagnosis_params == {"name": "weights", "got": (6, 5), "expected": (2, 3, 5)}
    with pytest.raises(CheckFailed) as by_variant:
        expect.close(torch.zeros(5, 2), torch.zeros(2, 5), "out", variants={"transposed": torch.zeros(5, 2)})
    assert by_variant.value.diagnosis == "transposed"
    assert by_variant.value.diagnosis_params["got"] == (5, 2)
