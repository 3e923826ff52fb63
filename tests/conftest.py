"""Shared fixtures: the project, one warm sandbox pool for the whole run, a grading helper."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import torch
from hypothesis import settings

from graders.harness.core.project import default_project
from graders.harness.core.runner import grade
from graders.harness.sandbox.client import SandboxPool

# Property tests draw the same examples on every run, so CI's verdict does not move with the draw;
# HYPOTHESIS_PROFILE=explore searches wider and afresh (run it when changing a format or a cleaner).
settings.register_profile("repeatable", max_examples=60, derandomize=True)
settings.register_profile("explore", max_examples=2000, derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

torch.set_num_threads(1)  # this process forks nothing, but keep the test run light on 2 cores

PROJECT = default_project()
EXERCISES = PROJECT.exercise_ids()


@pytest.fixture(autouse=True)
def seeded_torch():
    """Every test starts from the same random state: a test's inputs never move with the run."""
    torch.manual_seed(20261201)


@pytest.fixture(scope="session")
def project():
    return PROJECT


@pytest.fixture(scope="session")
def pool():
    with SandboxPool() as shared:
        yield shared


@pytest.fixture
def grade_files(pool, tmp_path):
    """Grade a submission made of {filename: source text or Path}; returns the Report."""

    def run(files: dict[str, str | Path], exercises=None, seed=1234, lang="en", **kwargs):
        folder = tmp_path / "submission"
        folder.mkdir(exist_ok=True)
        for name, content in files.items():
            if isinstance(content, Path):
                shutil.copyfile(content, folder / name)
            else:
                (folder / name).write_text(content, encoding="utf-8")
        return grade(PROJECT, folder, seed=seed, lang=lang, exercises=exercises, pool=pool, **kwargs)

    return run


def reference_files(exercises=None) -> dict[str, Path]:
    return {f"{e}.py": PROJECT.reference_path(e) for e in (exercises or EXERCISES)}


def template_files(exercises=None) -> dict[str, Path]:
    return {f"{e}.py": PROJECT.template_path(e) for e in (exercises or EXERCISES)}
