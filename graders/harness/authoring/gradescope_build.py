"""`grade.py build gradescope DIR`: a ready Gradescope autograder zip, made from the autograder build.

The zip holds, at its root, what Gradescope requires (`setup.sh`, `run_autograder`) and the whole
autograder distribution (`write_distribution(..., "autograder")`: grade.py, the harness, every
grader with its hidden checks, the reference solutions, manifests and statements). Gradescope
unpacks it into /autograder/source, runs `setup.sh` once when it builds the image, then
`run_autograder` for each submission, which grades /autograder/submission into
/autograder/results/results.json through `batch/autograder.py`. Entries have fixed timestamps and
modes, so the same project always gives the same zip.
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path

import tomllib

from ..core.project import Project
from .distribution import DistributionError, write_distribution

ZIP_NAME = "autograder.zip"
DEFAULT_REQUIREMENTS = [
    "torch>=2.1", "numpy>=1.24", "pydantic>=2.5", "jinja2>=3.1", "pytest>=8.4", "markdown-it-py>=3",
    "nbformat>=5.7", 'pyseccomp>=0.1.2; sys_platform == "linux"',
]  # fmt: skip
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
EPOCH = (1980, 1, 1, 0, 0, 0)

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image: install Python and the
# grader's dependencies into a virtual environment that run_autograder uses.
set -euo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
if ! command -v python3 >/dev/null || ! python3 -m venv --help >/dev/null 2>&1; then
    apt-get update
    apt-get install -y --no-install-recommends python3 python3-venv python3-pip
fi
python3 -m venv "$ROOT/venv"
PIP=("$ROOT/venv/bin/python" -m pip install --no-cache-dir)
"${{PIP[@]}}" --upgrade pip
# torch's CPU build first (about 200 MB; a plain `pip install torch` takes the CUDA build, several
# GB, which grades the same but makes the image slow to build); if that index cannot be reached,
# the default build.
"${{PIP[@]}}" --index-url "${{TORCH_INDEX:-{cpu_index}}}" torch || "${{PIP[@]}}" torch
"${{PIP[@]}}" {requirements}
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission: grade $ROOT/submission into $ROOT/results/results.json.
# ROOT is $AUTOGRADER_ROOT, else /autograder (the project's tests run it in a temporary folder laid
# out the same way). The interpreter is $AUTOGRADER_PYTHON, else the venv made by setup.sh, else
# python3. Feedback language: $GRADE_LANG (en or zh), English by default.
set -u
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-}"
if [ -z "$PYTHON" ]; then
    if [ -x "$ROOT/venv/bin/python" ]; then PYTHON="$ROOT/venv/bin/python"; else PYTHON=python3; fi
fi
mkdir -p "$ROOT/results"
cd "$ROOT/source" || exit 1
exec "$PYTHON" -m graders.harness.batch.autograder --root "$ROOT"
"""


def requirements(project: Project) -> list[str]:
    """The project's runtime dependencies (pyproject.toml), or the harness's own list."""
    try:
        data = tomllib.loads((project.root / "pyproject.toml").read_text(encoding="utf-8"))
        deps = data["project"]["dependencies"]
        if isinstance(deps, list) and all(isinstance(d, str) for d in deps) and deps:
            return deps
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        pass
    return DEFAULT_REQUIREMENTS


def _add(zf: zipfile.ZipFile, name: str, data: bytes, mode: int) -> None:
    info = zipfile.ZipInfo(name, date_time=EPOCH)
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


def write_gradescope_zip(project: Project, dest: Path, exercises: list[str] | None = None) -> list[Path]:
    """Write `dest/autograder.zip` (dest: a new or empty folder); return [that path]."""
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise DistributionError(f"{dest}: give a new or empty folder")
    quoted = " ".join("'" + r.replace("'", "") + "'" for r in requirements(project))
    with tempfile.TemporaryDirectory(prefix="gradescope-build-") as tmp:
        source = Path(tmp) / "source"
        write_distribution(project, source, "autograder", exercises=exercises)
        dest.mkdir(parents=True, exist_ok=True)
        target = dest / ZIP_NAME
        with zipfile.ZipFile(target, "w") as zf:
            _add(
                zf,
                "setup.sh",
                SETUP_SH.format(requirements=quoted, cpu_index=CPU_TORCH_INDEX).encode(),
                0o755,
            )
            _add(zf, "run_autograder", RUN_AUTOGRADER.encode(), 0o755)
            for path in sorted(p for p in source.rglob("*") if p.is_file()):
                mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
                _add(zf, path.relative_to(source).as_posix(), path.read_bytes(), mode)
    return [target]
