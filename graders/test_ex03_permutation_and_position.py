"""Checks for exercise 3: token order, permutation equivariance and the sinusoidal encoding.

Each check judges one part (error carried forward): `restore_batched` accepts a batched restore that
does to each sample what the student's own single-sequence restore does; the loss of equivariance
once positions are added is judged on the student's encoding alone, with the grader's own batch,
layer and restore; the encoding's structure (interleaved sines and cosines sharing one angle per
pair, positions from 0) is judged whatever its frequencies, which the formula checks judge.

Permutations that are their own inverse (the lesson's reversed and shuffled orders) cannot tell
"undo" from "apply again", so every restore check also uses permutations that are not.
Sizes keep every dimension different (5 tokens, E = 6, B = 7) so that a wrong axis cannot hide.
The encoding is compared with float64 within 1e-4, which float32 arithmetic meets for these sizes.
"""

from functools import partial

import torch

from graders import positional as P
from graders.harness import Text, check
from graders.harness.core import expect
from graders.harness.core.errors import StudentFault, StudentNotImplemented
from graders.harness.core.i18n import say

EMBED = 6
PE_ATOL = 1e-4
KNOWN_ERRORS = {
    "pe_odd_cos_columns": r"(?s)must match the existing size.*\n.*1::2\]",
    "order_is_a_list": r"must be Tensor, not list",
    "negative_step": r"step must be greater than zero",
    # an index tensor of floats (torch.zeros(L) filled with positions, say)
    "index_not_integer": r"tensors used as indices must be long, int, byte,? or bool",
    # a sample of fewer than the 5 tokens stacked with full ones: its order list misses an index
    # math.sin / math.cos / math.exp (or a bare sin from `from math import sin`) given a tensor of many angles
    "math_on_tensor": r"(?s)only one element tensors can be converted to Python scalars.*\n[^\n]*"
    r"(\bmath\.\w+\(|(?<![\w.])(sin|cos|exp|log|sqrt|pow)\()",
    # an order written as a tuple, tokens[(0, 1, 2, 3, 4)]: one index per axis, not a list of rows
    "index_tuple_per_axis": r"too many indices for tensor of dimension",
    # torch.gather given an index with fewer dimensions than its input ((L, E) for a (B, L, E) batch)
    "gather_index_dims": r"Index tensor must have the same number of dimensions as input tensor",
    "sample_misses_token": r"stack expects each tensor to be equal size, but got "
    r"(\[5, \d+\] at entry \d+ and \[[1-4], \d+\]|\[[1-4], \d+\] at entry \d+ and \[5, \d+\])",
}
NON_INVOLUTION = [2, 0, 3, 1, 4]  # C A D B E: applying it twice is not the identity
# (3, 16) then (7, 16), and (7, 10) after (7, 16): a table kept from an earlier call with one size alike shows
PE_SHAPES = [(3, 16), (7, 16), (50, 12), (1, 6), (7, 10)]
FORMULA_SHAPES = [(50, 16), (9, 6), (24, 10)]
HIDDEN_PE_SHAPES = [(33, 10), (3, 20), (7, 9)]  # an odd d_model too

NOT_BOOL_TEXT = Text(
    zh="ORDER_CHANGES_CONTEXT 应为 True 或 False，实际得到 {got}。",
    en="ORDER_CHANGES_CONTEXT should be True or False, got {got}.",
)
WRONG_ANSWER_TEXT = Text(
    zh="ORDER_CHANGES_CONTEXT 的回答不对。",
    en="The answer ORDER_CHANGES_CONTEXT is wrong.",
)
NO_LOSS_TEXT = Text(
    zh="加上你的位置编码后，样本 {sample} 的上下文向量还原顺序后仍与样本 0 相同（最大差 {gap:.2g}）："
    "位置编码没有带来任何顺序信息。",
    en="With your positional encoding added, sample {sample}'s context vectors, restored, still equal "
    "sample 0's (largest difference {gap:.2g}): the encoding carries no order information.",
)
NONE_TEXT = Text(
    zh="`{name}` 返回了 None：是不是忘了写 return？",
    en="`{name}` returned None: did you forget `return`?",
)
STRUCTURE_TEXT = Text(
    zh="`{name}` 的列不是成对的 sin(pos·ωᵢ)、cos(pos·ωᵢ)（偶数列 sin、奇数列 cos，同一对共用一个角度，位置从 0 开始）。",
    en="The columns of `{name}` are not pairs sin(pos·ωᵢ), cos(pos·ωᵢ) (sines in even columns, cosines in odd"
    " ones, one angle per pair, positions from 0).",
)
LAST_SINE_TEXT = Text(
    zh="d_model 为奇数时，`{name}` 的最后一列应是一个正弦 sin(pos·ω)。",
    en="For an odd d_model the last column of `{name}` should be a sine, sin(pos·ω).",
)
CHANGES_TEXT = Text(
    zh="两次调用 `{name}` 得到的表不同（最大差 {err:.3g}）：位置编码应是固定的表。",
    en="Two calls of `{name}` gave different tables (largest difference {err:.3g}): the encoding should be a fixed table.",
)
TRAINABLE_TEXT = Text(
    zh="sinusoidal_positional_encoding({seq_len}, {d_model}) 返回的张量 requires_grad=True。",
    en="sinusoidal_positional_encoding({seq_len}, {d_model}) returned a tensor with requires_grad=True.",
)


