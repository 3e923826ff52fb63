"""One sandboxed worker per submission: its exercises share it, yet a failure costs only its own checks.

`StudentSession` loads each exercise's module into the submission's worker on first use. These
tests pin what sharing must not change: a module that fails to load (or kills the worker while
loading) fails only its own exercise; a crash replaces the worker and the other modules load again;
objects from a replaced worker are refused as stale; each exercise keeps its own call deadline, its
own printed output, and the torch state (seed, grad mode, default dtype) a worker of its own would
have given it.
"""

from __future__ import annotations

import time

import pytest
from conftest import EXERCISES, PROJECT, reference_files

from graders.harness.core.errors import StudentCodeError, StudentCrash, StudentTimeout, SubmissionFileError
from graders.harness.core.student import StudentSession

EX1, EX2, EX3, EX4 = EXERCISES[:4]


def source(exercise: str) -> str:
    return PROJECT.reference_path(exercise).read_text(encoding="utf-8")


def by_id(report) -> dict:
    return {e.id: e for e in report.exercises}


@pytest.fixture
def spawns(pool, monkeypatch):
    """Counts the workers forked while a test grades, but for the fresh worker a peak-memory
    measurement starts from (`StudentSession.afresh`: ex06's `chunked_peak_memory`)."""
    count = {"n": 0}
    real, afresh = pool.spawn, StudentSession.afresh

    def counting(seed: int = 0):
        count["n"] += 1
        return real(seed)

    def measuring(self, *args, **kwargs):
        count["n"] -= 1
        return afresh(self, *args, **kwargs)

    monkeypatch.setattr(pool, "spawn", counting)
    monkeypatch.setattr(StudentSession, "afresh", measuring)
    return count


def test_one_worker_serves_every_exercise_of_a_submission(grade_files, spawns):
    report = grade_files(reference_files())
    assert report.score == report.max_score > 0
    assert spawns["n"] == 1
    assert report.isolation and report.isolation_level != "none"


def test_a_module_that_kills_the_worker_while_loading_fails_only_its_own_exercise(grade_files, spawns):
    files = {**reference_files(), f"{EX1}.py": "import torch\ntorch.os._exit(3)\n"}
    exercises = by_id(grade_files(files))
    assert exercises[EX1].score == 0
    assert {c.status for c in exercises[EX1].checks} == {"failed"}
    for other in (EX2, EX3, EX4):
        assert exercises[other].score == exercises[other].max_score > 0, other
    assert spawns["n"] == 2  # the load killed the first; the others share the second


def test_a_module_with_a_syntax_error_fails_only_its_own_exercise(grade_files, spawns):
    files = {**reference_files(), f"{EX3}.py": "def broken(:\n"}
    exercises = by_id(grade_files(files))
    assert exercises[EX3].score == 0
    assert all("syntax" in c.message.lower() for c in exercises[EX3].checks)
    for other in (EX1, EX2, EX4):
        assert exercises[other].score == exercises[other].max_score > 0, other
    assert spawns["n"] == 1  # a load that raises leaves the worker serving the others


def test_a_crash_in_a_check_replaces_the_worker_and_the_others_load_again(grade_files):
    crashing = source(EX2) + ("\n\ndef scaled_dot_product_attention(q, k, v):\n    torch.os._exit(1)\n")
    exercises = by_id(grade_files({**reference_files(), f"{EX2}.py": crashing}))
    sdpa = [c for c in exercises[EX2].checks if c.id.startswith("sdpa_")]
    assert sdpa and all(c.status == "failed" and c.score == 0 for c in sdpa)
    assert not [c for e in exercises.values() for c in e.checks if c.status == "error"]
    for other in (EX1, EX3, EX4):
        assert exercises[other].score == exercises[other].max_score > 0, other


def test_printed_output_is_filed_under_the_exercise_that_printed_it(grade_files):
    files = {
        **reference_files(),
        f"{EX1}.py": source(EX1) + "\nprint('loading one')\n",
        f"{EX2}.py": source(EX2)
        + "\n\n_sdpa = scaled_dot_product_attention\n\n"
        + "def scaled_dot_product_attention(q, k, v):\n"
        + "    print('two was called')\n    return _sdpa(q, k, v)\n",
        f"{EX3}.py": source(EX3) + "\nprint('loading three')\n",
    }
    exercises = by_id(grade_files(files))
    assert exercises[EX1].output == "loading one\n"
    assert exercises[EX2].output and set(exercises[EX2].output.splitlines()) == {"two was called"}
    assert exercises[EX3].output == "loading three\n"
    assert exercises[EX4].output == ""
    assert exercises[EX2].score == exercises[EX2].max_score


