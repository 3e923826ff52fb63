"""`grade.py build gradescope DIR`: the zip holds what Gradescope needs, and it grades for real when
unpacked into a temporary root laid out as Gradescope's /autograder (source/, submission/, results/)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
from conftest import EXERCISES, PROJECT
from test_lms_formats import GRADESCOPE_SCHEMA

from graders.harness.authoring.gradescope_build import requirements
from graders.harness.cli import main


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("build") / "gradescope"
    assert main(["build", "gradescope", str(dest)]) == 0
    return dest / "autograder.zip"


def unpack_like_gradescope(archive: Path, root: Path) -> None:
    """Unzip into root/source keeping the modes (as unzip does), copy run_autograder to root."""
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            target = root / "source" / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            target.chmod((info.external_attr >> 16) & 0o777)
    (root / "run_autograder").write_bytes((root / "source" / "run_autograder").read_bytes())
    (root / "run_autograder").chmod(0o755)
    (root / "submission").mkdir()


def run_autograder(root: Path) -> dict:
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable, GRADE_LANG="en")
    env.pop("PYTHONPATH", None)  # only what the zip holds
    proc = subprocess.run(
        [str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, GRADESCOPE_SCHEMA)
    return data


def test_zip_holds_the_entry_points_the_harness_the_graders_and_the_references(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        setup = zf.read("setup.sh").decode()
    for script in ("setup.sh", "run_autograder"):
        mode = infos[script].external_attr >> 16
        assert stat.S_ISREG(mode) and mode & 0o111, f"{script} must be executable"
    for exercise in EXERCISES:
        for needed in (
            f"reference/{exercise}.py",
            f"graders/test_{exercise}.py",
            f"exercises/{exercise}/exercise.toml",
        ):
            assert needed in infos
    assert "grade.py" in infos and "graders/harness/batch/autograder.py" in infos
    assert not [n for n in infos if n.startswith(("tests/", "submission/")) or "__pycache__" in n]
    assert all(f"'{r}'" in setup for r in requirements(PROJECT))


def test_autograder_grades_a_submission_in_gradescope_layout(autograder_zip, tmp_path):
    unpack_like_gradescope(autograder_zip, tmp_path)
    nested = tmp_path / "submission" / "homework"  # students often upload their folder, not its files
    nested.mkdir()
    for exercise in EXERCISES:
        (nested / f"{exercise}.py").write_bytes(PROJECT.reference_path(exercise).read_bytes())
    data = run_autograder(tmp_path)
    manifests = PROJECT.load_manifests()
    assert data["score"] == sum(m.max_score for m in manifests)
    assert len(data["tests"]) == sum(len(m.checks) for m in manifests)
    hidden = {c.id for m in manifests for c in m.checks if c.visibility == "hidden"}
    for test in data["tests"]:
        assert test["status"] == "passed"
        check_id = test["tags"][1]
        assert test["visibility"] == ("after_published" if check_id in hidden else "visible")


def test_autograder_without_files_still_writes_results(autograder_zip, tmp_path):
    unpack_like_gradescope(autograder_zip, tmp_path)
    (tmp_path / "submission" / "notes.txt").write_text("forgot the code")
    data = run_autograder(tmp_path)
    assert data["score"] == 0 and data["tests"] == []
    assert "none of the exercise files" in data["output"]


def test_build_refuses_a_folder_that_is_not_empty(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("x")
    assert main(["build", "gradescope", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"error: {tmp_path}: give a new or empty folder"