def random_tokens(rng, embed=EMBED, count=5):
    return torch.randn(count, embed, generator=rng)  # (5, E), rows A..E


def random_cycle(rng, length):
    """A random permutation that is one cycle through every position, as a list: no position stays
    put and no power of it short of the length is the identity, so a restore that is wrong at any
    position, or any other power of the order, shows whatever the seed."""
    visit = torch.randperm(length, generator=rng).tolist()
    order = [0] * length
    for i, position in enumerate(visit):
        order[position] = visit[(i + 1) % length]
    return order


# ---------------------------------------------------------------- student calls


def batch_layouts(embed: int) -> dict:
    """The wrong layouts of the batch that still hold its three samples: diagnosis -> (shape, how to
    read the samples back as (3, 5, E))."""
    return {
        "stacked_wrong_dim": ((5, 3, embed), lambda t: t.transpose(0, 1)),
        "cat_instead_of_stack": ((15, embed), lambda t: t.reshape(3, 5, embed)),
    }


def student_batch(student, tokens):
    """make_order_batch(tokens) checked for type and exact shape (3, 5, E)."""
    embed = tokens.shape[-1]
    got = student.make_order_batch(tokens)
    wrong = {diagnosis: shape for diagnosis, (shape, _) in batch_layouts(embed).items()}
    return expect.tensor(
        got, "make_order_batch(tokens)", (3, 5, embed), shape_variants={**wrong, **feature_axis(embed)}
    )


def feature_axis(embed: int) -> dict[str, tuple[int, ...]]:
    """The shape of a batch whose orders index the features, tokens[:, order]: five of them per token."""
    return {"orders_on_feature_axis": (3, 5, 5)} if embed != 5 else {}


def check_batch_values(batch, tokens, expected=None):
    """Each sample holds the tokens in the lesson's order; a wrong order is named by its letters."""
    for sample, order in enumerate(P.LESSON_ORDERS):
        want = tokens[order] if expected is None else expected[sample]
        expect.close(
            batch[sample], want, f"make_order_batch(tokens)[{sample}]",
            variants={"reversed_wrong_dim": tokens.flip(-1), "reversed_both_dims": tokens.flip(0, -1),
                      "reversed_by_sorting": tokens.sort(dim=0, descending=True).values},
            estimators=[one_memory(batch, tokens), same_as_other_sample(batch, tokens, sample),
                        P.token_order_estimator(tokens, order, sample)],
        )  # fmt: skip


def one_memory(batch, tokens):
    """An estimator naming a batch whose three samples are one and the same tensor and no longer the
    tokens in their original order: the samples share one memory (tokens.expand(3, 5, E), or a list
    [t] * 3) and a write into one sample wrote into all of them."""

    def estimate(got):
        if not (isinstance(batch, torch.Tensor) and batch.dim() == 3 and batch.shape[0] == 3):
            return None
        alike = all(expect.largest_difference(batch[i], batch[0]) == 0 for i in (1, 2))
        if alike and expect.largest_difference(batch[0], tokens[P.LESSON_ORDERS[0]]) > 0:
            return "batch_samples_share_memory", {}
        return None

    return estimate


def same_as_other_sample(batch, tokens, sample: int):
    """An estimator naming a sample that holds another sample's tokens in that sample's own order,
    identical to it: built with its order, or changed by an in-place shuffle of a tensor both use
    (shuffled = tokens is no copy)."""

    def estimate(got):
        found = P.token_order(got, tokens)
        for other, order in enumerate(P.LESSON_ORDERS):
            if (
                found is not None
                and other != sample
                and found == list(order)
                and expect.largest_difference(got, batch[other]) == 0
            ):
                return "sample_shares_tokens", {"sample": sample, "other": other, "got": P.letters(found)}
        return None

    return estimate


