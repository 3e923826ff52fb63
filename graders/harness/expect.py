"""What a check asserts about a student's output, with got/expected feedback and diagnoses.

Checks compare in this order: type, dtype, exact shape (never broadcast), finiteness, values.
`close` takes the outputs of known wrong variants computed by the grader; when the student's
output matches one of them instead of the expected one, the failure names that mistake. This is
the one diagnosis mechanism: checks never chain `if`s to name mistakes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import numpy as np
import torch

from .errors import CheckFailed, StudentCodeError
from .i18n import Text, say

Variant = torch.Tensor | Callable[[], torch.Tensor | None] | None
Estimator = Callable[[torch.Tensor], "tuple[str, dict] | None"]


def fail(text: Text, diagnosis: str | None = None, **params) -> None:
    """Fail the check with `text`; `diagnosis` names a known mistake (declared in the manifest)."""
    raise CheckFailed(text, diagnosis, **params)


def _describe(value) -> str:
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of length {len(value)}"
    return type(value).__name__ if value is not None else "None"


def tensor(
    got,
    name: str,
    shape: tuple[int, ...] | None = None,
    *,
    convert: bool = False,
    finite: bool = True,
    shape_variants: Mapping[str, tuple[int, ...]] | None = None,
) -> torch.Tensor:
    """`got` as a real floating tensor of exactly `shape` (all finite, unless `finite=False`).

    `shape_variants` maps diagnosis ids to the wrong shapes known mistakes produce.

    With `convert`, nested lists and numpy arrays are accepted too (hand-computed answers).
    """
    if convert and isinstance(got, (list, tuple, np.ndarray)):
        try:
            got = torch.as_tensor(np.asarray(got, dtype=np.float64))
        except (TypeError, ValueError):
            fail(say("not_tensor", name=name, got=_describe(got)))
    if not isinstance(got, torch.Tensor):
        fail(say("not_tensor", name=name, got=_describe(got)))
    if not got.is_floating_point():
        fail(say("not_real", name=name, dtype=str(got.dtype).replace("torch.", "")))
    if shape is not None and tuple(got.shape) != tuple(shape):
        named = [d for d, wrong in (shape_variants or {}).items() if tuple(wrong) == tuple(got.shape)]
        fail(
            say("shape", name=name, expected=tuple(shape), got=tuple(got.shape)), named[0] if named else None
        )
    if finite and not bool(torch.isfinite(got).all()):
        bad = (~torch.isfinite(got)).nonzero()
        fail(say("not_finite", name=name, count=int(bad.shape[0]), index=tuple(bad[0].tolist())))
    return got


def matches(
    got: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float, equal_nan: bool = False
) -> bool:
    """Same shape and close in float64: the test every comparison and diagnosis uses."""
    if tuple(got.shape) != tuple(expected.shape):
        return False
    return bool(torch.allclose(got.double(), expected.double(), rtol=rtol, atol=atol, equal_nan=equal_nan))


def find_variant(got: torch.Tensor, variants: Mapping[str, Variant], rtol: float, atol: float) -> str | None:
    """The id of the first known wrong variant that `got` matches (NaN matching NaN), or None."""
    for diagnosis, variant in variants.items():
        value = variant() if callable(variant) else variant
        if isinstance(value, torch.Tensor) and matches(got, value, rtol, atol, equal_nan=True):
            return diagnosis
    return None


def close(
    got,
    expected: torch.Tensor,
    name: str,
    *,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    variants: Mapping[str, Variant] | None = None,
    estimators: list[Estimator] | None = None,
    convert: bool = False,
) -> torch.Tensor:
    """Check `got` against `expected`: type, dtype, exact shape, then values (all finite).

    On a mismatch, `variants` (diagnosis id -> the output of that wrong formula, computed by the
    grader) are tried in order, then `estimators` (functions that infer a continuous mistake, such
    as a wrong scale, from `got` and return `(diagnosis id, message params)`). A match names the
    mistake; no match still fails, unnamed.
    """
    variants = variants or {}
    if (
        isinstance(got, torch.Tensor)
        and got.is_floating_point()
        and tuple(got.shape) != tuple(expected.shape)
    ):
        diagnosis = find_variant(got, variants, rtol, atol)  # e.g. a transposed output
        fail(say("shape", name=name, expected=tuple(expected.shape), got=tuple(got.shape)), diagnosis)
    got = tensor(got, name, tuple(expected.shape), convert=convert, finite=False)
    if matches(got, expected, rtol, atol):
        return got
    finite = torch.isfinite(got)
    if not bool(finite.all()):
        bad = (~finite).nonzero()
        text = say("not_finite", name=name, count=int(bad.shape[0]), index=tuple(bad[0].tolist()))
    else:
        diff = (got.double() - expected.double()).abs()
        index = (
            tuple(int(i) for i in np.unravel_index(int(diff.argmax()), diff.shape)) if diff.numel() else ()
        )
        text = say(
            "values",
            name=name,
            err=float(diff.max()),
            index=index,
            got=float(got.double()[index]),
            expected=float(expected.double()[index]),
        )
    diagnosis = find_variant(got, variants, rtol, atol)
    if diagnosis:
        fail(text, diagnosis)
    if bool(finite.all()):
        for estimate in estimators or []:
            found = estimate(got)
            if found:
                fail(text, found[0], **found[1])
    fail(text)
    return got  # unreachable; keeps type checkers content


def unpack(got, count: int, name: str) -> tuple:
    """`got` as a tuple of exactly `count` items (a function that should return several values)."""
    if not isinstance(got, (tuple, list)) or len(got) != count:
        fail(say("not_tuple", name=name, count=count, got=_describe(got)))
    return tuple(got)


@contextmanager
def known_errors(patterns: Mapping[str, str]) -> Iterator[None]:
    """Name a known mistake from the exception the student's code raised inside the block.

    `patterns` maps diagnosis ids to regular expressions searched in "<type>: <message>" of the
    exception (e.g. autograd's "modified by an inplace operation"); the first match names the
    mistake. The check still fails as the student's exception, with their traceback.
    """
    try:
        yield
    except StudentCodeError as exc:
        if exc.diagnosis is None:
            exc.diagnosis = exc.matching(patterns)
        raise


def true(condition: bool, text: Text, diagnosis: str | None = None, **params) -> None:
    """Fail with `text` unless `condition` holds."""
    if not condition:
        fail(text, diagnosis, **params)
