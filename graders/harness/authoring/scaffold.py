"""`python grade.py new <id>`: scaffold a new exercise that works end to end but is not yet done.

It writes the four files and two statements of an exercise (plus one mutant), already wired
together: the example check passes on the example reference, fails on the stub, and names the
example mistake of the example mutant. Every file carries `SCAFFOLD_MARKER` and the manifest
declares the check `EXAMPLE_CHECK`; `grade.py validate` rejects the exercise while either is left,
so a half-written exercise cannot reach students by accident.
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from pathlib import Path

from ..core.models import ID_PATTERN
from ..core.project import ManifestError, Project

SCAFFOLD_MARKER = "TODO(grade.py new)"
EXAMPLE_CHECK = "todo_example"
EXAMPLE_DIAGNOSIS = "todo_forgot_doubling"

MANIFEST = """\
# {marker}: replace the example check and diagnosis with your own, then run `python grade.py validate`.
id = "{id}"
order = {order}
title = {{ zh = "{marker} 练习标题", en = "{marker} exercise title" }}
exports = ["double"]

[[checks]]
id = "{check}"
points = 1
title = {{ zh = "{marker} double(x) 返回 2x", en = "{marker} double(x) returns 2x" }}

[diagnoses.{diagnosis}]
message = {{ zh = "你返回了 x 本身，而不是 2x。", en = "You returned x itself instead of 2x." }}
section = {{ zh = "任务", en = "Task" }}
"""

STATEMENT_ZH = """\
# {marker} 练习标题

{marker}：用你自己的话写题目。每个诊断的 `section` 应与这里的某个标题一致。

## 任务

实现 `double(x)`，返回 `2 * x`（形状与 `x` 相同）。
"""

STATEMENT_EN = """\
# {marker} exercise title

{marker}: write the statement in your own words. Each diagnosis `section` should match a heading here.

## Task

Implement `double(x)`, returning `2 * x` (same shape as `x`).
"""

STUB = '''\
"""{marker}: the stub students edit. Keep the names and signatures of the manifest's `exports`."""

import torch


def double(x: torch.Tensor) -> torch.Tensor:
    """Return 2 * x, with the shape of x."""
    raise NotImplementedError("double")
'''

REFERENCE = '''\
"""{marker}: the reference solution (never shipped to students)."""

import torch


def double(x: torch.Tensor) -> torch.Tensor:
    """Return 2 * x, with the shape of x."""
    return 2 * x  # (*shape)
'''

GRADER = '''\
"""Checks for {id}. {marker}: one test per manifest check, marked @check("<id>").

Visible checks never use the `reference` fixture (students get visible checks without it): compare
with an independent formula computed here. Pass known wrong answers as `variants` so a match
names the mistake (the diagnosis ids are declared in the manifest).
"""

import torch

from graders.harness import check, expect


@check("{check}")
def test_{check}(student, rng):
    x = torch.randn(3, 5, generator=rng)  # (3, 5)
    got = expect.tensor(student.double(x), "double(x)", (3, 5))
    expect.close(got, 2 * x, "double(x)", variants={{"{diagnosis}": x}})
'''

MUTANTS = """\
# {marker}: one mutant per mistake students make: a whole submission file and the diagnosis it must get.
[forgot_doubling]
description = "returns x unchanged"
expect = {{ {check} = "{diagnosis}" }}
"""

MUTANT = '''\
"""Mutant of {id}: returns x instead of 2x."""


def double(x):
    return x
'''


class ScaffoldError(Exception):
    """The id cannot be scaffolded; the message is one line."""


def scaffold_files(project: Project, exercise_id: str) -> dict[Path, str]:
    """The files `new` writes for `exercise_id`, keyed by absolute path."""
    params = dict(
        id=exercise_id,
        marker=SCAFFOLD_MARKER,
        check=EXAMPLE_CHECK,
        diagnosis=EXAMPLE_DIAGNOSIS,
        order=next_order(project),
    )
    mutants = project.root / "tests" / "mutants" / exercise_id
    return {
        project.manifest_path(exercise_id): MANIFEST.format(**params),
        project.statement_path(exercise_id, "zh"): STATEMENT_ZH.format(**params),
        project.statement_path(exercise_id, "en"): STATEMENT_EN.format(**params),
        project.template_path(exercise_id): STUB.format(**params),
        project.reference_path(exercise_id): REFERENCE.format(**params),
        project.grader_path(exercise_id): GRADER.format(**params),
        mutants / "mutants.toml": MUTANTS.format(**params),
        mutants / "forgot_doubling.py": MUTANT.format(**params),
    }


def next_order(project: Project) -> int:
    """One past the highest `order` among manifests that load; 1 in an empty project."""
    orders = []
    for exercise_id in project.exercise_ids():
        try:
            orders.append(project.load_manifest(exercise_id).order)
        except ManifestError:
            continue
    return max(orders, default=0) + 1


def check_new_id(project: Project, exercise_id: str) -> None:
    if not re.fullmatch(ID_PATTERN, exercise_id) or keyword.iskeyword(exercise_id):
        raise ScaffoldError(
            f"{exercise_id!r} is not a valid exercise id: use lowercase letters, digits and _, "
            "starting with a letter (for example ex05_causal_mask)"
        )
    taken = [p for p in scaffold_files(project, exercise_id) if p.exists()]
    if taken or project.manifest_path(exercise_id).parent.exists():
        where = taken[0] if taken else project.manifest_path(exercise_id).parent
        raise ScaffoldError(f"exercise {exercise_id!r} already exists ({where.relative_to(project.root)})")


def new_exercise(project: Project, exercise_id: str) -> list[Path]:
    """Write the scaffold of `exercise_id`; `ScaffoldError` for a bad or existing id."""
    check_new_id(project, exercise_id)
    files = scaffold_files(project, exercise_id)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(files)


def cmd_new(argv: list[str], project: Project) -> int:
    """`new ID`: 0 when the scaffold is written, 2 for a bad or existing id."""
    parser = argparse.ArgumentParser(
        prog="grade.py new",
        description="Scaffold a new exercise (manifest, statements, stub, reference, grader, one mutant). "
        "`grade.py validate` rejects it until every TODO is replaced.",
    )
    parser.add_argument("id", help="exercise id, for example ex05_causal_mask")
    args = parser.parse_args(argv)
    try:
        written = new_exercise(project, args.id)
    except ScaffoldError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"created {path.relative_to(project.root)}")
    print(
        f"Next: replace every {SCAFFOLD_MARKER} and the example check {EXAMPLE_CHECK!r}, "
        f"then run `python grade.py validate --exercise {args.id}` (docs/instructors.md).\n"
        f"下一步：替换所有 {SCAFFOLD_MARKER} 与示例检查 {EXAMPLE_CHECK!r}，"
        f"然后运行 `python grade.py validate --exercise {args.id}`（见 docs/instructors.md）。"
    )
    return 0
