"""Grade one submission: run the exercises' pytest graders in this process, build the `Report`.

The submission folder is only ever read as bytes by `StudentSession`; it is never put on
`sys.path` and pytest never runs inside it. A `SandboxPool` may be passed in and reused across
submissions (batch grading): each submission still gets its own fresh worker.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from pathlib import Path

import pytest

from ..sandbox.client import SandboxPool, weakest_level
from .bounds import bound_report
from .diagnoses import lookup
from .i18n import Lang, Text, say
from .models import Cause, CheckResult, ExerciseManifest, ExerciseResult, Report, Stopped
from .plugin import GradingContext, GradingPlugin, Outcome, exercise_of, python_path_guard
from .project import Project
from .settings import Settings, new_seed

INI = Path(__file__).with_name("pytest_grading.ini")


def render_check(manifest: ExerciseManifest, check_id: str, outcome: Outcome, lang: Lang) -> CheckResult:
    spec = manifest.check(check_id)
    diagnosis_message = section = None
    if outcome.diagnosis:
        diag = lookup(manifest.diagnoses, outcome.diagnosis)
        if diag is None:
            outcome = Outcome(
                "error",
                say("run.grader_error", type="grader", message=f"undeclared diagnosis {outcome.diagnosis!r}"),
            )
        else:
            try:
                text = diag.message.format(**outcome.diagnosis_params)
            except (KeyError, IndexError, ValueError):
                text = diag.message
            diagnosis_message = text(lang)
            section = diag.section(lang) if diag.section is not None else None
    passed = outcome.status == "passed"
    return CheckResult(
        id=spec.id,
        title=spec.title(lang),
        status=outcome.status,
        score=spec.points if passed else 0.0,
        max_score=spec.points,
        message=outcome.text(lang) if outcome.text else "",
        diagnosis=outcome.diagnosis if diagnosis_message else None,
        diagnosis_message=diagnosis_message,
        section=section,
        visibility=spec.visibility,
        student_traceback=outcome.traceback,
        heatmaps=outcome.heatmaps,
    )


def pytest_args(project: Project, manifests: list[ExerciseManifest]) -> list[str]:
    """pytest's command line for the graders of `manifests` (empty when none has a grader file)."""
    paths = [str(project.grader_path(m.id)) for m in manifests if project.grader_path(m.id).is_file()]
    if not paths:
        return []
    return [*paths, "-q", "--no-header", "-c", str(INI), "--rootdir", str(project.root / "graders")]


def grade(
    project: Project,
    submission: Path,
    *,
    seed: int | None = None,
    lang: Lang = "en",
    exercises: list[str] | None = None,
    pool: SandboxPool | None = None,
    run_hidden: bool = True,
    progress: object | None = None,
    settings: Settings | None = None,
) -> Report:
    """Grade `submission` (a folder of `<exercise>.py` files) and return the report. `progress`, a
    pytest plugin such as `progress.CheckProgress`, is told about each check as it starts.
    `settings` (a command line's) stand for `seed`, `lang`, `exercises` and `run_hidden`."""
    if settings is None:
        seed = new_seed() if seed is None else seed
        settings = Settings(seed=seed, lang=lang, exercises=exercises, run_hidden=run_hidden)
    submission = Path(submission)
    python_path_guard(submission)
    manifests = project.load_manifests(settings.exercises)
    own_pool = pool is None
    pool = pool or SandboxPool()
    ctx = GradingContext(project, submission, {m.id: m for m in manifests}, settings, pool)
    plugin = GradingPlugin(ctx)
    args = pytest_args(project, manifests)
    log = io.StringIO()
    try:
        if args:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                status = pytest.main(args, plugins=[plugin, *([progress] if progress else [])])
            if status == pytest.ExitCode.INTERRUPTED:  # pytest caught Ctrl-C: no report of half a run
                raise KeyboardInterrupt
        if plugin.session is not None:  # its worker is taken apart while the report is built
            plugin.session.close()
        return build_report(ctx, plugin, manifests)
    finally:
        if plugin.session is not None:
            plugin.session.close()
        if own_pool:
            pool.close()