def slots_astray(outputs, order):
    """An estimator naming a restore that is right but at one or two positions (a loop building the
    inverse that skips its first or last step, say): every row comes from `outputs`, a few at the
    wrong place."""

    def by_position(t: torch.Tensor) -> torch.Tensor:  # (..., L, E) -> (L, everything else)
        return t.detach().double().movedim(-2, 0).reshape(len(order), -1)

    source, expected = by_position(outputs), by_position(P.restore(outputs, order))

    def estimate(got):
        if not isinstance(got, torch.Tensor) or got.shape != outputs.shape:
            return None
        got = by_position(got)
        rows_known = all(bool(torch.isclose(row, source, atol=1e-6).all(-1).any()) for row in got)
        wrong = [i for i in range(len(order)) if not torch.allclose(got[i], expected[i], atol=1e-6)]
        if rows_known and 1 <= len(wrong) <= 2 < len(order):
            return "restore_slots_wrong", {"slots": ", ".join(map(str, wrong))}
        return None

    return estimate


def student_restore(student, outputs, order, label=None):
    label = label or f"restore_order(outputs, {order})"
    got = student.restore_order(outputs, list(order))
    expect.true(got is not None, NONE_TEXT.format(name="restore_order"), "returns_none")
    return got, label


def columns_sliced(table, seq_len: int, d_model: int) -> bool:
    """A longer table cut along the wrong axis: pe[:, :seq_len] of a (max_len, d_model) table (not
    the table transposed, which is read as meant)."""
    return (
        isinstance(table, torch.Tensor) and table.dim() == 2 and table.shape[0] > seq_len
        and table.shape[1] == min(seq_len, d_model) != d_model and tuple(table.shape) != (d_model, seq_len)
    )  # fmt: skip


def other_size(got, seq_len: int, d_model: int) -> dict[str, tuple[int, int]]:
    """A right table for other sizes that keep seq_len (or d_model, with fewer rows), as a shape
    variant: what a table kept from an earlier call gives (a cache keyed on one of the sizes alone)."""
    if not isinstance(got, torch.Tensor) or got.dim() != 2 or not got.is_floating_point() or got.numel() == 0:
        return {}
    rows, cols = got.shape
    if (rows, cols) in ((seq_len, d_model), (d_model, seq_len), (seq_len + 1, d_model)):
        return {}  # right, transposed, a row too many: read as meant or named otherwise
    if rows != seq_len and not (cols == d_model and rows < seq_len):
        return {}
    if not torch.allclose(got.detach().double(), P.sinusoidal(rows, cols), rtol=0, atol=PE_ATOL):
        return {}
    return {"pe_table_of_other_size": (rows, cols)}


def params_swapped(table, seq_len: int, d_model: int) -> bool:
    """The table of d_model positions of width seq_len: the right table for the two sizes swapped, as
    a function whose parameters are written (d_model, seq_len) computes it (not a transpose)."""
    return (
        isinstance(table, torch.Tensor)
        and table.dim() == 2
        and seq_len != d_model
        and tuple(table.shape) == (d_model, seq_len)
        and table.is_floating_point()
        and torch.allclose(table.detach().double(), P.sinusoidal(d_model, seq_len), rtol=0, atol=PE_ATOL)
    )


def as_numbers(got):
    """An integer tensor as float64: whole numbers are still a table of numbers (the value checks
    charge them); anything else as it is."""
    if isinstance(got, torch.Tensor) and not got.is_floating_point() and not got.is_complex():
        return got.double()
    return got


def any_table(got, name: str) -> torch.Tensor:
    """The student's table as a tensor of any shape (its shape is charged by `pe_shapes`)."""
    return expect.tensor(as_numbers(got), name)


