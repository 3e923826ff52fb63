"""Mistakes every exercise can make, named by the harness itself: outputs in the wrong layout.

An exercise's manifest declares the mistakes of its own subject; these are about the shape of what
comes back, whatever the subject, and `expect` names them without a grader asking. A manifest may
declare a diagnosis of the same id to word it for its exercise; the manifest's wins.
"""

from __future__ import annotations

from .i18n import Text
from .models import DiagnosisSpec

COMMON_DIAGNOSES: dict[str, DiagnosisSpec] = {
    "axes_swapped": DiagnosisSpec(
        message=Text(
            zh="`{name}` 的各个维度都对，只是顺序不对：形状是 {got}，应为 {expected}（某处的 transpose/permute 放错了）。",
            en="`{name}` has the right dimensions in the wrong order: shape {got}, expected {expected}"
            " (a transpose or permute in the wrong place).",
        )
    ),
    "extra_axis": DiagnosisSpec(
        message=Text(
            zh="`{name}` 多了一个大小为 1 的维度（{got}，应为 {expected}）：去掉它（squeeze），或者不要加上它。",
            en="`{name}` has an extra axis of size 1 ({got}, expected {expected}): squeeze it, or do not add it.",
        )
    ),
    "missing_axis": DiagnosisSpec(
        message=Text(
            zh="`{name}` 少了一个大小为 1 的维度（{got}，应为 {expected}）：多了一次 squeeze()，或者丢掉了批次维。",
            en="`{name}` lost an axis of size 1 ({got}, expected {expected}): a squeeze() too many, or a batch"
            " axis dropped.",
        )
    ),
    "name_not_defined": DiagnosisSpec(
        message=Text(
            zh="你的代码用到了一个没有定义、也没有导入的名字（NameError）：补上缺的 import（例如 `import math`），或者改正拼写。",
            en="Your code uses a name it never defined or imported (NameError): add the missing import (`import math`, for example) or fix the spelling.",
        )
    ),
    "max_returns_pair": DiagnosisSpec(
        message=Text(
            zh="带 dim 的 torch.max 返回 (values, indices) 两个东西；要的是 .values（或用 amax）。",
            en="torch.max with a dim returns (values, indices); take .values (or use amax).",
        )
    ),
    "list_of_tensors": DiagnosisSpec(
        message=Text(
            zh="`{name}` 是一个由张量组成的 Python 列表（或元组）；要把它们合成一个张量（torch.stack 或 torch.cat）。",
            en="`{name}` is a Python list (or tuple) of tensors; make them one tensor (torch.stack or torch.cat).",
        )
    ),
    "outputs_swapped": DiagnosisSpec(
        message=Text(
            zh="两个输出的顺序反了：应返回 ({first}, {second})。",
            en="The two outputs come back in the wrong order: return ({first}, {second}).",
        )
    ),
}


# Exceptions that mean the same mistake in any exercise: matched like a grader's KNOWN_ERRORS, after them.
COMMON_ERRORS: dict[str, str] = {
    "name_not_defined": r"^NameError: name '\w+' is not defined",
    "max_returns_pair": r"torch\.return_types\.max",
}


def lookup(diagnoses: dict[str, DiagnosisSpec], diagnosis: str) -> DiagnosisSpec | None:
    """The exercise's own diagnosis `diagnosis`, else the harness's, else None."""
    return diagnoses.get(diagnosis) or COMMON_DIAGNOSES.get(diagnosis)
