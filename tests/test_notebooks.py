"""Notebook submissions: the code of tagged cells, read and never run here, graded as a `.py` is.

Unit tests of the reader (bad JSON, not a notebook, magics, tags, the cell a line came from), then
the same code graded from a `.py` file and from a notebook must score the same, check by check:
in single mode, in a batch (a notebook alone, in a folder, in a zip) and in the Gradescope layout.
Cell text and notebook names are the student's: a property test renders what they can reach in
every format and finds nothing active.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import EXERCISES, PROJECT
from hypothesis import given
from hypothesis import strategies as st

from graders.harness.core.errors import SubmissionFileError
from graders.harness.core.notebook import (
    MAX_NOTEBOOK_BYTES,
    NotebookSources,
    extract,
    new_notebook,
    parse_notebook,
)
from graders.harness.core.runner import grade

sys.path.insert(0, str(Path(__file__).parent / "hostile"))
import inert_check  # noqa: E402
from test_inert import NAME_BYTES, PROPERTY, TEXT  # noqa: E402

from graders.harness.core.bounds import bound_report  # noqa: E402
from graders.harness.core.models import CheckResult, ExerciseResult, Report  # noqa: E402

EX = "ex02_self_attention"
REF = {e: PROJECT.reference_path(e).read_text(encoding="utf-8") for e in EXERCISES}
MUTANT = (PROJECT.root / "tests" / "mutants" / EX / "no_scaling.py").read_text(encoding="utf-8")


def lesson(files: dict[str, str], tagged: bool = True, extra: list | None = None) -> str:
    """One notebook holding each exercise's code in a tagged cell (after a Markdown heading)."""
    cells = [("markdown", "# Lesson", [])]
    for exercise, code in files.items():
        cells += [("markdown", f"## {exercise}", []), ("code", code, [exercise] if tagged else [])]
    return new_notebook(cells + (extra or []))