def student_pe(student, seq_len, d_model, *, as_meant=True):
    """The student's table, checked for type and finiteness. `as_meant`: a table that is exactly
    transposed, or has rows to spare, is read as the (seq_len, d_model) table it means (`pe_shapes`
    charges the shape; checks of the encoding itself judge the encoding). Else the shape is exact."""
    name = f"sinusoidal_positional_encoding({seq_len}, {d_model})"
    got = student.sinusoidal_positional_encoding(seq_len, d_model)
    table = expect.tensor(as_numbers(got) if as_meant else got, name)
    if columns_sliced(table, seq_len, d_model):  # no reading of it is the table: name the cut
        expect.tensor(
            table, name, (seq_len, d_model), shape_variants={"pe_sliced_columns": tuple(table.shape)}
        )
    if as_meant and table.dim() > 2 and [n for n in table.shape if n != 1] == [seq_len, d_model]:
        table = table.reshape(seq_len, d_model)  # an axis of size 1 to spare (a batch axis, say)
    if params_swapped(table, seq_len, d_model):  # no reading of it is this table: the sizes are swapped
        expect.tensor(
            table, name, (seq_len, d_model), shape_variants={"pe_params_swapped": (d_model, seq_len)}
        )
    if as_meant and seq_len != d_model and tuple(table.shape) == (d_model, seq_len):
        table = table.T
    if as_meant and table.dim() == 2 and table.shape[0] > seq_len and table.shape[1] == d_model:
        table = table[:seq_len]
    kept = other_size(table, seq_len, d_model)  # a table kept from an earlier call of other sizes
    return expect.tensor(table, name, (seq_len, d_model), shape_variants=kept), name


def structure_atol(table: torch.Tensor) -> float:
    """PE_ATOL, or what the table's own dtype can hold if that is coarser (float16: ~1e-3)."""
    return max(PE_ATOL, 4 * torch.finfo(table.dtype).eps)


def check_pe_table(table, name, seq_len, d_model, expected=None, others=()):
    """The whole table against the formula; `others` are the student's tables for other sizes."""
    expected = P.sinusoidal(seq_len, d_model) if expected is None else expected
    estimators = [P.frequency_estimator(d_model, PE_ATOL, list(others))]  # half precision: expect names it
    expect.close(table, expected, name, rtol=0, atol=PE_ATOL, variants=partial(P.pe_variants, seq_len, d_model),
                 estimators=estimators)  # fmt: skip


def check_pe_structure(table, name, d_model):
    """Interleaved sin(pos·ωᵢ), cos(pos·ωᵢ) pairs from position 0, whatever the frequencies ωᵢ."""
    atol = structure_atol(table)
    if P.pair_frequencies(table, atol) is None:
        diagnosis = expect.find_variant(table, P.pe_variants(table.shape[0], d_model), 0, atol)
        expect.fail(STRUCTURE_TEXT.format(name=name), diagnosis)


# ---------------------------------------------------------------- the batch and restore_order


@check("batch_shape")
def test_batch_shape(student, rng):
    student_batch(student, random_tokens(rng))


def batch_as_meant(student, tokens) -> torch.Tensor:
    """make_order_batch(tokens) read as its three samples, whatever the layout (`batch_shape` charges
    the layout): a list of three tensors, the samples stacked along dim 1, or concatenated."""
    embed = tokens.shape[-1]
    got = student.make_order_batch(tokens)
    if isinstance(got, (list, tuple)) and len(got) == 3 and all(isinstance(t, torch.Tensor) for t in got):
        got = [expect.tensor(t, f"make_order_batch(tokens)[{i}]", (5, embed)) for i, t in enumerate(got)]
        return torch.stack(got)
    got = expect.tensor(got, "make_order_batch(tokens)", finite=False)
    read = {shape: back for shape, back in batch_layouts(embed).values()}.get(tuple(got.shape))
    if read:
        return read(got)
    return expect.tensor(got, "make_order_batch(tokens)", (3, 5, embed), shape_variants=feature_axis(embed))


@check("batch_orders")
def test_batch_orders(student, rng):
    for embed in (EMBED, 4):
        tokens = random_tokens(rng, embed)
        check_batch_values(batch_as_meant(student, tokens), tokens)


