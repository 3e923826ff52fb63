"""Wall-clock budgets: per submission and per exercise, on top of each call's own deadline.

A call's deadline alone bounds nothing: a submission that sleeps just under it on every request
passes every check, slowly (134 s for exercise 1 alone), and an endless loop costs one full
deadline per check that calls it. So every request into a submission's worker is charged, wall time
from send to reply, to its exercise and to the whole submission, and runs under the smallest of
three: its call deadline, what is left of the exercise's budget, what is left of the submission's.
Once either budget is spent, the exercise's remaining requests fail at once ("timeout"); once a
call into a piece of the submission's code (a function or class, named by the top-level name the
check reached it through) has timed out, later checks calling that same code are not run at all.

Only the time spent waiting for the submission is charged: the grader's own work never costs the
student anything.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from .errors import StudentTimeout
from .i18n import say

EXERCISE_FACTOR = 2.0  # an exercise's default budget, in call deadlines: one timeout, then as much again
_ROOT = re.compile(r"[.(\[]")


def code_of(label: str) -> str:
    """The top-level name of the submission's code a request reaches (`layer.forward` -> `layer`)."""
    return _ROOT.split(label, maxsplit=1)[0]


@dataclass
class ExerciseClock:
    seconds: float
    spent: float = 0.0
    timed_out: set[str] = field(default_factory=set)  # codes whose call timed out


@dataclass
class SubmissionClock:
    """The budgets of one submission: `seconds` in all (None: only the exercises' own)."""

    seconds: float | None = None
    spent: float = 0.0
    exercises: dict[str, ExerciseClock] = field(default_factory=dict)

    def add(self, exercise: str, seconds: float) -> None:
        self.exercises.setdefault(exercise, ExerciseClock(seconds))

    def timeout(self, exercise: str, code: str, call_seconds: float) -> float:
        """The deadline of the next request for `code` of `exercise`, or `StudentTimeout` if it
        must not run (its code timed out before, or a budget is spent)."""
        clock = self.exercises[exercise]
        if code and code in clock.timed_out:
            raise StudentTimeout(say("run.not_run_timed_out", name=code))
        left = clock.seconds - clock.spent
        if left <= 0:
            raise StudentTimeout(say("run.budget_spent_exercise", seconds=clock.seconds))
        if self.seconds is not None:
            if self.seconds - self.spent <= 0:
                raise StudentTimeout(say("run.budget_spent_submission", seconds=self.seconds))
            left = min(left, self.seconds - self.spent)
        return min(call_seconds, left)

    def charge(self, exercise: str, seconds: float) -> None:
        self.exercises[exercise].spent += seconds
        self.spent += seconds

    def timed_out(self, exercise: str, code: str) -> None:
        if code:
            self.exercises[exercise].timed_out.add(code)


class Stopwatch:
    """`with clock.stopwatch(exercise): ...` charges the block's wall time to `exercise`."""

    def __init__(self, clock: SubmissionClock, exercise: str) -> None:
        self.clock, self.exercise = clock, exercise

    def __enter__(self) -> Stopwatch:
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        self.clock.charge(self.exercise, time.monotonic() - self.start)
