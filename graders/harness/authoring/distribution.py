"""Build the folders a course hands out: the student distribution and the autograder distribution.

    write_distribution(project, dest, "student")     statements, stubs, VISIBLE checks, the harness
    write_distribution(project, dest, "autograder")  everything an LMS needs to grade (all checks,
                                                     the reference solutions), without tests/

The student build must not leak what the hidden checks know. It ships no `reference/` folder; each
grader `graders/test_<id>.py` loses the test functions of its hidden checks (found with `ast` by
their `@check("<id>")` decorator) and every top-level name only those tests used (hidden inputs,
helpers), cut out by line range so comments and formatting survive; each `exercise.toml` loses
its hidden `[[checks]]` tables. The result is verified (parses, loads, names no hidden check id)
before it is written. `grade.py` in the student build finds no `reference/` folder, so it runs
visible checks only and its report says hidden checks run on submission
(`Project.runs_hidden`).

Other builders (a Gradescope zip, `authoring.gradescope_build`) start from `write_distribution` and add
their own files; `build.py` is the command that picks one.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path
from typing import Literal

import tomllib

from ..core.models import ExerciseManifest
from ..core.project import COURSE_FILE, Project
from .validate import check_id_of, static_problems

Kind = Literal["student", "autograder"]
KINDS: tuple[Kind, ...] = ("student", "autograder")
SKIP_NAMES = {"__pycache__", ".DS_Store", ".pytest_cache", ".ruff_cache"}
SKIP_SUFFIXES = {".pyc", ".pyo"}

STUDENT_README = """\
# {course_zh} · {course_en}

1. 阅读 `exercises/<id>/statement.zh.md`。Read `exercises/<id>/statement.en.md`.
2. 运行 `python grade.py`：第一次运行会根据 `student_template/` 创建 `submission/`。
   Run `python grade.py`: the first run creates `submission/` from `student_template/`.
3. 在 `submission/<id>.py` 中完成练习，再次运行 `python grade.py` 查看得分与反馈。
   Edit `submission/<id>.py`, then run `python grade.py` again for your score and feedback.

这里只有公开检查；隐藏检查在你提交后由课程平台运行。
Only the visible checks are here; hidden checks run when you submit.

## 安装 · Install (Python ≥ 3.10)

在一个虚拟环境中安装；先装 torch 的 CPU 版（约 200 MB，`pip install torch` 在 Linux 上默认装几 GB 的
CUDA 版，评分结果相同，只是大得多）。Install into a virtual environment, torch's CPU build first
(about 200 MB; a plain `pip install torch` on Linux gets the CUDA build, several GB, which grades the
same but is far larger):

```bash
python3 -m venv .venv
source .venv/bin/activate            # Windows: .venv\\Scripts\\activate
pip install torch --index-url https://download.pytorch.org/whl/cpu
pip install numpy pydantic jinja2 pytest markdown-it-py nbformat
```

