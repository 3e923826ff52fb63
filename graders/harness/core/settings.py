"""What a command line decides about grading, in one frozen object built once and passed down.

`Settings.from_args` reads it from the parsed arguments of any grading command (`grade.py`,
`batch`); the runner, the grading plugin, a batch and its job processes all take this object
rather than their own copies of the seed, the language or the exercises. A batch stores it in
`batch.json` (`as_dict`) and reads it back when it resumes (`from_dict`).
"""

from __future__ import annotations

import argparse
import dataclasses
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .i18n import Lang, default_lang

if TYPE_CHECKING:
    from .models import ExerciseManifest
    from .project import Project


def new_seed() -> int:
    return secrets.randbelow(2**31)


@dataclass(frozen=True)
class Settings:
    seed: int = 0
    lang: Lang = "en"
    exercises: list[str] | None = None  # None: every exercise of the project
    call_seconds: float | None = None  # caps every exercise's own call deadline (`batch --call-seconds`)
    run_hidden: bool = True  # False in a student build: its hidden checks are not run

    @classmethod
    def from_args(cls, args: argparse.Namespace, project: Project) -> Settings:
        """The settings `args` ask for: a new random seed without `--seed`, the locale's language
        without `--lang`, hidden checks where the project has them."""
        return cls(
            seed=new_seed() if args.seed is None else args.seed,
            lang=args.lang or default_lang(),
            exercises=args.exercise,
            call_seconds=getattr(args, "call_seconds", None),
            run_hidden=project.runs_hidden,
        )

    @classmethod
    def from_dict(cls, data: dict) -> Settings:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def but(self, **changes) -> Settings:
        """These settings with `changes` (a batch job grades every submission with the batch's)."""
        return dataclasses.replace(self, **changes)

    def call_deadline(self, manifest: ExerciseManifest) -> float:
        """The deadline of one call into the student's code of `manifest`'s exercise."""
        if self.call_seconds is None:
            return manifest.call_seconds
        return min(manifest.call_seconds, self.call_seconds)
