"""What a check asserts about a student's output, with got/expected feedback and diagnoses.

Checks compare in this order: type, dtype, exact shape (never broadcast), finiteness, values.
`close` takes the outputs of known wrong variants computed by the grader; when the student's
output matches one of them instead of the expected one, the failure names that mistake. This is
the one diagnosis mechanism: checks never chain `if`s to name mistakes.

Three rules keep a score fair (README, "How a score is decided"):

- *A title is a contract*: a property check judges the student's own outputs (`finite`,
  `gradients_match_forward`, two calls compared with each other), never their values.
- *Error carried forward*: `close(..., readings=...)` accepts, beside the right answer, the answer
  that follows from an earlier part as the student wrote it, so one mistake costs its points once.
- *A diagnosis is shown only when the evidence fits it better than the others*: `find_variant`
  names the best-fitting variant and nothing when two different mistakes fit equally well; a
  variant given as a pair is matched against the output *and* the `joint` evidence beside it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NoReturn

import numpy as np
import torch

from .errors import CheckFailed, GraderFault, StudentCodeError
from .i18n import Text, say

Variant = torch.Tensor | tuple | Callable[[], "torch.Tensor | tuple | None"] | None
Variants = Mapping[str, Variant] | Callable[[], Mapping[str, Variant]]  # the mapping, or how to compute it
Estimator = Callable[[torch.Tensor], "tuple[str, dict] | None"]
AMBIGUOUS = 4.0  # a second mistake fits "as well" when its error is within this factor of the best one's,
AMBIGUOUS_FLOOR = 0.05  # or within 5% of the tolerance (two exact fits, up to float32 rounding)


def fail(text: Text, diagnosis: str | None = None, **params) -> NoReturn:
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
    shape_variants: Mapping[str, tuple[int, ...] | list[tuple[int, ...]]] | None = None,
) -> torch.Tensor:
    """`got` as a real floating tensor of exactly `shape` (all finite, unless `finite=False`).

    `shape_variants` maps diagnosis ids to the wrong shape (or list of shapes) a known mistake gives.

    With `convert`, nested lists and numpy arrays are accepted too (hand-computed answers).
    """
    if convert and isinstance(got, (list, tuple, np.ndarray)):
        try:
            got = torch.as_tensor(np.asarray(got, dtype=np.float64))
        except (TypeError, ValueError):
            fail(say("check.not_tensor", name=name, got=_describe(got)))
    if not isinstance(got, torch.Tensor):
        stacked = isinstance(got, (list, tuple)) and got and all(isinstance(t, torch.Tensor) for t in got)
        fail(
            say("check.not_tensor", name=name, got=_describe(got)),
            "list_of_tensors" if stacked else None,
            name=name,
        )
    if not got.is_floating_point():
        fail(say("check.not_real", name=name, dtype=str(got.dtype).replace("torch.", "")))
    if shape is not None and tuple(got.shape) != tuple(shape):
        named = [
            d for d, wrong in (shape_variants or {}).items()
            if tuple(got.shape) in ([tuple(w) for w in wrong] if isinstance(wrong, list) else [tuple(wrong)])
        ]  # fmt: skip
        text = say("check.shape", name=name, expected=tuple(shape), got=tuple(got.shape))
        if named:  # its message may show the shapes, as a layout diagnosis does
            fail(text, named[0], name=name, got=tuple(got.shape), expected=tuple(shape))
        layout = layout_mistake(tuple(got.shape), tuple(shape))
        fail(text, layout, name=name, got=tuple(got.shape), expected=tuple(shape))
    if finite:
        _require_finite(got, name, {}, 0.0, 0.0)
    return got


def layout_mistake(got: tuple[int, ...], expected: tuple[int, ...]) -> str | None:
    """A harness diagnosis (see `diagnoses.py`) when a wrong shape is a layout slip: the right axes
    in another order, or an axis of size 1 too many or too few."""
    if sorted(got) == sorted(expected) and got != expected:
        return "axes_swapped"
    merged = [  # a size-1 axis "merged" into its neighbour is one dropped: `missing_axis` below names it
        expected[:i] + (expected[i] * expected[i + 1],) + expected[i + 2 :]
        for i in range(len(expected) - 1)
        if 1 not in (expected[i], expected[i + 1])
    ]
    if got in merged:  # two neighbouring axes folded into one (heads left folded into the batch, say)
        return "axes_merged"
    if [n for n in got if n != 1] == [n for n in expected if n != 1]:
        return (
            "extra_axis" if len(got) > len(expected) else "missing_axis" if len(got) < len(expected) else None
        )
    return None


def finite(
    got: torch.Tensor,
    name: str,
    *,
    variants: Variants | None = None,
    rtol: float = 1e-3,
    atol: float = 1e-4,
) -> torch.Tensor:
    """Fail unless every entry of `got` (a floating tensor of any shape) is finite; `variants`
    (NaN matching NaN) name the mistake that put the NaN or inf there."""
    return _require_finite(got, name, variants or {}, rtol, atol)


def _require_finite(got: torch.Tensor, name: str, variants: Variants, rtol: float, atol: float):
    bad = ~torch.isfinite(got.detach())
    if bool(bad.any()):
        index = bad.nonzero()
        text = say("check.not_finite", name=name, count=int(index.shape[0]), index=tuple(index[0].tolist()))
        fail(text, find_variant(got, variants, rtol, atol))
    return got


def error_ratio(got: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> float:
    """max |got - expected| / (atol + rtol |expected|) in float64, NaN matching NaN: ≤ 1 is a match,
    and a smaller ratio is a better fit. Infinite for different shapes."""
    if tuple(got.shape) != tuple(expected.shape):
        return float("inf")
    g, e = got.detach().double(), expected.detach().double()
    both_nan = torch.isnan(g) & torch.isnan(e)
    same_inf = torch.isinf(g) & (g == e)
    diff = torch.where(both_nan | same_inf, torch.zeros_like(g), (g - e).abs())
    ratio = diff / (atol + rtol * e.abs().nan_to_num(posinf=0.0, neginf=0.0))
    ratio = ratio.nan_to_num(nan=float("inf"))
    return float(ratio.max()) if ratio.numel() else 0.0


def matches(
    got: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float, equal_nan: bool = False
) -> bool:
    """Same shape and close in float64: the test every comparison and diagnosis uses."""
    if tuple(got.shape) != tuple(expected.shape):
        return False
    return bool(torch.allclose(got.double(), expected.double(), rtol=rtol, atol=atol, equal_nan=equal_nan))


def _fit(got: torch.Tensor, value, joint, rtol: float, atol: float) -> float:
    """How well a variant's value explains `got` (and the `joint` evidence, for a pair); a list holds
    several ways of writing the same mistake, and the best fitting one counts."""
    if isinstance(value, list):
        return min((_fit(got, v, joint, rtol, atol) for v in value), default=float("inf"))
    if isinstance(value, tuple):
        if joint is None or len(value) != 2 or not isinstance(joint, torch.Tensor):
            return float("inf")
        mine, other = value
        if not (isinstance(mine, torch.Tensor) and isinstance(other, torch.Tensor)):
            return float("inf")
        return max(error_ratio(got, mine, rtol, atol), error_ratio(joint, other, rtol, atol))
    if isinstance(value, torch.Tensor):
        return error_ratio(got, value, rtol, atol)
    return float("inf")


def find_variant(
    got: torch.Tensor,
    variants: Variants,
    rtol: float,
    atol: float,
    joint: torch.Tensor | None = None,
) -> str | None:
    """The id of the known wrong variant that explains `got` best, or None.

    A variant may be a tensor (compared with `got`), a pair `(value, joint_value)` compared with
    `got` and `joint` together, a list of those (ways of writing one mistake), or a callable
    giving any of them; `variants` itself may be a callable giving the mapping (`close` and
    `finite` then compute it only for an answer that fails). None when no variant matches, or when
    a variant of another id fits within a factor `AMBIGUOUS` of the best: the evidence cannot tell
    those mistakes apart, and naming one of them could mislead.
    """
    if callable(variants):  # the mapping itself, computed only now that a mismatch needs it
        variants = variants()
    fits = []
    for diagnosis, variant in variants.items():
        value = variant() if callable(variant) else variant
        ratio = _fit(got, value, joint, rtol, atol)
        if ratio <= 1.0:
            fits.append((ratio, diagnosis))
    if not fits:
        return None
    fits.sort()
    best_ratio, best = fits[0]
    rivals = [d for r, d in fits[1:] if d != best and r <= AMBIGUOUS * best_ratio + AMBIGUOUS_FLOOR]
    return None if rivals else best


def once(compute: Callable[[], Mapping[str, Variant]]) -> Callable[[], Mapping[str, Variant]]:
    """`compute` called at most once, its result kept: variants two checks of one probe share (the
    weights' and the output's), computed only if one of them fails."""
    return functools.cache(compute)


def close(
    got,
    expected: torch.Tensor,
    name: str,
    *,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    variants: Variants | None = None,
    estimators: Sequence[Estimator] = (),
    readings: Sequence[torch.Tensor | None] = (),
    joint: torch.Tensor | None = None,
    convert: bool = False,
    reveal: bool = True,
    hint: Text | None = None,
) -> torch.Tensor:
    """Check `got` against `expected`: type, dtype, exact shape, then values (all finite).

    `readings` are further answers that count as right: what an earlier part, as the student wrote
    it, leads to (error carried forward), NaN and inf included where that reading is mostly
    finite (`carries_forward`). The message compares with the reading closest to `got`.

    On a mismatch, `variants` (diagnosis id -> the output of that wrong formula, computed by the
    grader; see `find_variant` for pairs matched with `joint`) are tried first, then `estimators`
    (functions that infer a continuous mistake, such as a wrong scale, from `got` and return
    `(diagnosis id, message params)`). A match names the mistake; no match still fails, unnamed.

    With `reveal=False` (answers that are the answer, such as hand-computed numbers) the message
    says which entries are wrong and what they are, never what they should be; `hint` adds a line.
    """
    variants = variants or {}
    candidates = [expected, *(r for r in readings if isinstance(r, torch.Tensor))]
    shapes = {tuple(c.shape) for c in candidates}
    if isinstance(got, torch.Tensor) and got.is_floating_point() and tuple(got.shape) not in shapes:
        diagnosis = find_variant(got, variants, rtol, atol, joint)  # e.g. a transposed output
        text = say("check.shape", name=name, expected=tuple(expected.shape), got=tuple(got.shape))
        if diagnosis is None:  # no known formula: a layout slip (axes swapped, an axis of 1 too many …)?
            layout = layout_mistake(tuple(got.shape), tuple(expected.shape))
            fail(text, layout, name=name, got=tuple(got.shape), expected=tuple(expected.shape))
        fail(text, diagnosis, name=name, got=tuple(got.shape), expected=tuple(expected.shape))
    got = tensor(got, name, convert=convert, finite=False)
    if tuple(got.shape) not in shapes:  # a converted list of another shape
        fail(say("check.shape", name=name, expected=tuple(expected.shape), got=tuple(got.shape)))
    fits = [(error_ratio(got, c, rtol, atol), i) for i, c in enumerate(candidates)]
    if min(fits)[0] <= 1.0 and bool(torch.isfinite(got).all()):
        return got
    if any(ratio <= 1.0 and i > 0 and carries_forward(candidates[i]) for ratio, i in fits):
        return got  # NaN or inf exactly where the student's own earlier part gives it
    nearest = candidates[min(fits)[1]]
    text = _mismatch(got, nearest, name, reveal, rtol, atol)
    if hint is not None:
        text = text.lines(hint)
    diagnosis = find_variant(got, variants, rtol, atol, joint)
    if diagnosis:
        fail(text, diagnosis)
    half = computes_in_half(got)  # right to half precision's rounding, and made of its numbers
    if half is not None and computes_in_half(nearest) is None and error_ratio(got, nearest, 4e-3, 1e-3) <= 1:
        fail(text, "low_precision", name=name, dtype=str(half).replace("torch.", ""))
    if bool(torch.isfinite(got).all()):
        for estimate in estimators:
            found = estimate(got)
            if found:
                fail(text, found[0], **found[1])
    fail(text)


def carries_forward(reading: torch.Tensor) -> bool:
    """Whether a reading (what the student's own earlier part leads to) with NaN or inf in it still
    counts as an answer that a later part may reproduce: most of it (at least half) is finite, so
    matching it pins the later part down. An earlier part that gives (almost) nothing finite pins
    nothing, and a later part that copies its NaN earns nothing from it."""
    finite = torch.isfinite(reading)
    return reading.numel() > 0 and 2 * int(finite.sum()) >= reading.numel()


def same_as_own(got, own: torch.Tensor, name: str, rtol: float = 1e-5, atol: float = 1e-6) -> torch.Tensor:
    """`got` against `own`, another output of the student's own code (a property judged on their
    outputs, never on the expected values): the same shape and values, NaN exactly where `own` has
    NaN and the same infinities. A NaN both agree on is not this check's business; an output with
    no finite value at all is no answer, and fails."""
    got = tensor(got, name, tuple(own.shape), finite=False)
    if own.numel() and not bool(torch.isfinite(own).any()):  # no answer at all: nothing to compare
        fail(_mismatch(own, own, name, True, rtol, atol))
    if torch.allclose(got.double(), own.double(), rtol=rtol, atol=atol, equal_nan=True):
        return got
    same = torch.isnan(got) == torch.isnan(own)
    if not bool(same.all()):
        index = tuple((~same).nonzero()[0].tolist())
        fail(say("check.values", name=name, err=float("nan"), index=index, got=float(got.double()[index]),
                 expected=float(own.double()[index])))  # fmt: skip
    fail(_mismatch(got.nan_to_num(0.0), own.nan_to_num(0.0), name, True, rtol, atol))


def _mismatch(
    got: torch.Tensor, expected: torch.Tensor, name: str, reveal: bool, rtol: float, atol: float
) -> Text:
    """The got/expected sentence for values that differ (or are not finite)."""
    finite = torch.isfinite(got)
    if not bool(finite.all()):
        bad = (~finite).nonzero()
        return say("check.not_finite", name=name, count=int(bad.shape[0]), index=tuple(bad[0].tolist()))
    diff = (got.double() - expected.double()).abs()
    index = tuple(int(i) for i in np.unravel_index(int(diff.argmax()), diff.shape)) if diff.numel() else ()
    if reveal:
        return say(
            "check.values", name=name, err=float(diff.max()), index=index,
            got=float(got.double()[index]), expected=float(expected.double()[index]),
        )  # fmt: skip
    wrong = int((diff > atol + rtol * expected.double().abs()).sum())
    return say(
        "check.values_hidden",
        name=name,
        count=wrong,
        total=diff.numel(),
        index=index,
        got=float(got.double()[index]),
    )


def largest_difference(first: torch.Tensor, second: torch.Tensor) -> float:
    """max |first - second| of two outputs of the student's (inf for different shapes or NaNs in
    different places): how far two calls that should agree are apart."""
    if first.shape != second.shape or not bool((torch.isnan(first) == torch.isnan(second)).all()):
        return float("inf")
    diff = (first.double() - second.double()).abs().nan_to_num(0.0)
    return float(diff.max()) if diff.numel() else 0.0


def responds(first: torch.Tensor, second: torch.Tensor, name: str) -> None:
    """Fail unless two outputs for different inputs differ: a property check judges an answer, and
    an output that ignores its input (a constant, all NaN) is none, however well it behaves."""
    if largest_difference(first, second) == 0.0:
        fail(say("check.constant_output", name=name))


def batch_independent(
    forward: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, rng: torch.Generator, name: str
) -> None:
    """Changing one element of the batch `x` (dimension 0) changes no other element of the output.

    Judged on the student's own outputs, whatever they are: only their batch dimension must come
    first, and the changed element's own output must move (see `responds`). Both calls have the
    same batch size (and, by default, the same random state), so an
    output that depends on the batch size or on randomness is not mistaken for elements mixing.
    """
    base = tensor(forward(x), name, finite=False)
    if base.dim() == 0 or base.shape[0] != x.shape[0]:
        fail(say("check.batch_first", name=name, batch=x.shape[0], shape=tuple(base.shape)))
    for changed in (0, x.shape[0] - 1):
        moved_x = x.clone()
        moved_x[changed] = torch.randn(x.shape[1:], generator=rng, dtype=x.dtype)
        moved = tensor(forward(moved_x), name, tuple(base.shape), finite=False)
        responds(moved[changed], base[changed], name)  # the changed element's own output moves
        others = [i for i in range(x.shape[0]) if i != changed]
        err = largest_difference(moved[others], base[others])
        bound = 1e-5 * max(1.0, float(base.detach().abs().nan_to_num(0.0).max()))
        true(
            err <= bound,
            say("check.batch_mixed", name=name, changed=changed, err=err),
            "batch_elements_mixed",
        )


def unpack(got, count: int, name: str) -> tuple:
    """`got` as a tuple of exactly `count` items (a function that should return several values)."""
    if not isinstance(got, (tuple, list)) or len(got) != count:
        fail(say("check.not_tuple", name=name, count=count, got=_describe(got)))
    return tuple(got)


def cotangents_for(returned, chosen: torch.Tensor, cotangent: torch.Tensor) -> list:
    """The cotangents for `vjp`, one per output the function `returned`, in its own order: `cotangent`
    for the output `chosen` (read as meant, see `pair_as_meant`), None for the others."""
    if isinstance(returned, (tuple, list)):
        return [cotangent if out is chosen else None for out in returned]
    return [cotangent]


def pair_in_order(
    got, name: str, shapes: tuple[tuple[int, ...], tuple[int, ...]], names: tuple[str, str]
) -> tuple:
    """`got` unpacked as a pair, failing (diagnosis `outputs_swapped`) when its two outputs come
    back in the other order: each has the shape the other should have."""
    if isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(shapes[0]):
        fail(say("check.not_tuple", name=name, count=2, got=_describe(got)), "returns_one_output",
             first=names[0], second=names[1])  # fmt: skip
    first, second = unpack(got, 2, name)
    read = pair_as_meant(got, name, shapes)
    if read[0] is second and read[1] is first and first is not second:
        fail(say("check.outputs_order", name=name, first=names[0], second=names[1]), "outputs_swapped",
             first=names[0], second=names[1])  # fmt: skip
    return first, second


def pair_as_meant(got, name: str, shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple:
    """The pair (first, second) a function should return, read as meant: a pair returned in the
    other order (each output has the other's expected shape) is swapped back, and a lone tensor is
    taken as the first output with no second (None). For checks of something other than what is
    returned: the check of the outputs' shapes charges the order, with `unpack`."""
    if isinstance(got, torch.Tensor):
        return got, None
    if (
        isinstance(got, (tuple, list)) and len(got) == 2
        and all(isinstance(t, torch.Tensor) for t in got) and tuple(shapes[0]) != tuple(shapes[1])
        and tuple(got[0].shape) == tuple(shapes[1]) and tuple(got[1].shape) == tuple(shapes[0])
    ):  # fmt: skip
        return got[1], got[0]
    return unpack(got, 2, name)


@contextmanager
def known_errors(patterns: Mapping[str, str]) -> Iterator[None]:
    """Name a known mistake from the exception the student's code raised inside the block.

    `patterns` maps diagnosis ids to regular expressions searched in "<type>: <message>" of the
    exception, followed on the next line by the student's line that raised it (e.g. autograd's
    "modified by an inplace operation"); the first match names the mistake. The check still fails
    as the student's exception, with their traceback. A grader module's `KNOWN_ERRORS` dict does
    the same for every check of that module.
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


# ---------------------------------------------------------------- calls into the submission


MAX_CONFIRMED_ELEMENTS = 1 << 22  # parameters a structure check will fill with a random state of its own


def introspect(obj) -> dict:
    """What one of the submission's objects is, as far as the trusted side can confirm it.

    The worker runs the student's process, so its description (class, parameters, submodules) is a
    claim that a submission can forge. Only confirmed facts are returned (docs/instructors.md, "The
    trust boundary"): `class`, `module`, `is_nn_module`, `training` and `modules` ([name, class,
    module] of each submodule) as claimed, which a check may use only to fail; `parameters`
    `[name, shape, requires_grad]`, only those that took a random state the grader drew (strict
    `load_state_dict`) and gave exactly that state back (`state_dict`); and `linear`, name ->
    `[out_features, in_features, has_bias]` of each submodule with a confirmed 2-D `weight` that,
    called on an input of the grader's, computes `x @ weight.T + bias` with that state. A forger
    must in effect build the layers to have them confirmed; a correct layer whose own forward is
    wrong still has them. The module's original state is loaded back afterwards."""
    remote = _remote(obj)
    claims = remote._introspect()
    info = dict(claims) if type(claims) is dict else {}
    claimed = info.get("parameters")
    info["parameters"], info["linear"] = [], {}
    if type(info.get("modules")) is not list:
        info["modules"] = []
    if info.get("is_nn_module") is not True or type(claimed) is not list:
        return info
    try:
        confirmed = _confirm_state(remote, _parameter_claims(claimed))
    except StudentCodeError:  # its state_dict or load_state_dict raised: nothing is confirmed
        return info
    if confirmed is None:
        return info
    state, original = confirmed
    info["parameters"] = [[name, list(t.shape), rg] for name, (t, rg) in state.items()]
    info["linear"] = _confirm_linear(remote, {name: t for name, (t, _) in state.items()})
    try:
        remote.load_state_dict(original)
    except StudentCodeError:
        pass
    return info