def test_an_exercise_sees_the_torch_state_of_a_worker_of_its_own(grade_files):
    """Another module drawing random numbers or switching torch's global modes off changes nothing."""
    draws = source(EX2) + "\nprint('drew', torch.rand(3).tolist())\n"
    meddling = (
        source(EX1)
        + "\nimport torch\n_ = torch.randn(1000)\ntorch.set_grad_enabled(False)\n"
        + "torch.set_default_dtype(torch.float64)\n"
    )
    alone = by_id(grade_files({f"{EX2}.py": draws}, exercises=[EX2]))[EX2]
    shared = by_id(grade_files({**reference_files(), f"{EX1}.py": meddling, f"{EX2}.py": draws}))[EX2]
    assert alone.output.startswith("drew [")
    assert shared.model_dump() == alone.model_dump()
    assert shared.score == shared.max_score


# ---------------------------------------------------------------- the session itself


def session_with(pool, tmp_path, modules: dict[str, tuple[str, float]]) -> StudentSession:
    session = StudentSession(pool)
    for i, (name, (text, seconds)) in enumerate(modules.items()):
        (tmp_path / f"{name}.py").write_text(text, encoding="utf-8")
        session.add(name, tmp_path / f"{name}.py", seed=i, call_seconds=seconds)
    return session


def test_objects_of_a_replaced_worker_are_refused_as_stale(pool, tmp_path):
    session = session_with(pool, tmp_path, {
        "calm": ("def one():\n    return 1\n", 10.0),
        "crashy": ("import torch\n\ndef die():\n    torch.os._exit(1)\n", 10.0),
    })  # fmt: skip
    try:
        calm, crashy = session.module("calm"), session.module("crashy")
        one = calm.one
        assert one() == 1
        with pytest.raises(StudentCrash):
            crashy.die()
        with pytest.raises(StudentCrash) as info:
            one()
        assert "restarted" in info.value.text.en
        assert calm.one() == 1  # loaded again, in the fresh worker
        assert session.generation == 2
    finally:
        session.close()


def test_each_module_keeps_its_own_call_deadline(pool, tmp_path):
    session = session_with(pool, tmp_path, {
        "quick": ("def spin():\n    while True:\n        pass\n", 0.3),
        "patient": ("import time\n\ndef nap():\n    time.sleep(0.6)\n    return 2\n", 5.0),
    })  # fmt: skip
    try:
        start = time.monotonic()
        with pytest.raises(StudentTimeout):
            session.module("quick").spin()
        assert time.monotonic() - start < 2.0
        assert session.module("patient").nap() == 2  # 0.6 s: past quick's deadline, within its own
    finally:
        session.close()


def test_a_missing_file_fails_its_module_without_starting_a_worker(pool, tmp_path, spawns):
    session = StudentSession(pool)
    session.add("absent", tmp_path / "absent.py", seed=0)
    try:
        for _ in range(2):
            with pytest.raises(SubmissionFileError):
                session.module("absent").anything  # noqa: B018 (the read is the request)
        assert spawns["n"] == 0 and session.protections == []
    finally:
        session.close()


def test_module_objects_are_read_once_per_worker_and_data_every_time(pool, tmp_path):
    session = session_with(pool, tmp_path, {
        "m": ("import torch\n\nCOUNT = [0]\n\ndef bump():\n    COUNT[0] += 1\n    return COUNT[0]\n\n"
              "def die():\n    torch.os._exit(1)\n", 10.0),
    })  # fmt: skip
    try:
        student = session.module("m")
        assert student.bump() == 1
        sent = session.worker.requests
        assert student.bump() == 2 and student.bump() == 3
        assert session.worker.requests == sent + 2  # the calls only: `bump` was not read again
        assert student.COUNT == [3]
        assert student.COUNT == [3] and session.worker.requests == sent + 4  # data: read each time
        with pytest.raises(StudentCrash):
            student.die()
        assert student.bump() == 1  # a fresh worker: read again, not refused as stale
        assert session.generation == 2
    finally:
        session.close()


def test_a_layer_method_is_read_and_called_in_one_request(pool, tmp_path):
    """`layer.eval()`, `layer.double()`, `layer.load_state_dict(s)`: one request each (a read and a
    call were two), and the call is the one the worker would make after the read: the student's own
    override of the method counts, a method the object lacks is the student's AttributeError."""
    session = session_with(pool, tmp_path, {
        "m": ("import torch.nn as nn\n\n\nclass Layer(nn.Module):\n    def __init__(self):\n"
              "        super().__init__()\n        self.proj = nn.Linear(2, 2)\n\n"
              "    def eval(self):\n        return 'my own eval'\n\n\nclass Plain:\n    pass\n", 10.0),
    })  # fmt: skip
    try:
        student = session.module("m")
        layer, plain = student.Layer(), student.Plain()
        sent = session.worker.requests
        assert layer.eval() == "my own eval"
        assert session.worker.requests == sent + 1
        assert layer.double().load_state_dict(layer.state_dict()) is not None
        assert session.worker.requests == sent + 4  # double, state_dict, load_state_dict
        with pytest.raises(StudentCodeError) as raised:
            plain.load_state_dict({})
        assert raised.value.type_name == "AttributeError" and "load_state_dict" in raised.value.message
    finally:
        session.close()
