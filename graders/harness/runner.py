"""Grade one submission: run the exercises' pytest graders in this process, build the `Report`.

The submission folder is only ever read as bytes by `StudentSession`; it is never put on
`sys.path` and pytest never runs inside it. A `SandboxPool` may be passed in and reused across
submissions (batch grading): each submission still gets its own fresh worker.
"""

from __future__ import annotations

import contextlib
import io
import secrets
from pathlib import Path

import pytest

from .i18n import Lang, Text, say
from .models import CheckResult, ExerciseManifest, ExerciseResult, Report
from .plugin import GradingContext, GradingPlugin, Outcome, python_path_guard
from .project import Project
from .sandbox.client import SandboxPool, weakest_level

INI = Path(__file__).with_name("pytest_grading.ini")


def new_seed() -> int:
    return secrets.randbelow(2**31)


def render_check(manifest: ExerciseManifest, check_id: str, outcome: Outcome, lang: Lang) -> CheckResult:
    spec = manifest.check(check_id)
    diagnosis_message = None
    if outcome.diagnosis:
        diag = manifest.diagnoses.get(outcome.diagnosis)
        if diag is None:
            outcome = Outcome(
                "error", say("grader_error", type="grader", message=f"undeclared diagnosis {outcome.diagnosis!r}")
            )
        else:
            try:
                text = diag.message.format(**outcome.diagnosis_params)
            except (KeyError, IndexError, ValueError):
                text = diag.message
            if diag.section is not None:
                text = text + say("see_statement", section=diag.section(lang))
            diagnosis_message = text(lang)
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
        visibility=spec.visibility,
        student_traceback=outcome.traceback,
        heatmaps=outcome.heatmaps,
    )


def grade(
    project: Project,
    submission: Path,
    *,
    seed: int | None = None,
    lang: Lang = "en",
    exercises: list[str] | None = None,
    pool: SandboxPool | None = None,
    run_hidden: bool = True,
) -> Report:
    """Grade `submission` (a folder of `<exercise>.py` files) and return the report."""
    submission = Path(submission)
    python_path_guard(submission)
    manifests = project.load_manifests(exercises)
    seed = new_seed() if seed is None else seed
    own_pool = pool is None
    pool = pool or SandboxPool()
    ctx = GradingContext(project, submission, {m.id: m for m in manifests}, seed, pool, run_hidden)
    plugin = GradingPlugin(ctx)
    paths = [str(project.grader_path(m.id)) for m in manifests if project.grader_path(m.id).is_file()]
    args = [*paths, "-q", "--no-header", "-c", str(INI), "--rootdir", str(project.root / "graders")]
    log = io.StringIO()
    try:
        if paths:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                pytest.main(args, plugins=[plugin])
        return build_report(ctx, plugin, manifests, lang)
    finally:
        if plugin.session is not None:
            plugin.session.close()
        if own_pool:
            pool.close()


def build_report(ctx: GradingContext, plugin: GradingPlugin, manifests: list[ExerciseManifest], lang: Lang) -> Report:
    exercises, isolation = [], set()
    for manifest in manifests:
        checks = []
        for spec in manifest.checks:
            if spec.visibility == "hidden" and not ctx.run_hidden:
                continue
            outcome = plugin.outcomes.get((manifest.id, spec.id))
            if outcome is None:
                problem = plugin.grader_problems.get(manifest.id) or say(
                    "grader_error", type="grader", message=f"no test implements check {spec.id!r}"
                )
                outcome = Outcome("error", problem)
            checks.append(render_check(manifest, spec.id, outcome, lang))
        session = plugin.session
        printed, dropped = session.printed(manifest.id) if session else ("", 0)
        exercises.append(
            ExerciseResult(
                id=manifest.id,
                title=manifest.title(lang),
                score=sum(c.score for c in checks),
                max_score=sum(c.max_score for c in checks),
                checks=checks,
                output=printed,
                output_dropped=dropped,
            )
        )
    if plugin.session is not None:
        isolation.update(plugin.session.protections)
    return Report(
        submission=str(ctx.submission),
        score=sum(e.score for e in exercises),
        max_score=sum(e.max_score for e in exercises),
        seed=ctx.seed,
        lang=lang,
        isolation=sorted(isolation),
        isolation_level=weakest_level([sorted(isolation)] if isolation else []),
        hidden_checks_skipped=not ctx.run_hidden,
        exercises=exercises,
    )


__all__ = ["grade", "new_seed", "Text"]
