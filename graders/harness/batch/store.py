"""The results folder of a batch, written so that an interrupted batch loses nothing.

Layout of RESULTS::

    batch.json               the batch's settings (seed, language, exercises) and the last run's figures
    results/<student>.json   one `SubmissionResult` per submission: present = finished
    <format>/<student>.json  the same result as Gradescope / PrairieLearn JSON (or .xml for JUnit)
    gradebook.csv, analytics.json, class_report.html
    logs/job-<n>.log         what each grading process wrote to stderr

Every file is written to a temporary name in the same folder and renamed over the final one
(`os.replace`), so a reader, or a batch killed at any instant, sees a whole file or none. The
per-format file is written before `results/<student>.json`, which marks the submission finished.
A lock file keeps two batches from writing the same folder at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from pathlib import Path

from pydantic import ValidationError

from ..formats import EXTENSIONS, RENDERERS
from ..formats.result import SubmissionResult

TMP_MARK = ".tmp-"
WORK_DIR = ".work"  # the jobs' temporary folders (their TMPDIR) while a batch runs


class StoreBusy(Exception):
    """Another batch holds the lock on this results folder."""


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file of a short name in the same folder (a long
    final name leaves no room for a longer temporary one: ENAMETOOLONG)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(os.fsencode(path.name)).hexdigest()[:16]
    tmp = path.with_name(f".{digest}{TMP_MARK}{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


class ResultStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.results_dir = root / "results"
        self._lock_fd: int | None = None

    # ------------------------------------------------------------ lifecycle

    def open(self) -> None:
        """Create the folders, take the lock, remove temporary files a killed batch left behind."""
        self.results_dir.mkdir(parents=True, exist_ok=True)
        (self.root / "logs").mkdir(exist_ok=True)
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreBusy(f"{self.root}: another batch is writing to this folder") from None
        self._lock_fd = fd
        for folder in [self.root, *(p for p in self.root.iterdir() if p.is_dir())]:
            for stale in folder.glob(f".*{TMP_MARK}*"):
                stale.unlink(missing_ok=True)
        shutil.rmtree(self.root / WORK_DIR, ignore_errors=True)  # jobs' files, if a batch was killed

    def close(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # ------------------------------------------------------------ results

    def result_path(self, student: str) -> Path:
        return self.results_dir / f"{student}.json"

    def format_path(self, student: str, fmt: str) -> Path:
        return self.root / fmt / f"{student}.{EXTENSIONS[fmt]}"

    def load(self, student: str) -> SubmissionResult | None:
        """The finished result of `student`, or None (absent or unreadable: grade it again)."""
        try:
            return SubmissionResult.model_validate_json(self.result_path(student).read_bytes())
        except (OSError, ValidationError, ValueError):
            return None

    def save(self, result: SubmissionResult, fmt: str) -> None:
        self.ensure_format(result, fmt)
        write_atomic(self.result_path(result.student), result.model_dump_json(indent=1) + "\n")

    def ensure_format(self, result: SubmissionResult, fmt: str) -> None:
        """Write the per-format file if missing (a resumed batch may ask for another format)."""
        if fmt in RENDERERS and not self.format_path(result.student, fmt).exists():
            write_atomic(self.format_path(result.student, fmt), RENDERERS[fmt](result))

    # ------------------------------------------------------------ batch settings

    def read_settings(self) -> dict | None:
        try:
            return json.loads((self.root / "batch.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def write_settings(self, data: dict) -> None:
        write_atomic(self.root / "batch.json", json.dumps(data, indent=2, ensure_ascii=False) + "\n")
