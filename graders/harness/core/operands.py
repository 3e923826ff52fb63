"""Which operand's shape torch's error message names, said plainly.

When the student's code raises a shape error (a product whose inner sizes differ, a broadcast that
cannot be done, a view to a shape of another size), torch's message gives the sizes it saw in its
own terms ("mat1 and mat2", "batch2", "tensor a", "tensor b"). `operand_note` turns the sizes the
message gives into one sentence about the left and right operands of the line that raised, shown
under the exception. Only numbers are read from the message (digits, nothing else), so a message
the student wrote cannot put text of its own into the note.
"""

from __future__ import annotations

import math
import re

from .i18n import Text, say

MATRIX = re.compile(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)")
BATCHED = re.compile(
    r"Expected size for first two dimensions of batch2 tensor to be: "
    r"\[(\d+), (\d+)\] but got: \[(\d+), (\d+)\]"
)
BROADCAST = re.compile(
    r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) "
    r"at non-singleton dimension (\d+)"
)
VIEW = re.compile(r"shape '\[(-?\d+(?:, -?\d+)*)\]' is invalid for input of size (\d+)")
EINSUM = re.compile(
    r"subscript (\w) has size (\d+) for operand (\d+) "
    r"which does not broadcast with previously seen size (\d+)"
)


def operand_note(message: str) -> Text | None:
    """A sentence naming the operands' sizes that torch's shape error `message` gives, or None."""
    if found := MATRIX.search(message):
        a, b, c, d = found.groups()
        return say("run.operands.matrix", a=a, b=b, c=c, d=d)
    if found := BATCHED.search(message):
        want_batch, want_inner, got_batch, got_inner = found.groups()
        if want_batch != got_batch:
            return say("run.operands.batched_batch", want=want_batch, got=got_batch)
        return say("run.operands.batched_inner", want=want_inner, got=got_inner)
    if found := BROADCAST.search(message):
        a, b, dim = found.groups()
        return say("run.operands.broadcast", a=a, b=b, dim=dim)
    if found := VIEW.search(message):
        sizes = [int(n) for n in found.group(1).split(", ")]
        size = found.group(2)
        shape = ", ".join(str(n) for n in sizes)
        known = math.prod(n for n in sizes if n != -1)
        if -1 in sizes:
            return say("run.operands.view_free", shape=shape, known=known, size=size)
        return say("run.operands.view", shape=shape, need=known, size=size)
    if found := EINSUM.search(message):
        letter, got, operand, want = found.groups()
        return say("run.operands.einsum", letter=letter, got=got, operand=operand, want=want)
    return None
