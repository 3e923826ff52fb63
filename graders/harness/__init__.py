"""The grading engine. Knows about sandboxes, checks, scores and reports; nothing about attention.

Grader files import what they need from here::

    from graders.harness import check, expect, say_text
"""

from . import expect
from .i18n import Text
from .plugin import check

__all__ = ["check", "expect", "Text"]
