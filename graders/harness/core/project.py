"""Where things live in a course project, and loading its exercise manifests.

A project root holds `exercises/<id>/exercise.toml`, `student_template/<id>.py`,
`reference/<id>.py` and `graders/test_<id>.py`. A bad manifest gives one line per problem, each
naming the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tomllib
from pydantic import ValidationError

from .models import GENERIC_COURSE, Course, ExerciseManifest

COURSE_FILE = "course.toml"


class UsageError(Exception):
    """Bad input from the command line: printed as one line, exit status 2."""


class ManifestError(Exception):
    """One or more manifests are invalid; `lines` has one line per problem."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass(frozen=True)
class Project:
    root: Path

    @property
    def exercises_dir(self) -> Path:
        return self.root / "exercises"

    def manifest_path(self, exercise_id: str) -> Path:
        return self.exercises_dir / exercise_id / "exercise.toml"

    def statement_path(self, exercise_id: str, lang: str) -> Path:
        return self.exercises_dir / exercise_id / f"statement.{lang}.md"

    def template_path(self, exercise_id: str) -> Path:
        return self.root / "student_template" / f"{exercise_id}.py"

    def reference_path(self, exercise_id: str) -> Path:
        return self.root / "reference" / f"{exercise_id}.py"

    def grader_path(self, exercise_id: str) -> Path:
        return self.root / "graders" / f"test_{exercise_id}.py"

    def exercise_ids(self) -> list[str]:
        if not self.exercises_dir.is_dir():
            return []
        return sorted(p.parent.name for p in self.exercises_dir.glob("*/exercise.toml"))

    def load_manifest(self, exercise_id: str) -> ExerciseManifest:
        path = self.manifest_path(exercise_id)
        manifest = self._load(path, ExerciseManifest)
        if manifest.id != exercise_id:
            raise ManifestError(
                [f"{self._shown(path)}: id: is {manifest.id!r} but the folder is named {exercise_id!r}"]
            )
        return manifest

    @property
    def runs_hidden(self) -> bool:
        """Hidden checks run wherever the reference solutions are present (not in the student build)."""
        return (self.root / "reference").is_dir()

    def course(self) -> Course:
        """The course (`course.toml`); a project without one is a generic course."""
        path = self.root / COURSE_FILE
        return self._load(path, Course) if path.is_file() else GENERIC_COURSE

    def _shown(self, path: Path) -> Path:
        return path.relative_to(self.root) if path.is_relative_to(self.root) else path

    def _load(self, path: Path, model):
        """`path` (TOML) validated as `model`; every problem one line naming the file and field."""
        shown = self._shown(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ManifestError([f"{shown}: file not found"]) from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ManifestError([f"{shown}: not valid TOML: {exc}"]) from None
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            lines = []
            for err in exc.errors():
                where = ".".join(str(p) for p in err["loc"]) or "(top level)"
                lines.append(f"{shown}: {where}: {err['msg']}")
            raise ManifestError(lines) from None

    def load_manifests(self, only: list[str] | None = None) -> list[ExerciseManifest]:
        """All manifests (or those in `only`), in exercise order; every problem reported at once."""
        ids = self.exercise_ids()
        if only:
            unknown = [i for i in only if i not in ids]
            if unknown:
                raise ManifestError([f"unknown exercise {i!r} (known: {', '.join(ids)})" for i in unknown])
            ids = [i for i in ids if i in only]
        manifests, lines = [], []
        for exercise_id in ids:
            try:
                manifests.append(self.load_manifest(exercise_id))
            except ManifestError as exc:
                lines += exc.lines
        if lines:
            raise ManifestError(lines)
        return sorted(manifests, key=lambda m: (m.order, m.id))


def default_project() -> Project:
    return Project(Path(__file__).resolve().parents[3])
