"""What a student grading by hand sees while the checks run: one line, redrawn on a terminal.

    [ex02_self_attention 3/9] sdpa_scaling …

`CheckProgress` is a pytest plugin that `runner.grade(progress=...)` adds to the grading session.
It writes to a file descriptor duplicated before pytest starts, since pytest's capture redirects
descriptors 1 and 2 while checks run; it clears its line when grading ends, so the report that
follows is unchanged. Nothing is shown when the output is not a terminal (CI logs, pipes).
"""

from __future__ import annotations

import os

import pytest

from ..core import inert


class CheckProgress:
    def __init__(self, fd: int, width: int = 100) -> None:
        self.fd = os.dup(fd)
        self.width = width
        self.totals: dict[str, int] = {}
        self.done: dict[str, int] = {}
        self.shown = False

    def _write(self, text: str) -> None:
        try:
            os.write(self.fd, text.encode("utf-8", "replace"))
        except OSError:
            pass

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            exercise = item.path.stem.removeprefix("test_")
            self.totals[exercise] = self.totals.get(exercise, 0) + 1

    def pytest_runtest_logstart(self, nodeid: str, location) -> None:
        exercise = nodeid.split("::")[0].rsplit("/", 1)[-1].removesuffix(".py").removeprefix("test_")
        self.done[exercise] = self.done.get(exercise, 0) + 1
        check = inert.single_line(nodeid.rsplit("::", 1)[-1].removeprefix("test_"))
        line = f"[{exercise} {self.done[exercise]}/{self.totals.get(exercise, '?')}] {check} …"
        self._write("\r" + line[: self.width] + "\x1b[K")
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self._write("\r\x1b[K")
        os.close(self.fd)
