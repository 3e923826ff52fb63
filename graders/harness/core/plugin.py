"""The pytest plugin that turns grader tests into scored checks.

Each test in `graders/test_<exercise>.py` is marked `@check("<id>")` with an id declared in that
exercise's manifest; the manifest is the one source of points, titles and visibility. The plugin
provides the fixtures checks use (`student`, `reference`, `rng`, `evidence`), records each
check's outcome, and classifies it: `StudentFault` subclasses give `failed`, `timeout` or
`not_implemented`; anything else escaping a check is the grader's fault (`error`).
"""

from __future__ import annotations

import builtins
import hashlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from ..sandbox.client import SandboxPool
from .banned import BuiltByHand, source_text
from .diagnoses import COMMON_ERRORS
from .errors import (
    GraderFault,
    StudentCodeError,
    StudentCrash,
    StudentFault,
    StudentTimeout,
    SubmissionFileError,
)
from .i18n import Text, say
from .models import ExerciseManifest, Heatmap, StopKind
from .notebook import NotebookSources
from .project import Project
from .settings import Settings
from .source import read_module_source
from .student import StudentModule, StudentSession

EXCEPTION_GROUPS = (builtins.BaseExceptionGroup,) if hasattr(builtins, "BaseExceptionGroup") else ()  # 3.11+


def check(check_id: str):
    """Mark a grader test as the manifest check `check_id`."""
    return pytest.mark.check(check_id)


@dataclass
class Outcome:
    """What happened in one check, before it is rendered in a language."""

    status: str
    text: Text | None = None
    diagnosis: str | None = None
    diagnosis_params: dict = field(default_factory=dict)
    traceback: str = ""
    heatmaps: list[Heatmap] = field(default_factory=list)
    stopped: StopKind | None = None  # the check could not judge the code at all (see `Stopped`)


# the student's faults that stop a check from judging the code; any `error` (the grader's fault)
# does too, and `runner.build_report` says so from the check's status
STOPPED_BY: tuple[tuple[type[BaseException], StopKind], ...] = (
    (SubmissionFileError, "file"),
    (StudentCrash, "crash"),
    (StudentTimeout, "timeout"),
)


@dataclass
class GradingContext:
    """One submission being graded: where it is, with which settings, manifests and sandbox."""

    project: Project
    submission: Path
    manifests: dict[str, ExerciseManifest]
    settings: Settings
    pool: SandboxPool
    notebooks: NotebookSources | None = None  # where exercises come from notebooks (made on first use)


class Evidence:
    """Lets a check attach pictures (heatmaps) to its result."""

    def __init__(self) -> None:
        self.heatmaps: list[Heatmap] = []

    def heatmap(self, label: str, got: torch.Tensor, expected: torch.Tensor) -> None:
        if (
            isinstance(got, torch.Tensor)
            and got.dim() == 2
            and got.shape == expected.shape
            and got.numel() <= 400
        ):
            self.heatmaps.append(
                Heatmap(label=label, got=got.double().tolist(), expected=expected.double().tolist())
            )


def derive_seed(seed: int, *parts: str) -> int:
    digest = hashlib.sha256(":".join([str(seed), *parts]).encode()).digest()
    return int.from_bytes(digest[:8], "big") % (2**63)


def exercise_of(item: pytest.Item) -> str:
    return Path(str(item.path)).stem.removeprefix("test_")


EXERCISE = pytest.StashKey[str]()
CHECK_ID = pytest.StashKey["str | None"]()


def _exercise(item: pytest.Item) -> str:
    """`exercise_of(item)`, worked out once per item (a batch job runs each item per submission)."""
    if EXERCISE not in item.stash:
        item.stash[EXERCISE] = exercise_of(item)
    return item.stash[EXERCISE]


def _check_id(item: pytest.Item) -> str | None:
    """The id in the item's @check marker (None without one), looked up once per item."""
    if CHECK_ID not in item.stash:
        marker = item.get_closest_marker("check")
        item.stash[CHECK_ID] = marker.args[0] if marker and marker.args else None
    return item.stash[CHECK_ID]