macOS 和 Windows 上 `pip install torch` 本来就是 CPU 版。On macOS and Windows a plain
`pip install torch` is already the CPU build.
"""


class DistributionError(Exception):
    """The project cannot be built into a distribution; the message is one line naming the file."""


# ---------------------------------------------------------------- public entry point


def write_distribution(
    project: Project,
    dest: Path,
    kind: Kind,
    *,
    exercises: list[str] | None = None,
    notebooks: str | None = None,
) -> list[Path]:
    """Write the `kind` distribution of `project` into `dest` (absent or empty); return the files written.

    `exercises` limits the build to those ids (default: every exercise); `notebooks` (a language)
    also writes `notebooks/<id>.ipynb` for each (see `notebook.exercise_notebook`). Raises `DistributionError`
    (one line, naming the files at fault) when `dest` is not usable, a part of an exercise is
    missing or a hidden check cannot be removed cleanly; `ManifestError` for an invalid manifest.
    Nothing is written unless the whole build can be made.
    """
    if kind not in KINDS:
        raise DistributionError(f"unknown distribution {kind!r} (choose from {', '.join(KINDS)})")
    dest = Path(dest)
    _check_destination(project, dest)
    manifests = project.load_manifests(exercises)
    _check_parts(project, manifests, kind)
    files = _student_files(project, manifests) if kind == "student" else _autograder_files(project, manifests)
    if notebooks is not None:
        files |= _notebooks(project, manifests, notebooks)
    written = []
    for relative, content in files.items():
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copyfile(content, target)
            shutil.copymode(content, target)
        else:
            target.write_text(content, encoding="utf-8")
        written.append(target)
    return written


def _notebooks(project: Project, manifests: list[ExerciseManifest], lang: str) -> Files:
    from ..core.notebook import exercise_notebook

    return {
        Path("notebooks") / f"{m.id}.ipynb": exercise_notebook(
            project.statement_path(m.id, lang).read_text(encoding="utf-8"),
            project.template_path(m.id).read_text(encoding="utf-8"),
            m.id,
            lang,
        )
        for m in manifests
    }


def _check_parts(project: Project, manifests: list[ExerciseManifest], kind: Kind) -> None:
    missing = []
    for manifest in manifests:
        needed = [project.template_path(manifest.id), project.grader_path(manifest.id)]
        needed += _statements(project, manifest.id)
        if kind == "autograder":
            needed.append(project.reference_path(manifest.id))
        missing += [str(p.relative_to(project.root)) for p in needed if not p.is_file()]
    if not (project.root / "grade.py").is_file():
        missing.append("grade.py")
    if missing:
        raise DistributionError(f"cannot build the {kind} distribution, missing: {', '.join(missing)}")
    rejected = [f"{m.id}: {p.en}" for m in manifests for p in static_problems(project, m)]
    if rejected:
        raise DistributionError(
            f"cannot build the {kind} distribution: `grade.py validate` rejects it: {'; '.join(rejected)}"
        )


def _check_destination(project: Project, dest: Path) -> None:
    if dest.exists() and not dest.is_dir():
        raise DistributionError(f"{dest}: exists and is not a folder")
    if dest.is_dir() and any(dest.iterdir()):
        raise DistributionError(f"{dest}: folder is not empty (give a new or empty folder)")
    resolved, root = dest.resolve(), project.root.resolve()
    if resolved == root:
        raise DistributionError(f"{dest}: is the project itself")
    for source in ("exercises", "graders", "reference", "student_template"):
        if resolved.is_relative_to(root / source):
            raise DistributionError(f"{dest}: is inside the project's {source}/ folder")


# ---------------------------------------------------------------- what each build holds

Files = dict[Path, "Path | str"]


def _tree(root: Path, folder: str) -> Files:
    """Every regular file under `root/folder`, minus caches; keys relative to `root`."""
    out: Files = {}
    base = root / folder
    if not base.is_dir():
        return out
    for path in sorted(base.rglob("*")):
        relative = path.relative_to(root)
        if any(part in SKIP_NAMES for part in relative.parts) or path.suffix in SKIP_SUFFIXES:
            continue
        if path.is_file() and not path.is_symlink():
            out[relative] = path
    return out


def _common_files(project: Project, manifests: list[ExerciseManifest]) -> Files:
    root = project.root
    files: Files = {Path("grade.py"): root / "grade.py"}
    for name in ("pyproject.toml", COURSE_FILE):
        if (root / name).is_file():
            files[Path(name)] = root / name
    for manifest in manifests:
        for path in (project.template_path(manifest.id), *_statements(project, manifest.id)):
            files[path.relative_to(root)] = path
    return files


def _statements(project: Project, exercise_id: str) -> list[Path]:
    return [project.statement_path(exercise_id, lang) for lang in ("zh", "en")]


def _grader_support(project: Project) -> Files:
    """The harness and the graders' helper modules: everything in graders/ but the test files."""
    return {
        relative: path
        for relative, path in _tree(project.root, "graders").items()
        if not (len(relative.parts) == 2 and relative.name.startswith("test_"))
    }


def _autograder_files(project: Project, manifests: list[ExerciseManifest]) -> Files:
    files = _common_files(project, manifests) | _grader_support(project)
    if (project.root / "README.md").is_file():
        files[Path("README.md")] = project.root / "README.md"
    for manifest in manifests:
        for path in (
            project.manifest_path(manifest.id),
            project.reference_path(manifest.id),
            project.grader_path(manifest.id),
        ):
            files[path.relative_to(project.root)] = path
    return files


