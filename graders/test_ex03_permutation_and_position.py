"""Checks for exercise 3: token order, permutation equivariance and the sinusoidal encoding.

The equivariance checks run a one-head self-attention layer built here, on the trusted side, with
seeded weights, on the batch the student's `make_order_batch` made, and undo the orders with the
student's `restore_order`: without positions the restored contexts must equal the original ones,
and with the student's encoding added they must not. `order` is always sent as a list of ints.
Permutations that are their own inverse (the lesson's reversed and shuffled orders) cannot tell
"undo" from "apply again", so every restore check also uses permutations that are not.

Sizes keep every dimension different (5 tokens, E = 6, B = 7) so that a wrong axis cannot hide.
The encoding is compared with float64 within 1e-4, which float32 arithmetic meets for these sizes.
"""

import torch

from graders import positional as P
from graders.harness import Text, check, expect
from graders.harness.errors import StudentNotImplemented
from graders.harness.i18n import say

EMBED = 6
PE_ATOL = 1e-4
NON_INVOLUTION = [2, 0, 3, 1, 4]  # C A D B E: applying it twice is not the identity
PE_SHAPES = [(7, 16), (50, 12), (1, 6)]
FORMULA_SHAPES = [(50, 16), (9, 6), (24, 10)]
HIDDEN_PE_SHAPES = [(33, 10), (3, 20)]

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
TRAINABLE_TEXT = Text(
    zh="sinusoidal_positional_encoding({seq_len}, {d_model}) 返回的张量 requires_grad=True。",
    en="sinusoidal_positional_encoding({seq_len}, {d_model}) returned a tensor with requires_grad=True.",
)


def random_tokens(rng, embed=EMBED, count=5):
    return torch.randn(count, embed, generator=rng)  # (5, E), rows A..E


def random_non_involution(rng, length):
    """A random permutation that is not its own inverse, as a list."""
    while True:
        order = torch.randperm(length, generator=rng).tolist()
        if P.inverse(order) != order:
            return order


# ---------------------------------------------------------------- student calls


def student_batch(student, tokens):
    """make_order_batch(tokens) checked for type and exact shape (3, 5, E)."""
    embed = tokens.shape[-1]
    got = student.make_order_batch(tokens)
    return expect.tensor(got, "make_order_batch(tokens)", (3, 5, embed),
                         shape_variants={"stacked_wrong_dim": (5, 3, embed)})  # fmt: skip


def check_batch_values(batch, tokens, expected=None):
    """Each sample holds the tokens in the lesson's order; a wrong order is named by its letters."""
    for sample, order in enumerate(P.LESSON_ORDERS):
        want = tokens[order] if expected is None else expected[sample]
        expect.close(
            batch[sample], want, f"make_order_batch(tokens)[{sample}]",
            variants={"reversed_wrong_dim": tokens.flip(-1)},
            estimators=[P.token_order_estimator(tokens, order, sample)],
        )  # fmt: skip


def student_restore(student, outputs, order, label=None):
    label = label or f"restore_order(outputs, {order})"
    return student.restore_order(outputs, list(order)), label


def student_pe(student, seq_len, d_model):
    """The student's table, checked for type, exact shape and finiteness."""
    name = f"sinusoidal_positional_encoding({seq_len}, {d_model})"
    got = student.sinusoidal_positional_encoding(seq_len, d_model)
    return expect.tensor(
        got, name, (seq_len, d_model), shape_variants={"pe_transposed": (d_model, seq_len)}
    ), name


def check_pe_table(table, name, seq_len, d_model, expected=None):
    expected = P.sinusoidal(seq_len, d_model) if expected is None else expected
    expect.close(table, expected, name, rtol=0, atol=PE_ATOL, variants=P.pe_variants(seq_len, d_model))


# ---------------------------------------------------------------- the batch and restore_order


@check("batch_shape")
def test_batch_shape(student, rng):
    student_batch(student, random_tokens(rng))


