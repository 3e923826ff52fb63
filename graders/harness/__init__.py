"""The grading engine. Knows about sandboxes, checks, scores and reports; nothing about attention.

Grader files import what they need from here::

    from graders.harness import check, expect, say_text

`check` and `expect` (torch, pytest) are loaded on first use, so that a command that grades
nothing in its own process (`grade.py batch` only feeds its jobs) starts without importing torch.
"""

import importlib

from .i18n import Text

__all__ = ["check", "expect", "Text"]


def __getattr__(name: str):
    if name == "expect":
        return importlib.import_module(".expect", __name__)
    if name == "check":
        return importlib.import_module(".plugin", __name__).check
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
