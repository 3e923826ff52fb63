"""JUnit XML for CI-based classrooms, rendered from a `SubmissionResult`.

One `<testsuite>` per exercise, one `<testcase>` per check (`classname` = exercise id, `name` =
check id). A check the student failed (wrong values, exception, timeout, not implemented) is a
`<failure>`; a check whose grader broke is an `<error>`. A submission that could not be graded
at all is one suite `submission` with one `<error>` testcase saying why. Points go in the suite's
`<properties>` (`<check>.points`), since JUnit has no notion of them; testcases carry no
properties, so strict JUnit schemas accept the file. Text is stripped of characters XML 1.0 forbids.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ..core.models import CheckResult
from .gradescope import check_output, printed_output
from .result import SubmissionResult

_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def clean(text: str) -> str:
    return _XML_ILLEGAL.sub("\ufffd", text)


def _counts(element: ET.Element, tests: int, failures: int, errors: int, skipped: int = 0) -> None:
    for key, value in (("tests", tests), ("failures", failures), ("errors", errors), ("skipped", skipped)):
        element.set(key, str(value))


def _testcase(suite: ET.Element, classname: str, check: CheckResult, lang: str) -> str:
    case = ET.SubElement(suite, "testcase", name=check.id, classname=classname, time="0")
    if check.status == "passed":
        return "passed"
    kind = "error" if check.status == "error" else "failure"
    detail = ET.SubElement(
        case, kind, message=clean(check.message[:500]), type=check.diagnosis or check.status
    )
    detail.text = clean(check_output(check, lang))
    return kind


def tree(result: SubmissionResult) -> ET.Element:
    root = ET.Element("testsuites", name=clean(result.student), time=f"{result.elapsed:.3f}")
    totals = [0, 0, 0]
    if result.report is None:
        suite = ET.SubElement(root, "testsuite", name="submission", time="0")
        case = ET.SubElement(suite, "testcase", name="intake", classname="submission", time="0")
        error = ET.SubElement(
            case, "error", message=clean(result.reason[:500]), type=result.problem or result.status
        )
        error.text = clean(result.reason)
        _counts(suite, 1, 0, 1)
        _counts(root, 1, 0, 1)
        return root
    for exercise in result.report.exercises:
        suite = ET.SubElement(root, "testsuite", name=exercise.id, time="0")
        props = ET.SubElement(suite, "properties")
        pairs = [
            ("seed", str(result.seed)),
            ("score", f"{exercise.score:g}"),
            ("max_score", f"{exercise.max_score:g}"),
        ]
        for check in exercise.checks:
            pairs += [
                (f"{check.id}.points", f"{check.score:g}"),
                (f"{check.id}.max_points", f"{check.max_score:g}"),
            ]
        for key, value in pairs:
            ET.SubElement(props, "property", name=key, value=value)
        kinds = [_testcase(suite, exercise.id, check, result.lang) for check in exercise.checks]
        failures, errors = kinds.count("failure"), kinds.count("error")
        _counts(suite, len(kinds), failures, errors)
        if text := printed_output(exercise, result.lang):
            ET.SubElement(suite, "system-out").text = clean(text)
        totals = [totals[0] + len(kinds), totals[1] + failures, totals[2] + errors]
    _counts(root, *totals)
    return root


def render(result: SubmissionResult) -> str:
    root = tree(result)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