def _parameter_claims(claimed: list) -> dict[str, tuple[tuple[int, ...], bool]]:
    """The worker's [name, shape, requires_grad] claims that are well formed, within the size cap."""
    out: dict[str, tuple[tuple[int, ...], bool]] = {}
    total = 0
    for item in claimed:
        if not (type(item) is list and len(item) == 3 and type(item[0]) is str and type(item[1]) is list):
            continue
        shape = item[1]
        if not all(type(n) is int and 0 <= n for n in shape) or len(shape) > 8:
            continue
        total += math.prod(shape)
        if total > MAX_CONFIRMED_ELEMENTS:
            break
        out[item[0]] = (tuple(shape), item[2] is True)
    return out


def _state_of(remote) -> dict | None:
    state = remote.state_dict()
    if type(state) is not dict or not all(
        type(k) is str and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        return None
    return state


def _confirm_state(remote, claims: dict) -> tuple[dict, dict] | None:
    """({name: (random tensor, requires_grad)} of the claimed parameters the module took and gave
    back exactly, its original state), or None when it holds no state to confirm."""
    import secrets

    original = _state_of(remote)
    if original is None:
        return None
    gen = torch.Generator().manual_seed(secrets.randbits(62))
    drawn: dict[str, tuple[torch.Tensor, bool]] = {}
    for name, (shape, rg) in claims.items():
        held = original.get(name)
        if held is not None and tuple(held.shape) == shape and held.dtype.is_floating_point:
            drawn[name] = (torch.randn(shape, generator=gen, dtype=torch.float64).to(held.dtype), rg)
    if not drawn:
        return None
    remote.load_state_dict(dict(original, **{name: t for name, (t, _) in drawn.items()}))  # strict
    back = _state_of(remote) or {}
    kept = {
        name: (t, rg) for name, (t, rg) in drawn.items()
        if isinstance(back.get(name), torch.Tensor) and back[name].dtype == t.dtype
        and back[name].shape == t.shape and torch.equal(back[name], t)
    }  # fmt: skip
    return kept, original


def _confirm_linear(remote, state: dict[str, torch.Tensor]) -> dict[str, list]:
    """name -> [out, in, has_bias] of each submodule whose confirmed `weight` (2-D) and `bias` it
    applies as a linear layer to an input of the grader's."""
    import secrets

    gen = torch.Generator().manual_seed(secrets.randbits(62))
    out: dict[str, list] = {}
    for name, weight in state.items():
        prefix = name.removesuffix(".weight")
        if not name.endswith(".weight") or weight.dim() != 2:
            continue
        bias = state.get(f"{prefix}.bias")
        if bias is not None and tuple(bias.shape) != (weight.shape[0],):
            continue
        x = torch.randn(3, weight.shape[1], generator=gen, dtype=torch.float64)
        try:
            layer = remote
            for part in prefix.split("."):
                layer = getattr(layer, part)
            got = layer(x.to(weight.dtype))
        except (StudentCodeError, CheckFailed, AttributeError):
            continue
        expected = x @ weight.double().T + (bias.double() if bias is not None else 0.0)
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(expected.shape):
            continue
        error = (got.double() - expected).abs().max().item()
        scale = expected.abs().max().item() + 1.0
        if error <= 256 * torch.finfo(weight.dtype).eps * scale * math.sqrt(weight.shape[1] + 1):
            out[prefix] = [int(weight.shape[0]), int(weight.shape[1]), bias is not None]
    return out


def vjp(fn, args: Sequence, grad_args: Sequence[int], cotangents: Sequence) -> dict:
    """Call the submission's `fn(*args)` with `args[i]` requiring grad for i in `grad_args` and
    backpropagate sum(output_j · cotangents[j]) (None skips an output). Returns `outputs`,
    `input_grads` (one per `grad_args`, None where no gradient arrived), `param_grads` (name ->
    gradient, for an nn.Module or its bound method) and `backward_ran`."""
    return _remote(fn)._vjp(list(args), list(grad_args), list(cotangents))


def _remote(obj):
    """`obj` when it lives in the worker; plain data the submission exported where code is due
    (`forward = (1, 2)`) is the submission's mistake, said so by type, not by an error's text."""
    from .student import RemoteObject

    if not isinstance(obj, RemoteObject):
        raise CheckFailed(say("check.not_code", got=type(obj).__name__))
    return obj


@contextmanager
def fresh_draws(obj) -> Iterator[None]:
    """Inside the block, calls into the submission continue its random state instead of starting
    each from the same one (the default, so that a random forward pass repeats and only a check
    about randomness sees it). `obj` is the `student` module or an object of it."""
    session = obj._session
    before, session.reseed = session.reseed, False
    try:
        yield
    finally:
        session.reseed = before


@dataclass
class PeakMemory:
    """What `peak_memory` measured: `growth`, the bytes by which the worker's memory peaked above
    what it held when the block began, and `source`, what counted it ("cgroup": the worker's whole
    tree; "process": the worker's resident set). Both are filled in when the block ends."""

    growth: int = 0
    source: str = ""


PEAK_UNAVAILABLE = Text(
    zh="这台机器上无法测量沙箱进程的内存峰值（既没有可重置的 cgroup，也无法写 /proc/<pid>/clear_refs）。"
    "这不是你的问题，请告诉老师。",
    en="The sandbox worker's peak memory cannot be measured on this machine (no cgroup whose peak can be"
    " reset, and /proc/<pid>/clear_refs cannot be written): not your fault; please tell your instructor.",
)


@contextmanager
def peak_memory(obj, warm: str | None = None, warm_args: Sequence = ()) -> Iterator[PeakMemory]:
    """Measure the peak memory of the submission's worker during the block, as the kernel counts it
    and the trusted side reads it (`SandboxWorker.reset_peak`): nothing the submission reports
    counts. `obj` is the `student` module or an object of it, already used once (so that its module
    is loaded and the block holds only the calls it measures). A machine where it cannot be
    measured is the grader's problem (`GraderFault`), never the student's.

    With `warm` (trusted source defining `warm(*warm_args)`), `obj` is the `student` module and the
    measurement starts in a fresh worker where only `warm` has run (`StudentSession.afresh`): the
    module loads inside the block, and whatever it holds from its import or from a call in the
    block counts, so memory set aside before the measured call (a ballast) cannot be freed inside
    it to hide what the call builds; torch's first use of what `warm` computes is not counted."""
    if warm is not None:
        obj._session.afresh(obj._slot.name, warm.encode(), *warm_args)
    worker = obj._session.worker
    span = worker.reset_peak() if worker is not None and worker.alive else None
    if span is None:
        raise GraderFault(PEAK_UNAVAILABLE)
    measured = PeakMemory(source=span.source)
    try:
        yield measured
    except BaseException:
        worker.peak_since(span)  # releases what the span holds; the block's own failure stands
        raise
    growth = worker.peak_since(span) if worker is obj._session.worker else None
    if growth is None:
        raise GraderFault(PEAK_UNAVAILABLE)
    measured.growth = growth


def load_weights(module, state: dict[str, torch.Tensor], *, own_if_mismatched: bool = False) -> dict:
    """Load `state` into the submission's nn.Module (names it lacks are left alone, `strict=False`)
    and return the weights it now holds. Where its parameters have other shapes than `state`'s, a
    value check fails (the student's exception); a property check (`own_if_mismatched`) keeps the
    module's own weights and gets them back: a property is judged on the module as built."""
    try:
        module.load_state_dict(state, strict=False)
        return state
    except StudentCodeError as exc:
        if not own_if_mismatched or "size mismatch" not in exc.message:
            raise
    own = module.state_dict()
    return {k: v for k, v in own.items() if isinstance(v, torch.Tensor) and v.is_floating_point()}


def with_definitions(student, source: str, tag: str):
    """The student's module with trusted `source` appended (e.g. a correct version of one function),
    as a module of its own in the same sandbox: a later part is then graded as the student wrote it
    even where an earlier part it calls cannot answer (error carried forward). The student's own
    module is untouched; `tag` names the variant (one module per tag)."""
    return student._session.derive(student._slot.name, source.encode(), tag)


def with_siblings(student, provided: Mapping[str, str], tag: str):
    """The student's module as written, loaded as a module of its own in which the sibling modules
    named in `provided` (name -> trusted source, e.g. a correct exercise 4) replace the student's
    files of those names: a later exercise that imports an earlier one is graded on its own, not
    charged for the earlier one's mistakes (error carried forward). `tag` names the variant."""
    encoded = {name: source.encode() for name, source in provided.items()}
    return student._session.with_siblings(student._slot.name, encoded, tag)


def computes_in_half(out) -> torch.dtype | None:
    """float16 or bfloat16 when every value of `out` (8 or more, not all zero) is a number of that
    type, whatever dtype holds them: computed in half precision and cast back. Else None."""
    if not isinstance(out, torch.Tensor) or not out.is_floating_point() or out.numel() < 8:
        return None
    values = out.detach()
    if not bool(torch.isfinite(values).all()) or not bool(values.any()):
        return None
    for dtype in (torch.float16, torch.bfloat16):
        if values.dtype == dtype or bool(torch.equal(values, values.to(dtype).to(values.dtype))):
            return dtype
    return None


IGNORED_INPUT = Text(
    zh="改变 `{name}` 时你的输出完全不动，而 autograd 却给了它梯度（沿一个随机方向为 {autograd:.6g}）：前向计算没有用传给它的 `{name}`（例如在 forward 里重新初始化了它，或用别的值覆盖了它）。",
    en="Your output does not move at all when `{name}` changes, yet autograd gives it a gradient ({autograd:.6g} along a random direction): the forward pass does not use the `{name}` it was given (it re-initialises or overwrites it in forward, say).",
)


def smooth_difference(
    difference: Callable[[float], tuple[float, torch.dtype]],
    scale: float,
    numeric: float,
    rtol: float,
    size: float,
) -> tuple[float, float, float]:
    """(derivative, rtol, size) for a gradient that the fine difference refuted: the fine reading
    itself, unless the forward pass is not smooth at the fine step.

    A pass that rounds inside (half precision, say) moves in steps: at a fine step, the rounded part
    does not move at all and the difference sees only the rest. So the slope is read again at three
    wide steps (2.5%, 5% and 10% of the input's scale). Where their median agrees with the fine
    reading (within 5%), the pass is smooth and the fine reading stands, with its tolerance: a
    gradient off by a few per cent is refused. Where it does not, the pass rounds: the median is
    judged, with a 30% tolerance widened by three times their spread (what the rounding leaves
    unknown); a cut graph, which misses a whole term, is still refused."""
    wide = sorted(difference(f * scale)[0] for f in (0.025, 0.05, 0.1))
    if not all(math.isfinite(w) for w in wide):
        return numeric, rtol, size
    if abs(wide[1] - numeric) <= 5e-2 * max(abs(wide[1]), abs(numeric)) + size:
        return numeric, rtol, size  # smooth at the fine step: its reading stands, strictly
    return wide[1], 0.3, size + 3 * (wide[2] - wide[0])


def gradients_match_forward(
    forward: Callable[[dict[str, torch.Tensor]], torch.Tensor],
    point: Mapping[str, torch.Tensor],
    grads: Mapping[str, torch.Tensor | None],
    cotangent: torch.Tensor,
    rng: torch.Generator,
    *,
    missing: Text,
    wrong: Text,
    diagnosis: str | None = "no_gradient",
) -> None:
    """The student's gradients are the derivatives of the student's own forward pass.

    `forward(values)` runs the submission at `values` (a dict like `point`) and returns the output
    that `cotangent` weighs; `grads` holds the gradient the submission's autograd gave for each
    name at `point` (None where none arrived: zero, which is right for a tensor the forward pass
    does not use). For each name, along one random direction u, the central difference of
    <cotangent, forward> must equal <grad, u>: else `missing` when no gradient arrived, `wrong`
    (with {name}, {numeric}, {autograd}) when a wrong one did (part of the graph cut off), both
    named `diagnosis`. Judging
    against the student's own forward pass means a wrong forward pass costs nothing here: only a
    broken graph does.
    Inputs in float64 give differences exact to ~1e-9; a forward pass that computes in float32
    anyway gets a step and a tolerance that suit float32; a gradient the fine difference refutes is
    read again at wide steps before it is refused (`smooth_difference`: half precision inside).
    """
    largest = 0.0
    for name, value in point.items():
        given = grads.get(name)
        grad = torch.zeros_like(value) if given is None else tensor(given, f"{name}.grad", tuple(value.shape))
        direction = torch.randn(value.shape, generator=rng, dtype=torch.float64)
        direction /= direction.norm().clamp_min(1e-12)
        scale = float(value.detach().double().abs().max().clamp_min(1.0))

        def along(step: float, name=name, value=value, direction=direction) -> tuple[float, torch.dtype]:
            moved = dict(point, **{name: (value.double() + step * direction).to(value.dtype)})
            out = tensor(forward(moved), "output", tuple(cotangent.shape), finite=False)
            return float((out.double() * cotangent.double()).sum()), out.dtype

        def difference(step: float, along=along) -> tuple[float, torch.dtype]:
            plus, dtype = along(step)
            return (plus - along(-step)[0]) / (2 * step), dtype

        step = 1e-5 * scale if value.dtype == torch.float64 else 3e-3 * scale
        numeric, dtype = difference(step)
        autograd = float((grad.double() * direction).sum())
        if not (math.isfinite(numeric) and math.isfinite(autograd)):
            fail(wrong.format(name=name, numeric=numeric, autograd=autograd))
        rtol, atol = (1e-5, 1e-7) if dtype == torch.float64 and value.dtype == torch.float64 else (2e-2, 2e-4)
        size = float(cotangent.double().abs().sum()) * atol
        if abs(numeric - autograd) > rtol * max(abs(numeric), abs(autograd)) + size:
            numeric, rtol, size = smooth_difference(difference, scale, numeric, rtol, size)
        largest = max(largest, abs(numeric))
        if abs(numeric - autograd) > rtol * max(abs(numeric), abs(autograd)) + size:
            if given is None:  # nothing arrived, yet the output depends on it: the graph is cut
                fail(missing.format(name=name), diagnosis)
            if numeric == 0.0:  # the output ignores the value it was handed: no cut graph to name
                fail(IGNORED_INPUT.format(name=name, autograd=autograd), "given_value_ignored")
            fail(wrong.format(name=name, numeric=numeric, autograd=autograd), diagnosis)
    if largest == 0.0:  # a forward pass that depends on none of its inputs has no graph to judge
        fail(say("check.constant_output", name="output"))


# ---------------------------------------------------------------- the built-by-hand rule

TORCH_ATTENTION = Text(zh="torch 自带的注意力实现", en="torch's built-in attention")
DYNAMIC_ACCESS = Text(
    zh="第 {line} 行以动态方式访问 torch（{found}）；本题要求按名字直接调用你用到的函数。",
    en="Line {line} reaches into torch dynamically ({found}); this exercise asks you to call what you use by its name.",
)


UNREADABLE_SOURCE = Text(
    zh="你的文件里有一个表达式嵌套得太深，评分程序无法读取（{found}）；这条规则要靠读代码来检查，请把它写简单些。",
    en="Your file holds an expression nested too deeply for the grader to read ({found}); this rule is checked by"
    " reading your code, so write it more simply.",
)


INDIRECT_ACCESS = Text(
    zh="第 {line} 行绕道取用模块或属性（{found}）：经由别的对象取得解释器的内部（sys.modules、gc、栈帧），"
    "或按字符串名取属性（attrgetter、methodcaller）；本题要求按名字直接调用你用到的函数。",
    en="Line {line} takes a detour to a module or attribute ({found}): the interpreter's internals reached"
    " through another object (sys.modules, gc, stack frames) or an attribute named by a string (attrgetter,"
    " methodcaller); this exercise asks you to call what you use by its name.",
)


def by_hand_rule(
    task: Text, uses: Text = TORCH_ATTENTION, diagnosis: str = "uses_builtin_attention"
) -> dict[str, tuple[Text, str]]:
    """An exercise's built-by-hand rule: for each kind of `banned.Finding`, the message and the
    diagnosis. `task` says what the exercise asks to build ("build multi-head attention yourself"),
    `uses` what was used instead; the diagnosis ids must be declared in the manifest."""
    static = Text(
        zh=f"第 {{line}} 行用到了{uses.zh}（{{found}}）；本题要求{task.zh}。",
        en=f"Line {{line}} uses {uses.en} ({{found}}); this exercise asks you to {task.en}.",
    )
    ran = Text(
        zh=f"你的代码运行时调用了{uses.zh} {{found}}（第 {{line}} 行）；本题要求{task.zh}。",
        en=f"While your code ran, it called {uses.en} {{found}} (line {{line}}); this exercise asks you to {task.en}.",
    )
    return {
        "banned": (static, diagnosis),
        "dynamic": (DYNAMIC_ACCESS, "dynamic_torch_access"),
        "indirect": (INDIRECT_ACCESS, "dynamic_torch_access"),
        "tripwire": (ran, diagnosis),
        "unreadable": (UNREADABLE_SOURCE, "dynamic_torch_access"),
    }


def not_by_hand(findings: Sequence, rule: Mapping[str, tuple[Text, str]]) -> None:
    """Fail on the first finding of the built-by-hand rule (see `banned`), with `rule`'s words."""
    for finding in findings[:1]:
        text, diagnosis = rule[finding.kind]
        fail(
            text.format(found=finding.what, line=finding.line),
            diagnosis,
            found=finding.what,
            line=finding.line,
        )