def _student_files(project: Project, manifests: list[ExerciseManifest]) -> Files:
    files = _common_files(project, manifests) | _grader_support(project)
    title = project.course().title
    files[Path("README.md")] = STUDENT_README.replace("{course_zh}", title.zh).replace(
        "{course_en}", title.en
    )
    for manifest in manifests:
        hidden = hidden_check_ids(manifest)
        manifest_path = project.manifest_path(manifest.id)
        files[manifest_path.relative_to(project.root)] = strip_hidden_manifest(manifest_path, hidden)
        grader = project.grader_path(manifest.id)
        files[grader.relative_to(project.root)] = strip_hidden_grader(grader, hidden)
    return files


def hidden_check_ids(manifest: ExerciseManifest) -> set[str]:
    return {c.id for c in manifest.checks if c.visibility == "hidden"}


# ---------------------------------------------------------------- removing hidden checks

_HEADER = re.compile(r"^\s*\[")


def strip_hidden_manifest(path: Path, hidden: set[str]) -> str:
    """The manifest's text without its hidden `[[checks]]` tables (other text kept as written)."""
    text = path.read_text(encoding="utf-8")
    if not hidden:
        return text
    blocks: list[list[str]] = [[]]
    for line in text.splitlines(keepends=True):
        if _HEADER.match(line):
            blocks.append([])
        blocks[-1].append(line)
    kept = []
    for block in blocks:
        if block and block[0].strip() == "[[checks]]":
            table = tomllib.loads("".join(block[1:]))
            if table.get("visibility") == "hidden":
                continue
        kept.append("".join(block))
    out = "".join(kept)
    data = tomllib.loads(out)
    ExerciseManifest.model_validate(data)
    left = hidden & {c["id"] for c in data.get("checks", [])}
    if left:
        raise DistributionError(f"{path}: could not remove hidden checks {sorted(left)}")
    return out


def _defined_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _used_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _span(node: ast.stmt, lines: list[str]) -> tuple[int, int]:
    """0-based [start, end) line range of a statement with its decorators and comments right above."""
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return start, node.end_lineno


def strip_hidden_grader(path: Path, hidden: set[str]) -> str:
    """The grader's text without the tests of hidden checks and the top-level names only they used."""
    text = path.read_text(encoding="utf-8")
    if not hidden:
        return text
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise DistributionError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    body = list(tree.body)
    removed = [n for n in body if any(check_id_of(d) in hidden for d in getattr(n, "decorator_list", []))]
    kept = [n for n in body if n not in removed]
    # Drop top-level definitions that only the removed tests needed, until nothing more goes.
    candidates = set().union(*(_used_names(n) for n in removed)) if removed else set()
    while candidates:
        still_used = set().union(*(_used_names(n) for n in kept)) if kept else set()
        dead = [
            n
            for n in kept
            if (names := _defined_names(n))
            and names <= candidates
            and not names & still_used
            and not any(name.startswith("test_") for name in names)
        ]
        if not dead:
            break
        removed += dead
        kept = [n for n in kept if n not in dead]
        candidates = set().union(*(_used_names(n) for n in dead))
    lines = text.splitlines(keepends=True)
    drop = set()
    for node in removed:
        start, end = _span(node, lines)
        drop.update(range(start, end))
    out = "".join(line for i, line in enumerate(lines) if i not in drop)
    out = re.sub(r"\n{4,}", "\n\n\n", out)
    _verify_stripped(path, out, hidden)
    return out


def _verify_stripped(path: Path, text: str, hidden: set[str]) -> None:
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:  # pragma: no cover - removing whole statements keeps valid syntax
        raise DistributionError(f"{path}: stripped grader does not parse: {exc.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in hidden:
            raise DistributionError(
                f"{path}:{node.lineno}: hidden check id {node.value!r} is still used outside its own test"
            )
    for number, line in enumerate(text.splitlines(), 1):
        for check_id in hidden:
            if re.search(rf"(?<![A-Za-z0-9_])(?:test_)?{re.escape(check_id)}(?![A-Za-z0-9_])", line):
                raise DistributionError(f"{path}:{number}: names hidden check {check_id!r} outside its test")
