"""Why a check did not pass. The status a check gets follows from the exception's class.

`StudentFault` and its subclasses mean the submission is at fault (the check is `failed`,
`timeout` or `not_implemented`); any other exception escaping a check is the grader's own fault
and gives status `error` with a message that says so.
"""

from __future__ import annotations

from .i18n import Text, say


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
    """The student's code raised an exception."""

    def __init__(self, type_name: str, message: str, traceback: str = "") -> None:
        super().__init__(say("student_exception", type=type_name, message=message))
        self.type_name = type_name
        self.student_traceback = traceback


class StudentNotImplemented(StudentFault):
    status = "not_implemented"


class StudentTimeout(StudentFault):
    status = "timeout"


class StudentCrash(StudentFault):
    """The worker died, broke the protocol, or sent data the grader refuses."""


class SubmissionFileError(StudentFault):
    """The submission file is missing, not a regular file, unreadable or does not compile."""