class GradingPlugin:
    def __init__(self, ctx: GradingContext) -> None:
        self.ctx = ctx
        self.outcomes: dict[tuple[str, str], Outcome] = {}
        self.grader_problems: dict[str, Text] = {}
        self.session: StudentSession | None = None
        self._references: dict[str, object] = {}
        self._evidence: dict[str, Evidence] = {}
        self._item: pytest.Item | None = None  # the check being set up or run (see pytest_runtest_setup)

    def begin(self, ctx: GradingContext, grader_problems: dict[str, Text]) -> None:
        """Start grading another submission with the checks already collected (`SessionGrader`):
        a fresh state; the reference modules, trusted and unchanged, are kept."""
        if self.session is not None:
            self.session.close()
        self.ctx = ctx
        self.outcomes = {}
        self.grader_problems = dict(grader_problems)
        self.session = None
        self._evidence = {}

    # ------------------------------------------------------------ collection

    def pytest_configure(self, config: pytest.Config) -> None:
        config.addinivalue_line("markers", "check(id): the manifest check this test implements")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            exercise = Path(str(report.nodeid).split("::")[0]).stem.removeprefix("test_")
            detail = str(report.longrepr).strip().splitlines()[-1] if report.longrepr else "?"
            self.grader_problems[exercise] = say("run.grader_error", type="collection", message=detail[:500])

    def pytest_collection_modifyitems(self, session, config, items: list[pytest.Item]) -> None:
        keep, drop = [], []
        for item in items:
            manifest = self.ctx.manifests.get(exercise_of(item))
            marker = item.get_closest_marker("check")
            if manifest is None:
                drop.append(item)
                continue
            if marker is None or not marker.args:
                self.grader_problems[manifest.id] = say(
                    "run.grader_error", type="grader", message=f"{item.name} has no @check(id) marker"
                )
                drop.append(item)
                continue
            spec = next((c for c in manifest.checks if c.id == marker.args[0]), None)
            if spec is None:
                self.grader_problems[manifest.id] = say(
                    "run.grader_error",
                    type="grader",
                    message=f"{item.name}: check {marker.args[0]!r} is not in the manifest",
                )
                drop.append(item)
            elif not spec.runs(self.ctx.settings.run_hidden):
                drop.append(item)
            else:
                keep.append(item)
        items[:] = keep
        if drop:
            config.hook.pytest_deselected(items=drop)

    # ------------------------------------------------------------ fixtures

    def session_for(self, exercise_id: str) -> StudentSession:
        """The submission's session (one sandboxed worker for all its exercises), with this
        exercise's module declared in it."""
        if self.session is None:
            self.session = StudentSession(self.ctx.pool)
        if exercise_id not in self.session.slots:
            manifest = self.ctx.manifests[exercise_id]
            if self.ctx.notebooks is None:
                self.ctx.notebooks = NotebookSources(self.ctx.submission, list(self.ctx.manifests))
            self.session.add(
                exercise_id,
                self.ctx.submission / f"{exercise_id}.py",
                derive_seed(self.ctx.settings.seed, exercise_id, "worker"),
                call_seconds=self.ctx.settings.call_deadline(manifest),
                banned=manifest.banned,
                origin=self.ctx.notebooks.origin(exercise_id),  # None: the file `<id>.py`
            )
        return self.session

    # The fixtures are function-scoped: they serve the check being set up, which they take from
    # `self._item` rather than from pytest's `request` (a `request` argument costs pytest a
    # fixture definition, signature inspection included, per fixture and check).

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self._item = item

    @pytest.fixture
    def student(self) -> StudentModule:
        """The submission's module for this exercise, living in a sandboxed worker."""
        exercise_id = _exercise(self._item)
        return self.session_for(exercise_id).module(exercise_id)

    @pytest.fixture
    def student_source(self) -> str:
        """The submission file's text, read as bytes by this process for static checks (never run here)."""
        exercise_id = _exercise(self._item)
        slot = self.session_for(exercise_id).slots[exercise_id]
        return source_text(read_module_source(slot.path, slot.origin))

    @pytest.fixture
    def built_by_hand(self) -> BuiltByHand:
        """The exercise's "built by hand" rule (its manifest's `banned`) applied to this submission."""
        exercise_id = _exercise(self._item)
        session = self.session_for(exercise_id)
        slot = session.slots[exercise_id]
        return BuiltByHand(session.module(exercise_id), slot.path, list(slot.banned), slot.origin)

    @pytest.fixture
    def reference(self):
        """The hidden reference solution, imported in this (trusted) process."""
        exercise_id = _exercise(self._item)
        if exercise_id not in self._references:
            path = self.ctx.project.reference_path(exercise_id)
            spec = importlib.util.spec_from_file_location(f"_reference_{exercise_id}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self._references[exercise_id] = module
        return self._references[exercise_id]

    @pytest.fixture
    def rng(self) -> torch.Generator:
        """A generator seeded from the report's seed and this check's id (order-independent)."""
        item = self._item
        check_id = _check_id(item) or item.name
        return torch.Generator().manual_seed(derive_seed(self.ctx.settings.seed, _exercise(item), check_id))

    @pytest.fixture
    def evidence(self) -> Evidence:
        return self._evidence.setdefault(self._item.nodeid, Evidence())

    # ------------------------------------------------------------ outcomes

    @pytest.hookimpl(tryfirst=True, specname="pytest_runtest_makereport")
    def pytest_runtest_makereport_summary(
        self, item: pytest.Item, call: pytest.CallInfo
    ) -> pytest.TestReport | None:
        """pytest's own report of a failed check, without its traceback: `--tb=no` hides it, yet pytest
        still cut and filtered every frame (source read and parsed) for each failure: a fifth of the
        time a warm session took to grade the stub (0.27 s -> 0.22 s). The outcome is read from the
        exception itself (`pytest_runtest_makereport` below); a skip is left to pytest (its report
        names where)."""
        exc = call.excinfo.value if call.excinfo is not None else None
        if exc is None or isinstance(exc, (pytest.skip.Exception, *EXCEPTION_GROUPS)):
            return None
        summary = f"{type(exc).__name__}: {exc}"[:500]
        return pytest.TestReport(
            item.nodeid, item.location, {k: 1 for k in item.keywords}, "failed", summary, call.when, [],
            call.duration, call.start, call.stop, user_properties=item.user_properties,
        )  # fmt: skip

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        yield
        if call.when == "teardown" or (call.when == "setup" and call.excinfo is None):
            return
        key = (_exercise(item), _check_id(item))
        exc = call.excinfo.value if call.excinfo else None
        if isinstance(exc, StudentCodeError) and exc.diagnosis is None:
            # a mistake that makes the code raise (`k.T` on a batch) is named in every check it breaks
            # the exercise's own patterns first, and each wins over a common one of the same name
            known = getattr(item.module, "KNOWN_ERRORS", {})
            common = {name: pattern for name, pattern in COMMON_ERRORS.items() if name not in known}
            exc.diagnosis = exc.matching({**known, **common})
        outcome = self.classify(exc)
        outcome.stopped = next((kind for cls, kind in STOPPED_BY if isinstance(exc, cls)), None)
        ev = self._evidence.get(item.nodeid)
        if ev:
            outcome.heatmaps = ev.heatmaps
        self.outcomes[key] = outcome

    @staticmethod
    def classify(exc: BaseException | None) -> Outcome:
        if exc is None:
            return Outcome("passed")
        if isinstance(exc, StudentFault):
            tb = exc.student_traceback if isinstance(exc, StudentCodeError) else ""
            return Outcome(exc.status, exc.text, exc.diagnosis, exc.diagnosis_params, tb)
        if isinstance(exc, GraderFault):
            return Outcome("error", exc.text)
        if isinstance(exc, AssertionError):
            message = str(exc).strip() or "assertion failed"
            return Outcome("failed", Text(zh=message, en=message))
        if isinstance(exc, pytest.skip.Exception):
            return Outcome("error", say("run.grader_error", type="skip", message=str(exc)))
        if isinstance(exc, TypeError) and str(exc).endswith("object is not callable"):
            # the submission exported plain data where a function or class is due (`f = (1, 2)`)
            message = str(exc)[:500]
            return Outcome("failed", say("run.student_exception", type=type(exc).__name__, message=message))
        return Outcome("error", say("run.grader_error", type=type(exc).__name__, message=str(exc)[:500]))

    def pytest_sessionfinish(self, session) -> None:
        if self.session is not None:
            self.session.close()


def python_path_guard(submission: Path) -> None:
    """Refuse to grade if the submission folder is on this process's import path."""
    resolved = submission.resolve()
    for entry in sys.path:
        if entry and Path(entry).resolve() == resolved:
            raise RuntimeError(f"{submission} is on sys.path of the grader; refusing to grade")
