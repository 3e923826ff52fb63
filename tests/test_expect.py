"""The comparison and diagnosis mechanism, tested directly (no sandbox involved)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from graders import attention as A
from graders.harness import expect
from graders.harness.errors import CheckFailed


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