class SessionGrader:
    """Grades submission after submission inside ONE pytest session (a batch job's trusted process).

    `pytest.main` per submission spends ~35 ms configuring pytest, registering plugins and
    collecting the graders: a third of the trusted process's own time on a full submission. Here
    that is done once: `run(feed)` starts pytest, and its `pytest_runtestloop` calls `feed(grade)`;
    each `grade(submission, seed=, lang=)` runs the collected checks once more with a fresh
    `GradingPlugin` state, and the last check's teardown tears every fixture down, so each
    submission starts from what a fresh `grade()` starts from (tests/test_batch.py compares the two
    reports). What stays: the imported grader and reference modules (trusted code). The graders are
    collected for the manifests read when `run` starts: `stale()` says when they have changed since.
    """

    def __init__(
        self,
        project: Project,
        *,
        pool: SandboxPool,
        exercises: list[str] | None = None,
        run_hidden: bool = True,
        settings: Settings | None = None,
    ) -> None:
        """`settings` (a command line's) stand for `exercises` and `run_hidden`; each submission's
        seed and language are those `grade` is given."""
        self.project = project
        self.pool = pool
        self.settings = settings or Settings(exercises=exercises, run_hidden=run_hidden)
        self.manifests = project.load_manifests(self.settings.exercises)
        ctx = GradingContext(project, Path(), {m.id: m for m in self.manifests}, self.settings, pool)
        self.plugin = GradingPlugin(ctx)
        self._items: list[pytest.Item] = []
        self._collection_failed = False
        self._problems: dict[str, Text] = {}
        self._log = io.StringIO()
        self._broken = False

    def stale(self) -> bool:
        """Must the next submission go to a new session? Yes when the manifests have changed since
        the graders were collected, or when pytest itself failed mid-run (its state is unknown)."""
        return self._broken or self.project.load_manifests(self.settings.exercises) != self.manifests

    def run(self, feed: Callable[[Callable[..., Report]], None]) -> None:
        """Run `feed(self.grade)` inside the pytest session; exceptions from `feed` propagate."""
        args = pytest_args(self.project, self.manifests)
        if not args:
            feed(self.grade)
            return
        loop = _FeedLoop(self, feed)
        with contextlib.redirect_stdout(self._log), contextlib.redirect_stderr(self._log):
            pytest.main(args, plugins=[self.plugin, loop])
        if loop.error is not None:
            raise loop.error
        if not loop.called:
            raise RuntimeError(f"pytest stopped before grading: {self._log.getvalue()[-500:]}")

    def _collected(self, session: pytest.Session) -> None:
        self._items = list(session.items)
        self._collection_failed = bool(session.testsfailed)  # pytest.main would run no check at all
        self._problems = dict(self.plugin.grader_problems)
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:  # its per-check progress goes to a discarded log: skip its hooks
            session.config.pluginmanager.unregister(reporter)

    def _run_items(self, only: set[str] | None = None) -> None:
        items = [i for i in self._items if only is None or exercise_of(i) in only]
        try:
            for i, item in enumerate(items):  # as pytest's own loop: the last item tears every fixture down
                nextitem = items[i + 1] if i + 1 < len(items) else None
                getattr(item, "_report_sections", []).clear()  # captured output of the last submission
                item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        except BaseException:
            self._broken = True
            raise

    def grade(
        self, submission: Path, *, seed: int, lang: Lang = "en", only: set[str] | None = None
    ) -> Report:
        """Grade one submission with the collected checks (those of the exercises in `only`, when
        given: `--watch` regrades the exercise whose file was saved); valid only inside `run`."""
        submission = Path(submission)
        python_path_guard(submission)
        chosen = [m for m in self.manifests if only is None or m.id in only]
        manifests = {m.id: m for m in chosen}
        settings = self.settings.but(seed=seed, lang=lang)
        ctx = GradingContext(self.project, submission, manifests, settings, self.pool)
        self.plugin.begin(ctx, self._problems)
        try:
            with contextlib.redirect_stdout(self._log), contextlib.redirect_stderr(self._log):
                if not self._collection_failed:
                    self._run_items(only)
            if self.plugin.session is not None:  # its worker is taken apart while the report is built
                self.plugin.session.close()
            return build_report(ctx, self.plugin, chosen)
        finally:
            if self.plugin.session is not None:
                self.plugin.session.close()
            self._log.seek(0)
            self._log.truncate()


class _FeedLoop:
    """Takes over pytest's run-test loop: hands the collected checks to `SessionGrader.grade`."""

    def __init__(self, grader: SessionGrader, feed: Callable[[Callable[..., Report]], None]) -> None:
        self.grader = grader
        self.feed = feed
        self.called = False
        self.error: BaseException | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        self.called = True
        self.grader._collected(session)
        try:
            self.feed(self.grader.grade)
        except BaseException as exc:  # re-raised by `run`, after pytest has closed its session
            self.error = exc
        return True


def causes_of(checks: list[CheckResult]) -> list[Cause]:
    """The failed checks grouped by their diagnosis, in the order the first of each appears."""
    groups: dict[str, list[CheckResult]] = {}
    for check in checks:
        if check.status != "passed" and check.diagnosis:
            groups.setdefault(check.diagnosis, []).append(check)
    return [
        Cause(
            diagnosis=diagnosis,
            message=group[0].diagnosis_message or "",
            section=group[0].section,
            checks=[c.id for c in group],
            points=sum(c.max_score - c.score for c in group),
        )  # fmt: skip
        for diagnosis, group in groups.items()
    ]


def build_report(ctx: GradingContext, plugin: GradingPlugin, manifests: list[ExerciseManifest]) -> Report:
    lang, run_hidden = ctx.settings.lang, ctx.settings.run_hidden
    exercises, isolation = [], set()
    for manifest in manifests:
        checks, stopped = [], None
        for spec in manifest.graded_checks(run_hidden):
            outcome = plugin.outcomes.get((manifest.id, spec.id))
            if outcome is None:
                problem = plugin.grader_problems.get(manifest.id) or say(
                    "run.grader_error", type="grader", message=f"no test implements check {spec.id!r}"
                )
                outcome = Outcome("error", problem)
            checks.append(render_check(manifest, spec.id, outcome, lang))
            kind = "grader" if checks[-1].status == "error" else outcome.stopped
            if stopped is None and kind is not None:
                stopped = Stopped(kind=kind, check=spec.id, message=checks[-1].message)
        session = plugin.session
        printed, dropped = session.printed(manifest.id) if session else ("", 0)
        exercises.append(
            ExerciseResult(
                id=manifest.id,
                title=manifest.title(lang),
                score=sum(c.score for c in checks),
                max_score=sum(c.max_score for c in checks),
                checks=checks,
                causes=causes_of(checks),
                output=printed,
                output_dropped=dropped,
                stopped=stopped,
            )
        )
    if plugin.session is not None:
        isolation.update(plugin.session.protections)
    return bound_report(Report(
        submission=str(ctx.submission),
        score=sum(e.score for e in exercises),
        max_score=sum(e.max_score for e in exercises),
        seed=ctx.settings.seed,
        lang=lang,
        isolation=sorted(isolation),
        isolation_level=weakest_level([sorted(isolation)] if isolation else []),
        hidden_checks_skipped=not run_hidden,
        exercises=exercises,
    ))  # fmt: skip


__all__ = ["grade", "new_seed", "SessionGrader", "Text"]
