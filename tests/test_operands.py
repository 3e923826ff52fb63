"""The operand note under a student's shape error: read from torch's own messages, as this torch
words them (a torch that rewords one makes its test fail here, not a student's report go quiet),
and nothing but sizes taken from the message."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from graders.harness.core.errors import StudentCodeError
from graders.harness.core.operands import operand_note


def raised(thunk) -> str:
    with pytest.raises(RuntimeError) as caught:
        thunk()
    return str(caught.value)


q, k = torch.zeros(2, 5, 16), torch.zeros(2, 7, 16)

CASES = {  # what the student wrote -> sizes the note must give (en)
    "linear_weight_not_transposed": (
        lambda: torch.zeros(10, 6) @ torch.zeros(4, 6),
        ["(10×6)", "(4×6)", "6", "4"],
    ),
    "k_not_transposed": (lambda: torch.bmm(q, k), ["16", "7"]),
    "k_T_on_a_batch": (lambda: torch.bmm(q, k.permute(2, 1, 0)), ["2", "16"]),  # what k.T does
    "broadcast": (lambda: torch.zeros(2, 5, 7) + torch.zeros(2, 4, 7), ["axis 1", "5", "4"]),
    "view_wrong_size": (lambda: torch.zeros(2, 5, 6).view(2, 5, 4), ["[2, 5, 4]", "40", "60"]),
    "view_free_axis": (lambda: torch.zeros(2, 5, 6).view(-1, 7), ["[-1, 7]", "7", "60"]),
    "einsum": (lambda: torch.einsum("bld,bsd->bls", q, torch.zeros(2, 7, 8)), ["index d", "8", "16"]),
}


@pytest.mark.parametrize("case", CASES)
def test_a_shape_error_gets_the_operands_sizes_in_both_languages(case):
    thunk, sizes = CASES[case]
    note = operand_note(raised(thunk))
    assert note is not None, f"torch's message for {case} is no longer recognised"
    for size in sizes:
        assert size in note.en, (size, note.en)
    assert note.zh and note.zh != note.en


def test_the_note_is_shown_under_the_students_exception():
    message = raised(CASES["k_not_transposed"][0])
    shown = StudentCodeError("RuntimeError", message, where="line 12: scores = torch.bmm(q, k)")
    for text in (shown.text.en, shown.text.zh):
        assert "16" in text and "7" in text and "line 12" in text
    assert "second-to-last size should equal the left operand's last size, 16, and it is 7" in shown.text.en


def test_other_errors_get_no_note():
    assert operand_note("name 'torch' is not defined") is None
    assert operand_note(raised(lambda: torch.zeros(2).view(3, -1, -1))) is None


def without_digits(text: str) -> str:
    return "".join(c for c in text if not c.isdigit())


@pytest.mark.parametrize("case", CASES)
@given(before=st.text(max_size=40), after=st.text(max_size=40))
def test_text_around_a_shape_error_never_reaches_the_note(case, before, after):
    """A student can raise any message: of the text around a recognised phrase, at most digits
    next to its numbers can reach the note."""
    clean = raised(CASES[case][0])
    note, expected = operand_note(before + clean + after), operand_note(clean)
    for lang in ("en", "zh"):
        assert without_digits(getattr(note, lang)) == without_digits(getattr(expected, lang))
