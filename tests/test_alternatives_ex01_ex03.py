"""Correct answers written another way earn full marks in exercises 1 and 3; a lone right answer does not.

Fairness cuts both ways: the mutants prove that wrong answers lose points, these prove that right
answers in another form (hand-rounded numbers, numpy, float64 inside, loops, torch.stack or plain
indexing, integer tensors) keep them. Also checks that every diagnosis of these exercises points
to a heading that exists in its statement.
"""

from __future__ import annotations

import re

import pytest
from conftest import PROJECT, template_files

EX01, EX03 = "ex01_attention_by_hand", "ex03_permutation_and_position"

EX01_ROUNDED = """
# worked out by hand, everything rounded to two decimals, context from the rounded weights
SCORES = [[1, 0, 1], [0, 1, 1], [1, 1, 2]]
WEIGHTS = ((0.42, 0.16, 0.42), (0.16, 0.42, 0.42), (0.21, 0.21, 0.58))
CONTEXT = [
    [5.00, 6.00, 7.00, 8.00],
    [6.04, 7.04, 8.04, 9.04],
    [6.48, 7.48, 8.48, 9.48],
]
"""

EX01_NUMPY = """
import numpy as np
import torch

Q = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 1, 1]])
V = np.arange(1, 13).reshape(3, 4)
SCORES = torch.tensor(Q @ Q.T // 2)  # an integer tensor: the scores are whole numbers here
e = np.exp(Q @ Q.T / np.sqrt(4))
WEIGHTS = e / e.sum(axis=1, keepdims=True)  # float64 numpy array
CONTEXT = torch.from_numpy(WEIGHTS @ V).float()  # float32 tensor
"""

EX03_LOOPS = """
import math

import torch


def make_order_batch(tokens):
    rows = []
    for order in ("ABCDE", "EDCBA", "ACBED"):
        rows.append(torch.stack([tokens["ABCDE".index(letter)] for letter in order]))
    return torch.stack(rows)


def restore_order(outputs, order):
    restored = torch.empty_like(outputs)
    for new_position, original in enumerate(order):
        restored[..., original, :] = outputs[..., new_position, :]
    return restored


ORDER_CHANGES_CONTEXT = False


def sinusoidal_positional_encoding(seq_len, d_model):
    table = torch.zeros(seq_len, d_model, dtype=torch.float64)
    for pos in range(seq_len):
        for i in range(0, d_model, 2):
            angle = pos / 10000 ** (i / d_model)
            table[pos, i] = math.sin(angle)
            if i + 1 < d_model:
                table[pos, i + 1] = math.cos(angle)
    return table
"""

EX03_NUMPY = """
import numpy as np
import torch


def make_order_batch(tokens):
    index = torch.tensor([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [0, 2, 1, 4, 3]])
    return tokens[index]  # advanced indexing: (3, 5, E)


def restore_order(outputs, order):
    order = torch.as_tensor(order)
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(len(order))
    return outputs.index_select(-2, inverse)


ORDER_CHANGES_CONTEXT = bool(np.False_)


def sinusoidal_positional_encoding(seq_len, d_model):
    pos = np.arange(seq_len)[:, None]
    exponent = (np.arange(d_model) // 2 * 2) / d_model
    angles = pos / np.power(10000.0, exponent)
    table = np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))
    return torch.from_numpy(table.astype(np.float32))
"""

ALTERNATIVES = [
    (EX01, "hand_rounded_lists", EX01_ROUNDED),
    (EX01, "numpy_and_integer_tensor", EX01_NUMPY),
    (EX03, "loops_float64", EX03_LOOPS),
    (EX03, "numpy_and_index_select", EX03_NUMPY),
]


@pytest.mark.parametrize(
    ("exercise", "name", "source"), ALTERNATIVES, ids=[f"{e}/{n}" for e, n, _ in ALTERNATIVES]
)
@pytest.mark.parametrize("seed", [1, 20261129])
def test_alternative_correct_solution_earns_full_marks(exercise, name, source, seed, grade_files):
    report = grade_files({f"{exercise}.py": source}, exercises=[exercise], seed=seed)
    (result,) = report.exercises
    assert [(c.id, c.status, c.message) for c in result.checks if c.status != "passed"] == []
    assert result.score == result.max_score > 0


def test_right_answer_alone_earns_no_code_points(grade_files):
    stub = template_files([EX03])[f"{EX03}.py"].read_text(encoding="utf-8")
    answered = stub.replace("ORDER_CHANGES_CONTEXT = None", "ORDER_CHANGES_CONTEXT = False")
    assert answered != stub
    report = grade_files({f"{EX03}.py": answered}, exercises=[EX03])
    (result,) = report.exercises
    passed = [c.id for c in result.checks if c.status == "passed"]
    assert passed == ["order_answer"]
    assert result.score == PROJECT.load_manifest(EX03).check("order_answer").points


@pytest.mark.parametrize("exercise", [EX01, EX03])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_diagnosis_points_to_a_statement_heading(exercise, lang):
    manifest = PROJECT.load_manifest(exercise)
    text = PROJECT.statement_path(exercise, lang).read_text(encoding="utf-8")
    headings = {m.strip() for m in re.findall(r"^#{1,6}\s+(.+)$", text, flags=re.MULTILINE)}
    missing = {d: spec.section(lang) for d, spec in manifest.diagnoses.items()
               if spec.section and spec.section(lang) not in headings}  # fmt: skip
    assert missing == {}