@check("batch_orders")
def test_batch_orders(student, rng):
    for embed in (EMBED, 4):
        tokens = random_tokens(rng, embed)
        check_batch_values(student_batch(student, tokens), tokens)


@check("restore_single")
def test_restore_single(student, rng):
    for order in (NON_INVOLUTION, random_non_involution(rng, 7)):
        outputs = torch.randn(len(order), EMBED, generator=rng)  # (L, E), rows in the permuted order
        got, label = student_restore(student, outputs, order)
        expect.close(got, P.restore(outputs, order), label,
                     variants={"restore_forward_instead_of_inverse": outputs[order]})  # fmt: skip


@check("restore_batched")
def test_restore_batched(student, rng):
    batch, order = 7, NON_INVOLUTION
    outputs = torch.randn(batch, len(order), EMBED, generator=rng)  # (B, L, E)
    got, label = student_restore(student, outputs, order)
    variants = {
        "restore_forward_instead_of_inverse": outputs[:, order],
        "restore_wrong_dim": outputs[P.inverse(order)],  # (L, L, E): the batch dimension permuted
    }
    expect.close(got, P.restore(outputs, order), label, variants=variants)
    order = random_non_involution(rng, 8)
    outputs = torch.randn(3, 8, 4, generator=rng)  # (B, L, E)
    got, label = student_restore(student, outputs, order)
    expect.close(got, P.restore(outputs, order), label,
                 variants={"restore_forward_instead_of_inverse": outputs[:, order]})  # fmt: skip


@check("order_answer")
def test_order_answer(student):
    answer = student.ORDER_CHANGES_CONTEXT
    if answer is None:
        raise StudentNotImplemented(say("not_implemented", name="ORDER_CHANGES_CONTEXT"))
    expect.true(type(answer) is bool, NOT_BOOL_TEXT.format(got=repr(answer)[:60]))
    expect.true(answer is False, WRONG_ANSWER_TEXT, "order_answer_wrong")


# ---------------------------------------------------------------- equivariance and its loss


def restored_contexts(student, contexts, orders):
    """The student's restore_order applied to each permuted sample's context vectors."""
    out = []
    for sample, order in orders:
        got, label = student_restore(
            student, contexts[sample], order, f"restore_order(context[{sample}], {order})"
        )
        out.append((sample, order, label, got))
    return out


def expect_equivariance(student, contexts, original, orders):
    """Each restored context equals the original one (the order does not change any token's context)."""
    for sample, order, label, got in restored_contexts(student, contexts, orders):
        expect.close(got, original, f"{label} vs context[0]",
                     variants={"restore_forward_instead_of_inverse": contexts[sample][order]})  # fmt: skip


@check("equivariance_without_positions")
def test_equivariance_without_positions(student, rng):
    tokens = random_tokens(rng)
    state = P.attention_layer(EMBED, rng)
    batch = student_batch(student, tokens)
    check_batch_values(batch, tokens)
    contexts = P.self_attention(batch, state)  # (3, 5, E), float64
    expect_equivariance(student, contexts, contexts[0], list(enumerate(P.LESSON_ORDERS))[1:])
    extra = P.self_attention(tokens[NON_INVOLUTION], state)[None]  # (1, 5, E)
    expect_equivariance(student, extra, contexts[0], [(0, NON_INVOLUTION)])


@check("positions_break_equivariance")
def test_positions_break_equivariance(student, rng):
    tokens = random_tokens(rng)
    state = P.attention_layer(EMBED, rng)
    batch = student_batch(student, tokens)
    check_batch_values(batch, tokens)
    table, _ = student_pe(student, 5, EMBED)
    plain = P.self_attention(batch, state)  # (3, 5, E)
    orders = list(enumerate(P.LESSON_ORDERS))[1:]
    expect_equivariance(student, plain, plain[0], orders)  # restore_order works on this batch
    positioned = P.self_attention(batch.detach().double() + table.detach().double(), state)  # (3, 5, E)
    for sample, _, label, got in restored_contexts(student, positioned, orders):
        got = expect.tensor(got, label, (5, EMBED))
        gap = float((got.detach().double() - positioned[0]).abs().max())
        expect.true(gap > 1e-3, NO_LOSS_TEXT.format(sample=sample, gap=gap), "pe_ignores_position")