def write(folder: Path, files: dict[str, str | bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        (folder / name).write_bytes(data)
    return folder


def origin(folder: Path, exercise: str = EX, ids=EXERCISES):
    return NotebookSources(folder, list(ids)).origin(exercise)


def fault(folder: Path, exercise: str = EX, ids=EXERCISES) -> str:
    found = origin(folder, exercise, ids)
    with pytest.raises(SubmissionFileError) as info:
        found.read()
    return info.value.text.en


def outcomes(report) -> dict:
    return {(e.id, c.id): (c.status, c.score, c.diagnosis) for e in report.exercises for c in e.checks}


# ---------------------------------------------------------------- reading a notebook


@pytest.mark.parametrize(
    "data, words",
    [
        (b'{"cells": [', "is not valid JSON (line 1, column 12"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (b'{"cells": []}', 'not a Jupyter notebook: no "nbformat" version'),
        (b"[1, 2]", "not a Jupyter notebook"),
        (b'{"nbformat": 9, "nbformat_minor": 0, "cells": []}', "unsupported format version 9"),
        (b'{"nbformat": 4, "nbformat_minor": 5, "cells": "x", "metadata": {}}', "does not follow the format"),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
        # valid JSON that Python refuses with a bare ValueError (before: "the grader itself failed",
        # and with --similarity a batch with no gradebook at all)
        (b'{"nbformat": 4, "metadata": {"n": ' + b"7" * 4400 + b"}}", "Exceeds the limit"),
    ],
)
def test_a_file_that_is_not_a_notebook_gets_a_message_naming_it(tmp_path, data, words):
    write(tmp_path, {"lesson.ipynb": data})
    message = fault(tmp_path)
    assert "lesson.ipynb" in message and words in message


def test_similarity_reads_a_notebook_python_refuses_as_no_code_not_a_crash(tmp_path):
    from graders.harness.batch.similarity import submission_code
    from graders.harness.core.intake import Entry

    write(tmp_path / "ann", {"lesson.ipynb": b'{"nbformat": 4, "metadata": {"n": ' + b"7" * 4400 + b"}}"})
    assert submission_code(Entry("ann", tmp_path / "ann", "dir"), EXERCISES, tmp_path / "work") == {}


def test_a_notebook_over_the_cap_is_refused_before_it_is_parsed(tmp_path):
    write(tmp_path, {"big.ipynb": b" " * (MAX_NOTEBOOK_BYTES + 1)})
    assert "larger than" in fault(tmp_path) and "big.ipynb" in fault(tmp_path)


def test_code_over_the_cap_is_refused_naming_notebook_and_exercise(tmp_path):
    from graders.harness.core.notebook import MAX_CODE_BYTES

    write(tmp_path, {"hw.ipynb": lesson({EX: "x = 1\n" * (MAX_CODE_BYTES // 6 + 1)})})
    message = fault(tmp_path)
    assert f"code of exercise {EX} in the notebook hw.ipynb is over {MAX_CODE_BYTES} bytes" in message


def test_magics_and_shell_lines_are_dropped_line_for_line_and_outputs_ignored():
    nb = json.loads(new_notebook([("code", "%%time\nx = 1", []), ("code", "import torch\n!pip install x\n"
                                  "for i in range(2):\n    %time y = i\nz = 3", [])]))  # fmt: skip
    nb["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "import os; BAD"}]
    parsed = parse_notebook(json.dumps(nb).encode(), "n.ipynb")
    code = extract(parsed, EX, parsed.code_cells())
    assert code.source.decode().splitlines()[:5] == [
        "import torch", "pass", "for i in range(2):", "    pass", "z = 3",
    ]  # fmt: skip
    assert code.cells == [2] and b"BAD" not in code.source and b"x = 1" not in code.source
    compile(code.source, "n", "exec")
    assert code.place(5) == "n.ipynb, cell 2, line 5"


def test_python_that_looks_like_a_magic_is_kept():
    source = 'x = ("%d"\n     % 3)\ns = """\n!not shell\n"""\nt = "a\u2028b"\n!ls'
    parsed = parse_notebook(new_notebook([("code", source, [])]).encode(), "n.ipynb")
    code = extract(parsed, EX, parsed.code_cells()).source.decode()
    assert code.split("\n")[:7] == [
        'x = ("%d"',
        "     % 3)",
        's = """',
        "!not shell",
        '"""',
        't = "a\u2028b"',
        "pass",
    ]
    compile(code, "n", "exec")


def test_tags_choose_the_cells_and_lines_are_named_by_cell(tmp_path):
    write(tmp_path, {"hw.ipynb": lesson({EX: "a = 1\nb = 2", "ex01_attention_by_hand": "c = 3"},
                                        extra=[("code", "junk(", [])])})  # fmt: skip
    code = origin(tmp_path)
    assert code.source.decode().split("\n")[:2] == ["a = 1", "b = 2"] and code.cells == [3]
    name = code.compile_name
    message = f'File "{name}", line 2, in f\nSyntaxError: invalid syntax ({name}, line 1)'
    assert code.translate(message) == (
        'File "hw.ipynb", cell 3, line 2, in f\nSyntaxError: invalid syntax (hw.ipynb, cell 3, line 1)'
    )


def test_a_notebook_that_tags_other_exercises_but_not_this_one_says_which_tag_to_add(tmp_path):
    write(tmp_path, {"hw.ipynb": lesson({"ex01_attention_by_hand": "c = 3"})})
    message = fault(tmp_path)
    assert "hw.ipynb has no code cell tagged ex02_self_attention" in message and "Tags" in message


def test_one_untagged_notebook_counts_for_every_exercise_and_a_named_one_for_its_own(tmp_path):
    write(tmp_path / "a", {"hw.ipynb": lesson({EX: "a = 1"}, tagged=False)})
    assert origin(tmp_path / "a").source.startswith(b"a = 1")
    assert origin(tmp_path / "a", "ex01_attention_by_hand").source.startswith(b"a = 1")
    write(tmp_path / "b", {f"{EX}.ipynb": lesson({EX: "b = 2"}, tagged=False), "other.ipynb": lesson({})})
    assert origin(tmp_path / "b").source.startswith(b"b = 2")


def test_a_py_file_wins_and_notebooks_do_not_stand_in_for_a_missing_one(tmp_path):
    write(tmp_path, {f"{EX}.py": "x = 1\n", "scratch.ipynb": lesson({"ex03": "y = 2"}, tagged=False)})
    assert origin(tmp_path) is None  # the .py file is read
    assert origin(tmp_path, "ex01_attention_by_hand") is None  # "ex01_attention_by_hand.py not found"


def test_an_exercise_tagged_in_two_notebooks_is_ambiguous(tmp_path):
    write(tmp_path, {"a.ipynb": lesson({EX: "a = 1"}), "b.ipynb": lesson({EX: "b = 2"})})
    assert "more than one notebook (a.ipynb, b.ipynb)" in fault(tmp_path)


# ---------------------------------------------------------------- the same score as a .py file


def test_notebook_scores_as_the_same_code_in_py_files_and_names_cells(tmp_path, pool):
    files = {**REF, EX: MUTANT}
    py = grade(PROJECT, write(tmp_path / "py", {f"{e}.py": c for e, c in files.items()}), seed=3, pool=pool)
    notebook = write(tmp_path / "nb", {"lesson.ipynb": lesson(files, extra=[("code", "%pip list", [])])})
    nb = grade(PROJECT, notebook, seed=3, pool=pool)
    assert outcomes(nb) == outcomes(py) and 0 < nb.score < nb.max_score
    broken = REF[EX].replace("def scaled_dot_product_attention(", "def _gone(", 1)
    broken += "\n\ndef scaled_dot_product_attention(q, k, v):\n    return q @ k.T\n"
    write(notebook, {"lesson.ipynb": lesson({EX: "%matplotlib inline\n" + broken})})
    check = grade(PROJECT, notebook, seed=3, pool=pool, exercises=[EX]).exercises[0].checks[0]
    last = len(broken.splitlines()) + 1  # the magic's line counts: lines are those of the cell
    assert f"lesson.ipynb, cell 3, line {last}: `return q @ k.T`" in check.message
    assert f'File "lesson.ipynb", cell 3, line {last}' in check.student_traceback
    assert "[" + EX + "]" not in check.message + check.student_traceback


def test_syntax_error_and_builtin_use_name_the_cell(tmp_path, pool):
    ex04 = "ex04_multi_head_attention"
    builtin = (PROJECT.root / "tests" / "mutants" / ex04 / "uses_builtin_attention.py").read_text()
    folder = write(tmp_path, {"hw.ipynb": lesson({EX: "x = (\n", ex04: builtin})})
    report = grade(PROJECT, folder, seed=3, pool=pool, exercises=[EX, ex04])
    assert "syntax error" in report.exercises[0].checks[0].message
    assert "(hw.ipynb, cell 3, line 1)" in report.exercises[0].checks[0].message
    by_hand = next(c for c in report.exercises[1].checks if c.diagnosis == "uses_builtin_attention")
    assert ", cell 5)" in by_hand.message


def test_grade_py_takes_a_notebook_path(tmp_path, capsys):
    from graders.harness.cli import main

    assert main([str(tmp_path / "nope.ipynb")]) == 2
    assert "nope.ipynb: no such notebook" in capsys.readouterr().err
    path = tmp_path / "mine.ipynb"
    path.write_text(lesson({EX: REF[EX]}), encoding="utf-8")
    out = tmp_path / "report.json"
    assert main([str(path), "--format", "json", "--out", str(out), "--exercise", EX, "--seed", "2"]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["score"] == report["max_score"] > 0 and report["submission"] == str(path)


# ---------------------------------------------------------------- batch and Gradescope


def notebook_zip(path: Path, name: str, text: str) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"homework/{name}", text)


@pytest.mark.slow
def test_batch_grades_notebooks_alone_in_folders_and_in_zips_as_py_files(tmp_path):
    subs = tmp_path / "subs"
    files = {EX: MUTANT}
    write(subs / "a_py", {f"{EX}.py": MUTANT})
    (subs / "b_alone.ipynb").write_text(lesson(files, tagged=False))
    write(subs / "c_folder", {"work.ipynb": lesson(files)})
    notebook_zip(subs / "d_zip.zip", f"{EX}.ipynb", lesson(files))
    (subs / "e_bad.ipynb").write_text("{not json")
    out = tmp_path / "out"
    cmd = [sys.executable, str(PROJECT.root / "grade.py"), "batch", str(subs), "--out", str(out),
           "--jobs", "1", "--seed", "5", "--lang", "en", "--exercise", EX]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    results = {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
    assert sorted(results) == ["a_py", "b_alone", "c_folder", "d_zip", "e_bad"]
    expected = outcomes_of(results["a_py"])
    assert 0 < results["a_py"]["score"] < results["a_py"]["max_score"]
    for student in ("b_alone", "c_folder", "d_zip"):
        assert results[student]["status"] == "graded" and outcomes_of(results[student]) == expected, student
    bad = results["e_bad"]["report"]["exercises"][0]["checks"][0]
    assert results["e_bad"]["score"] == 0 and "e_bad.ipynb is not valid JSON" in bad["message"]


def outcomes_of(result: dict) -> dict:
    return {(c["id"]): (c["status"], c["score"]) for e in result["report"]["exercises"] for c in e["checks"]}


@pytest.mark.slow
def test_gradescope_autograder_grades_a_notebook_upload(tmp_path):
    from test_gradescope_build import run_autograder, unpack_like_gradescope

    from graders.harness.cli import main

    dest = tmp_path / "build"
    assert main(["build", "gradescope", str(dest)]) == 0
    root = tmp_path / "root"
    unpack_like_gradescope(dest / "autograder.zip", root)
    (root / "submission" / "lesson.ipynb").write_text(lesson(REF))
    data = run_autograder(root)
    manifests = PROJECT.load_manifests()
    assert data["score"] == sum(m.max_score for m in manifests)
    assert all(test["status"] == "passed" for test in data["tests"])


# ---------------------------------------------------------------- student text stays inert


def raw_notebook(cells) -> str:
    """Notebook JSON as a student's tool might write it, valid or not (no validation on the way)."""
    return json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [
            {"cell_type": kind, "id": f"c{i}", "metadata": {"tags": tags}, "source": text,
             **({"outputs": [], "execution_count": None} if kind == "code" else {})}
            for i, (kind, text, tags) in enumerate(cells)
        ],
    })  # fmt: skip


CELLS = st.lists(
    st.tuples(
        st.sampled_from(["code", "markdown"]), TEXT, st.lists(st.sampled_from([EX, "x", ""]), max_size=2)
    ),
    max_size=4,
)


@PROPERTY
@given(st.one_of(CELLS.map(raw_notebook), TEXT), NAME_BYTES)
def test_what_a_notebook_can_put_in_a_report_is_inert_in_every_format(tmp_path_factory, text, name):
    folder = tmp_path_factory.mktemp("nb")
    path = folder / os.fsdecode(name[:200] + b".ipynb")
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    found = NotebookSources(folder, [EX]).origin(EX)  # never raises: a fault is kept for the checks
    try:
        source = found.read()
        lines = max(1, len(source.splitlines()))
        message = found.place(lines) + " " + found.translate(f'File "{found.compile_name}", line {lines}')
    except SubmissionFileError as exc:
        message = exc.text.en
    check = CheckResult(id="c", title="t", status="failed", score=0.0, max_score=1.0, message=message,
                        student_traceback=message)  # fmt: skip
    exercise = ExerciseResult(id=EX, title="t", score=0.0, max_score=1.0, checks=[check])
    report = Report(submission=str(path), score=0.0, max_score=1.0, seed=1, lang="en", exercises=[exercise])
    assert inert_check.problems(bound_report(report)) == []


# ---------------------------------------------------------------- `grade.py build student DIR --notebook`


@pytest.mark.slow
def test_built_notebooks_grade_themselves_full_marks_once_filled_with_the_reference(tmp_path):
    from graders.harness.cli import main

    dest = tmp_path / "student"
    assert main(["build", "student", str(dest), "--notebook", "--lang", "zh"]) == 0
    folder = dest / "notebooks"
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{e}.ipynb" for e in EXERCISES)
    for exercise in EXERCISES:
        path = folder / f"{exercise}.ipynb"
        nb = json.loads(path.read_text(encoding="utf-8"))
        statement = PROJECT.statement_path(exercise, "zh").read_text(encoding="utf-8").splitlines()[0]
        first = "".join(nb["cells"][0]["source"])
        assert first.startswith(statement + "\n") and nb["cells"][0]["cell_type"] == "markdown"
        tagged = [c for c in nb["cells"] if exercise in c["metadata"].get("tags", [])]
        assert len(tagged) == 1 and "".join(tagged[0]["source"]).strip() == (
            PROJECT.template_path(exercise).read_text(encoding="utf-8").strip()
        )
        last = "".join(nb["cells"][-1]["source"])  # the cell that grades the notebook, run as Jupyter would

        def run_last_cell(last=last) -> str:
            proc = subprocess.run(
                [sys.executable, "-c", last], cwd=folder, capture_output=True, text=True, timeout=300
            )
            assert proc.returncode == 0, proc.stderr
            return proc.stdout

        total = sum(c.points for c in PROJECT.load_manifest(exercise).checks if c.visibility == "visible")
        if exercise == EXERCISES[0]:  # the stub, once: every last cell is one template (GRADE_CELL)
            assert f"总分: {total:g} / {total:g}" not in run_last_cell()
        tagged[0]["source"] = REF[exercise]
        path.write_text(json.dumps(nb), encoding="utf-8")
        assert f"总分: {total:g} / {total:g}" in run_last_cell(), exercise
