"""`grade.py --watch`: regrades what was saved, with the same seed, until Ctrl-C; and where a single
grade's HTML report goes (never beside the submission, where a batch would take it for a student)."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import PROJECT

from graders.harness.authoring.distribution import write_distribution
from graders.harness.cli import html_report_path, main
from graders.harness.cli.watch import exercises_to_regrade, merged
from graders.harness.core.intake import discover
from graders.harness.core.models import ExerciseResult, Report
from graders.harness.core.project import Project

pytest.importorskip("watchfiles")

EX2 = "ex02_self_attention"
MUTANT = Path(__file__).parent / "mutants" / EX2 / "no_scaling.py"


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("watch") / "project"
    write_distribution(PROJECT, root, "autograder", exercises=[EX2])
    return root


def submission(tmp_path: Path, source: Path) -> Path:
    folder = tmp_path / "mine"
    folder.mkdir(exist_ok=True)
    shutil.copyfile(source, folder / f"{EX2}.py")
    return folder


class Lines:
    """A process's stdout, line by line, with a deadline on each wait."""

    def __init__(self, stream) -> None:
        self.queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            self.queue.put(line)
        self.queue.put(None)

    def until(self, marker: str, timeout: float = 120) -> list[str]:
        seen, deadline = [], time.monotonic() + timeout
        while True:
            line = self.queue.get(timeout=max(0.1, deadline - time.monotonic()))
            assert line is not None, "grade.py --watch exited:\n" + "".join(seen)
            seen.append(line)
            if marker in line:
                return seen


def test_watch_regrades_each_save_with_the_same_seed_until_ctrl_c(course, tmp_path):
    folder = submission(tmp_path, PROJECT.reference_path(EX2))
    max_score = f"{PROJECT.load_manifest(EX2).max_score:g}"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LANG", "LC_ALL", "LANGUAGE")}
    proc = subprocess.Popen(
        [sys.executable, "grade.py", str(folder), "--watch", "--lang", "en", "--seed", "4"],
        cwd=course,
        env={**env, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out = Lines(proc.stdout)
        first = out.until("Watching")
        assert f"Total {max_score}/{max_score}" in first[-1]

        shutil.copyfile(MUTANT, folder / f"{EX2}.py")  # a save that breaks the scaling
        broken = "".join(out.until("Watching"))
        assert "[no_scaling]" in broken and f"Total {max_score}/{max_score}" not in broken
        score = broken.splitlines()[-1].split("Total ")[1].split(" ")[0]

        (folder / "notes.txt").write_text("not code")  # not a module: nothing to regrade
        shutil.copyfile(MUTANT, folder / f"{EX2}.py")  # the same code again: the same score
        again = "".join(out.until("Watching"))
        assert f"Total {score} " in again.splitlines()[-1]
        assert "notes" not in again

        shutil.copyfile(PROJECT.reference_path(EX2), folder / f"{EX2}.py")
        fixed = out.until("Watching")
        assert f"Total {max_score}/{max_score}" in fixed[-1]
        html = html_report_path(Project(course), folder)
        assert html.is_file() and "no_scaling" not in html.read_text(encoding="utf-8")
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    assert "Traceback" not in err


def test_watch_refuses_other_formats(course, capsys):
    for args in (["--format", "json"], ["--out", "x.txt"], ["--fail-under", "3"]):
        assert main([str(course / "student_template"), "--watch", *args], Project(course)) == 2
        assert "--watch" in capsys.readouterr().err


def test_a_save_regrades_its_own_exercise_or_all_when_a_helper_module_changes(tmp_path):
    ids = ["ex01_a", "ex02_b"]
    assert exercises_to_regrade([tmp_path / "ex02_b.py"], tmp_path, ids) == {"ex02_b"}
    assert exercises_to_regrade([tmp_path / "helpers.py"], tmp_path, ids) == set(ids)
    assert exercises_to_regrade([tmp_path / "notes.txt"], tmp_path, ids) == set()
    assert exercises_to_regrade([tmp_path / "sub" / "ex01_a.py"], tmp_path, ids) == set()


def test_merged_replaces_the_regraded_exercises_and_recomputes_the_total():
    def ex(id_: str, score: float) -> ExerciseResult:
        return ExerciseResult(id=id_, title=id_, score=score, max_score=10, checks=[], causes=[])

    whole = Report(
        submission="s", score=20, max_score=20, seed=1, lang="en", exercises=[ex("a", 10), ex("b", 10)]
    )
    regraded = Report(submission="s", score=4, max_score=10, seed=1, lang="en", exercises=[ex("b", 4)])
    result = merged(whole, regraded)
    assert [(e.id, e.score) for e in result.exercises] == [("a", 10), ("b", 4)]
    assert (result.score, result.max_score) == (14, 20)


def test_a_text_grade_writes_its_html_report_under_reports_not_beside_the_submission(
    course, tmp_path, capsys
):
    folder = submission(tmp_path, PROJECT.reference_path(EX2))
    assert main([str(folder), "--seed", "3", "--lang", "en"], Project(course)) == 0
    html = course / "reports" / "mine_report.html"
    assert f"HTML report: {html}" in capsys.readouterr().err
    assert html.is_file() and not (tmp_path / "mine_report.html").exists()


def test_batch_never_takes_a_report_file_for_a_student(tmp_path):
    (tmp_path / "s01").mkdir()
    (tmp_path / "s01_report.html").write_text("<html></html>")
    (tmp_path / "s02.zip").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("x")
    assert [(e.path.name, e.kind) for e in discover(tmp_path)] == [
        ("notes.txt", "other"),
        ("s01", "dir"),
        ("s02.zip", "zip"),
    ]