@check("restore_single")
def test_restore_single(student, rng):
    # two different orders of the same length in one run: a restore that keeps something from one call
    # to the next (an inverse cached by the length alone) undoes the second with the first's inverse
    orders = (NON_INVOLUTION, random_cycle(rng, len(NON_INVOLUTION)), random_cycle(rng, 7))
    for done, order in enumerate(orders):
        outputs = torch.randn(len(order), EMBED, generator=rng)  # (L, E), rows in the permuted order
        got, label = student_restore(student, outputs, order)
        plain = (list(range(len(order))), list(range(len(order)))[::-1])  # other mistakes' (nothing, a flip)
        earlier = [o for o in [*orders[:done], *P.LESSON_ORDERS] if len(o) == len(order) and list(o) != list(order)
                   and list(o) not in plain]  # fmt: skip
        variants = {
            "restore_forward_instead_of_inverse": outputs[order],
            "restore_applied_twice": outputs[[order[i] for i in order]],
            "restore_reversed_order": outputs[order[::-1]],
            "restore_flips": outputs.flip(-2),
            "restore_does_nothing": outputs,
            "restore_feature_dim": outputs[:, P.inverse(order)] if EMBED >= len(order) else None,
            "restore_inverse_reversed": outputs[P.inverse(order)[::-1]],  # argsort(descending=True)
            "restore_kept_between_calls": [outputs[P.inverse(o)] for o in earlier] or None,
        }
        expect.close(got, P.restore(outputs, order), label, variants=variants,
                     estimators=[slots_astray(outputs, order)])  # fmt: skip


@check("restore_batched")
def test_restore_batched(student, rng):
    for batch, order, embed in ((7, NON_INVOLUTION, EMBED), (3, random_cycle(rng, 8), 4)):
        outputs = torch.randn(batch, len(order), embed, generator=rng)  # (B, L, E)
        got, label = student_restore(student, outputs, order)
        variants = {
            "restore_forward_instead_of_inverse": outputs[:, order],
            "restore_wrong_dim": outputs[P.inverse(order)] if batch >= len(order) else None,
        }
        expect.close(got, P.restore(outputs, order), label, variants=variants,
                     readings=[own_per_sample(student, outputs, order)])  # fmt: skip


def own_per_sample(student, outputs, order):
    """What the student's own (L, E) restore does to each sample, stacked (None if it cannot say):
    a batched restore that does the same is right for this check, whatever that restore does."""
    rows = []
    for sample in outputs:
        try:
            row, _ = student_restore(student, sample, order)
        except StudentFault:
            return None
        if not isinstance(row, torch.Tensor) or tuple(row.shape) != tuple(sample.shape):
            return None
        rows.append(row.detach().double())
    return torch.stack(rows)


@check("order_answer")
def test_order_answer(student):
    answer = student.ORDER_CHANGES_CONTEXT
    if answer is None:
        raise StudentNotImplemented(say("check.not_implemented", name="ORDER_CHANGES_CONTEXT"))
    expect.true(type(answer) is bool, NOT_BOOL_TEXT.format(got=repr(answer)[:60]),
                "answer_is_string" if isinstance(answer, str) else None)  # fmt: skip
    expect.true(answer is False, WRONG_ANSWER_TEXT, "order_answer_wrong")


# ---------------------------------------------------------------- the loss of equivariance


@check("positions_break_equivariance")
def test_positions_break_equivariance(student, rng):
    tokens = random_tokens(rng)
    state = P.attention_layer(EMBED, rng)
    batch = torch.stack([tokens[order] for order in P.LESSON_ORDERS])  # (3, 5, E): the grader's own
    table, _ = student_pe(student, 5, EMBED)  # read as meant: `pe_shapes` charges the shape
    positioned = P.self_attention(batch.double() + table.detach().double(), state)  # (3, 5, E)
    for sample, order in list(enumerate(P.LESSON_ORDERS))[1:]:
        restored = P.restore(positioned[sample], order)
        gap = float((restored - positioned[0]).abs().max())
        diagnosis = "pe_ignores_position" if P.rows_all_equal(table) else None
        expect.true(gap > 1e-6, NO_LOSS_TEXT.format(sample=sample, gap=gap), diagnosis)


# ---------------------------------------------------------------- the sinusoidal table


@check("pe_shapes")
def test_pe_shapes(student):
    for seq_len, d_model in PE_SHAPES:
        name = f"sinusoidal_positional_encoding({seq_len}, {d_model})"
        got = student.sinusoidal_positional_encoding(seq_len, d_model)
        got = as_numbers(got)  # the shape is judged here; whole numbers are charged by the value checks
        swapped = "pe_params_swapped" if params_swapped(got, seq_len, d_model) else "pe_transposed"
        wrong = {swapped: (d_model, seq_len), "pe_extra_row": (seq_len + 1, d_model)}
        if columns_sliced(got, seq_len, d_model):
            wrong["pe_sliced_columns"] = tuple(got.shape)
        wrong |= other_size(got, seq_len, d_model)
        expect.tensor(got, name, (seq_len, d_model), shape_variants=wrong)


