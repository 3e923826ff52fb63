"""The grading engine. Knows about sandboxes, checks, scores and reports; nothing about attention.

Grader files import what they need from here::

    from graders.harness import check, expect, say_text

Each is loaded on first use: a command that grades nothing in its own process (`grade.py batch`
only feeds its jobs) starts without importing torch, and `grade.py` can start the sandbox (its
`sandbox.launch`, standard library only) before this process imports anything heavy.
"""

import importlib

__all__ = ["check", "expect", "Text"]


def __getattr__(name: str):
    if name == "expect":
        return importlib.import_module(".core.expect", __name__)
    if name == "Text":
        return importlib.import_module(".core.i18n", __name__).Text
    if name == "check":
        return importlib.import_module(".core.plugin", __name__).check
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
