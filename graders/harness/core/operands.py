# ruff: noqa: E501  (a bilingual sentence reads better whole, on one line, as in i18n.py)
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

from .i18n import Text

MATRIX = re.compile(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)")
BATCHED = re.compile(
    r"Expected size for first two dimensions of batch2 tensor to be: \[(\d+), (\d+)\] but got: \[(\d+), (\d+)\]"
)
BROADCAST = re.compile(
    r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton dimension (\d+)"
)
VIEW = re.compile(r"shape '\[(-?\d+(?:, -?\d+)*)\]' is invalid for input of size (\d+)")
EINSUM = re.compile(
    r"subscript (\w) has size (\d+) for operand (\d+) which does not broadcast with previously seen size (\d+)"
)

MATRIX_TEXT = Text(
    zh="torch 把这个乘积看成 ({a}×{b}) 乘 ({c}×{d})（左边的前导维并入了行）：左边操作数的最后一维 {b} 应等于右边操作数的第一维 {c}。左右两个之中有一个形状不对：少了或多了一次转置，或者用错了张量。（对 nn.Linear 或 F.linear，右边是它的权重转置后的 (in_features×out_features)。）",
    en="torch saw this product as ({a}×{b}) times ({c}×{d}) (the left operand's leading axes folded into its rows): the left operand's last size, {b}, must equal the right operand's first, {c}. One of the two has the wrong shape: a transpose missing or one too many, or the wrong tensor. (For nn.Linear or F.linear, the right one is its weight transposed, in_features×out_features.)",
)
BATCHED_INNER_TEXT = Text(
    zh="这是一个批量矩阵乘法：右边操作数的倒数第二维应等于左边操作数的最后一维 {want}，实际是 {got}。多半是右边少了（或多了）一次 transpose(-2, -1)，或者右边用错了张量。",
    en="In this batched matrix product the right operand's second-to-last size should equal the left operand's last size, {want}, and it is {got}: most likely a transpose(-2, -1) missing (or one too many) on the right, or the wrong tensor there.",
)
BATCHED_BATCH_TEXT = Text(
    zh="这是一个批量矩阵乘法：两边的批次大小（最后两维之前所有维的乘积）不同，左边 {want}，右边 {got}。某一边的批次维被换走或丢掉了（例如对三维张量用了 .T）。",
    en="In this batched matrix product the two operands' batch sizes (all axes before the last two, multiplied) differ: {want} on the left, {got} on the right. One side's batch axes were moved or lost (a .T on a 3-D tensor, say).",
)
BROADCAST_TEXT = Text(
    zh="两个操作数在 torch 对齐的第 {dim} 维（从 0 数；矩阵乘法时只数批次维）上大小不同：左边（第一个）是 {a}，右边（第二个）是 {b}；同一维的大小必须相等，或其中一个为 1。",
    en="The two operands differ along axis {dim} of the shapes torch lined up (from 0; for a matrix product, of the batch axes): {a} for the first (left) one, {b} for the second (right). Sizes along one axis must be equal, or one of them 1.",
)
VIEW_TEXT = Text(
    zh="view/reshape 要的形状 [{shape}] 需要 {need} 个元素，而这个张量有 {size} 个：要的各维之积必须等于 {size}。被重塑的张量和你以为的形状不一样，或者要的形状里有一维写错了。",
    en="view/reshape asked for shape [{shape}], which holds {need} elements, and the tensor has {size}: the sizes asked for must multiply to {size}. Either the tensor reshaped is not the shape you think, or one size in the new shape is wrong.",
)
VIEW_FREE_TEXT = Text(
    zh="view/reshape 要的形状 [{shape}] 中除 -1 以外各维之积是 {known}，它不能整除这个张量的元素个数 {size}：被重塑的张量和你以为的形状不一样，或者要的形状里有一维写错了。",
    en="In the shape view/reshape asked for, [{shape}], the sizes other than -1 multiply to {known}, which does not divide the tensor's {size} elements: either the tensor reshaped is not the shape you think, or one size in the new shape is wrong.",
)
EINSUM_TEXT = Text(
    zh="einsum 的下标 {letter} 在第 {operand} 个操作数（从 0 数）上是 {got}，在前面的操作数上是 {want}：同一个下标在每个操作数上的大小必须相同。",
    en="einsum's index {letter} has size {got} in operand {operand} (counting from 0) and {want} in an earlier one: one index must have the same size in every operand.",
)


def operand_note(message: str) -> Text | None:
    """A sentence naming the operands' sizes that torch's shape error `message` gives, or None."""
    if found := MATRIX.search(message):
        a, b, c, d = found.groups()
        return MATRIX_TEXT.format(a=a, b=b, c=c, d=d)
    if found := BATCHED.search(message):
        want_batch, want_inner, got_batch, got_inner = found.groups()
        if want_batch != got_batch:
            return BATCHED_BATCH_TEXT.format(want=want_batch, got=got_batch)
        return BATCHED_INNER_TEXT.format(want=want_inner, got=got_inner)
    if found := BROADCAST.search(message):
        a, b, dim = found.groups()
        return BROADCAST_TEXT.format(a=a, b=b, dim=dim)
    if found := VIEW.search(message):
        sizes = [int(n) for n in found.group(1).split(", ")]
        size = found.group(2)
        shape = ", ".join(str(n) for n in sizes)
        known = math.prod(n for n in sizes if n != -1)
        if -1 in sizes:
            return VIEW_FREE_TEXT.format(shape=shape, known=known, size=size)
        return VIEW_TEXT.format(shape=shape, need=known, size=size)
    if found := EINSUM.search(message):
        letter, got, operand, want = found.groups()
        return EINSUM_TEXT.format(letter=letter, got=got, operand=operand, want=want)
    return None