@check("pe_first_row")
def test_pe_first_row(student):
    for d_model in (8, 6):
        name = f"sinusoidal_positional_encoding(4, {d_model})"
        table = any_table(student.sinusoidal_positional_encoding(4, d_model), name)
        if table.dim() == 2 and table.shape[0] == 4 and table.shape[1] not in (d_model, 4):
            # 4 rows of another width (`pe_shapes` charges the width): row 0 is judged at its own width
            d_model = table.shape[1]
        else:
            table, name = student_pe(student, 4, d_model)
        variants = {diagnosis: wrong[0] for diagnosis, wrong in P.pe_variants(4, d_model).items()}
        # row 0 alone cannot tell "every row is the row of position 1" from "positions counted from 1"
        del variants["pe_positions_from_one" if P.rows_all_equal(table) else "pe_ignores_position"]
        expect.close(
            table[0], P.sinusoidal(4, d_model)[0], f"{name}[0]", rtol=0, atol=PE_ATOL, variants=variants
        )


@check("pe_sin_even_cos_odd")
def test_pe_sin_even_cos_odd(student):
    for seq_len, d_model in ((12, 10), (7, 16)):
        name = f"sinusoidal_positional_encoding({seq_len}, {d_model})"
        got = as_numbers(student.sinusoidal_positional_encoding(seq_len, d_model))
        if other_size(got, seq_len, d_model) or params_swapped(got, seq_len, d_model):
            continue  # the right table for other sizes (`pe_shapes` charges them): its columns are right
        table, name = student_pe(student, seq_len, d_model)
        check_pe_structure(table, name, d_model)


@check("pe_matches_formula")
def test_pe_matches_formula(student):
    tables = [student_pe(student, seq_len, d_model) for seq_len, d_model in FORMULA_SHAPES]
    for (seq_len, d_model), (table, name) in zip(FORMULA_SHAPES, tables, strict=True):
        others = [t for t, _ in tables if t is not table]
        check_pe_table(table, name, seq_len, d_model, others=others)


@check("pe_odd_d_model")
def test_pe_odd_d_model(student):
    table, name = student_pe(student, 6, 7)
    atol = structure_atol(table)
    expect.true(P.last_column_is_sine(table, atol), LAST_SINE_TEXT.format(name=name),
                expect.find_variant(table, P.pe_variants(6, 7), 0, atol))  # fmt: skip


@check("pe_not_trainable")
def test_pe_not_trainable(student):
    seq_len, d_model = 5, 8
    name = f"sinusoidal_positional_encoding({seq_len}, {d_model})"
    first = any_table(student.sinusoidal_positional_encoding(seq_len, d_model), name)
    expect.true(
        not first.requires_grad, TRAINABLE_TEXT.format(seq_len=seq_len, d_model=d_model), "pe_trainable"
    )
    with expect.fresh_draws(student):  # a fixed table: no randomness in it either
        second = any_table(student.sinusoidal_positional_encoding(seq_len, d_model), name)
    expect.tensor(second, name, tuple(first.shape))  # two calls, two shapes: not one fixed table
    err = expect.largest_difference(first, second)
    expect.true(err == 0.0, CHANGES_TEXT.format(name=name, err=err), "pe_random")


# ---------------------------------------------------------------- hidden: against the reference


@check("pe_matches_reference")
def test_pe_matches_reference(student, reference):
    tables = [student_pe(student, seq_len, d_model) for seq_len, d_model in HIDDEN_PE_SHAPES]
    for (seq_len, d_model), (table, name) in zip(HIDDEN_PE_SHAPES, tables, strict=True):
        expected = reference.sinusoidal_positional_encoding(seq_len, d_model).double()
        others = [t for t, _ in tables if t is not table]
        check_pe_table(table, name, seq_len, d_model, expected, others)


@check("orders_match_reference")
def test_orders_match_reference(student, reference, rng):
    tokens = random_tokens(rng, 7)
    batch = student_batch(student, tokens)
    check_batch_values(batch, tokens, reference.make_order_batch(tokens.double()))
    order = random_cycle(rng, 9)
    outputs = torch.randn(2, 9, 3, generator=rng)  # (B, L, E)
    got, label = student_restore(student, outputs, order)
    expect.close(got, reference.restore_order(outputs.double(), list(order)), label,
                 variants={"restore_forward_instead_of_inverse": outputs[:, order],
                           "restore_inverse_reversed": outputs[:, P.inverse(order)[::-1]]},
                 estimators=[slots_astray(outputs, order)])  # fmt: skip