# ---------------------------------------------------------------- the sinusoidal table


@check("pe_shapes")
def test_pe_shapes(student):
    for seq_len, d_model in PE_SHAPES:
        student_pe(student, seq_len, d_model)


@check("pe_first_row")
def test_pe_first_row(student):
    for d_model in (8, 6):
        table, name = student_pe(student, 4, d_model)
        variants = {diagnosis: wrong[0] for diagnosis, wrong in P.pe_variants(4, d_model).items()}
        if not P.rows_all_equal(table):  # row 0 alone cannot tell this from positions counted from 1
            del variants["pe_ignores_position"]
        expect.close(
            table[0], P.sinusoidal(4, d_model)[0], f"{name}[0]", rtol=0, atol=PE_ATOL, variants=variants
        )


@check("pe_sin_even_cos_odd")
def test_pe_sin_even_cos_odd(student):
    seq_len, d_model = 12, 10
    table, name = student_pe(student, seq_len, d_model)
    variants = P.pe_variants(seq_len, d_model)
    expect.close(table[:, :2], P.sinusoidal(seq_len, d_model)[:, :2], f"{name}[:, 0:2]",
                 rtol=0, atol=PE_ATOL, variants={k: v[:, :2] for k, v in variants.items()})  # fmt: skip
    norms = P.pair_norms(table)
    norm_variants = {k: P.pair_norms(v) for k, v in variants.items()}
    expect.close(norms, torch.ones_like(norms), f"{name}[:, 2i]² + {name}[:, 2i+1]²",
                 rtol=0, atol=2 * PE_ATOL, variants=norm_variants)  # fmt: skip


@check("pe_matches_formula")
def test_pe_matches_formula(student):
    for seq_len, d_model in FORMULA_SHAPES:
        table, name = student_pe(student, seq_len, d_model)
        check_pe_table(table, name, seq_len, d_model)


@check("pe_odd_d_model")
def test_pe_odd_d_model(student):
    table, name = student_pe(student, 6, 7)
    check_pe_table(table, name, 6, 7)


@check("pe_not_trainable")
def test_pe_not_trainable(student):
    seq_len, d_model = 5, 8
    table, name = student_pe(student, seq_len, d_model)
    expect.true(
        not table.requires_grad, TRAINABLE_TEXT.format(seq_len=seq_len, d_model=d_model), "pe_trainable"
    )
    check_pe_table(table, name, seq_len, d_model)


# ---------------------------------------------------------------- hidden: against the reference


@check("pe_matches_reference")
def test_pe_matches_reference(student, reference):
    for seq_len, d_model in HIDDEN_PE_SHAPES:
        table, name = student_pe(student, seq_len, d_model)
        expected = reference.sinusoidal_positional_encoding(seq_len, d_model).double()
        check_pe_table(table, name, seq_len, d_model, expected)


@check("orders_match_reference")
def test_orders_match_reference(student, reference, rng):
    tokens = random_tokens(rng, 7)
    batch = student_batch(student, tokens)
    check_batch_values(batch, tokens, reference.make_order_batch(tokens.double()))
    order = random_non_involution(rng, 9)
    outputs = torch.randn(2, 9, 3, generator=rng)  # (B, L, E)
    got, label = student_restore(student, outputs, order)
    expect.close(got, reference.restore_order(outputs.double(), list(order)), label,
                 variants={"restore_forward_instead_of_inverse": outputs[:, order]})  # fmt: skip
