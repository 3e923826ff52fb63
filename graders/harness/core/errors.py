"""Why a check did not pass. The status a check gets follows from the exception's class.

`StudentFault` and its subclasses mean the submission is at fault (the check is `failed`,
`timeout` or `not_implemented`); any other exception escaping a check is the grader's own fault
and gives status `error` with a message that says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .i18n import Text, say
from .operands import operand_note


class StudentFault(Exception):
    """The submission made this check fail."""

    status = "failed"

    def __init__(self, text: Text, diagnosis: str | None = None, **diagnosis_params) -> None:
        super().__init__(text.en)
        self.text = text
        self.diagnosis = diagnosis
        self.diagnosis_params = diagnosis_params


class CheckFailed(StudentFault):
    """The submission answered, but the answer is wrong."""


class StudentCodeError(StudentFault):
    """The student's code raised an exception.

    `where` is the student's own line that raised it ("file, line N: code"), `call` the call that
    ran it with the shapes of its inputs; both are shown when known, and matched by `known_errors`.
    """

    def __init__(
        self, type_name: str, message: str, traceback: str = "", where: str = "", call: str = ""
    ) -> None:
        note = operand_note(message)  # the operands' sizes a shape error gives, said plainly
        extra = [note] if note is not None else []
        extra += [say("run.exception_where", where=where)] if where else []
        extra += [say("run.exception_call", call=call)] if call else []
        super().__init__(say("run.student_exception", type=type_name, message=message).lines(*extra))
        self.type_name = type_name
        self.message = message
        self.where = where
        self.call = call
        self.student_traceback = traceback

    def matching(self, patterns: Mapping[str, str]) -> str | None:
        """The first diagnosis whose regular expression is found in "<type>: <message>" followed, on
        the next line, by the student's line that raised it (`where`); None when none is."""
        return match_error(patterns, self.type_name, self.message, self.where)


def match_error(patterns: Mapping[str, str], type_name: str, message: str, where: str = "") -> str | None:
    """See `StudentCodeError.matching`: also used for an exception raised while a file loads."""
    detail = f"{type_name}: {message}\n{where}"
    return next((d for d, pattern in patterns.items() if re.search(pattern, detail)), None)


class StudentNotImplemented(StudentFault):
    status = "not_implemented"


class StudentTimeout(StudentFault):
    status = "timeout"


class StudentCrash(StudentFault):
    """The worker died, broke the protocol, or sent data the grader refuses."""


class GraderFault(Exception):
    """The grader, its sandbox or the machine failed, not the submission: the check gets status
    `error`, worded as the grader's fault ("not your fault"), whatever the student's code did."""

    def __init__(self, text: Text) -> None:
        super().__init__(text.en)
        self.text = text


class SubmissionFileError(StudentFault):
    """The submission file is missing, not a regular file, unreadable or does not compile."""
