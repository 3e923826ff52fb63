"""Student code may not read the worker's own state (hostile8 f2: a submission walked the stack to
the worker's vjp request, sent a complete reply of its own on the worker's socket and swallowed the
real one, and scored two gradient checks on a cut graph).

`worker.watch_introspection` is an audit hook, installed in every worker before any submission
runs: reading the interpreter's frames or object graph from the submission's code (its files, or
code it compiled itself), directly or through a library function that hands over a frame, is
refused in the worker and told to the trusted side at once, which ends the call as the student's
fault. Library code doing the same for its own purposes (namedtuple, typing, logging, traceback
printing) is not the submission's doing and is left alone.
"""

from __future__ import annotations

import pytest

from graders.harness.core.errors import StudentCrash
from graders.harness.core.student import StudentSession

EX = "ex02_self_attention"


def MODULE(name: str) -> str:  # noqa: N802
    """Lines that fetch the module `name` from the worker's loaded modules (a plain import of it is
    refused: it is not on the submission's allow-list)."""
    return f"import torch\n{name} = torch.sys.modules['{name}']\n"


ROUTES = {
    "sys._getframe": "import torch\nframe = torch.sys._getframe(1)\nreturn frame.f_back is not None\n",
    "inspect.currentframe": f"{MODULE('inspect')}return inspect.currentframe().f_back is not None\n",
    "traceback.walk_stack": f"{MODULE('traceback')}return next(traceback.walk_stack(None))[0] is not None\n",
    "gc.get_objects": f"{MODULE('gc')}return len(gc.get_objects()) > 0\n",
    "gc.get_referrers": f"{MODULE('gc')}return len(gc.get_referrers(x)) >= 0\n",
    "tb_frame": (
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    return e.__traceback__.tb_frame.f_back\n"
    ),
    "sys._current_frames": "import torch\nreturn len(torch.sys._current_frames())\n",
    "sys.settrace": "import torch\ntorch.sys.settrace(lambda *a: None)\ntorch.sys.settrace(None)\nreturn 1\n",
    "compiled by itself": (
        "import torch\nns = {'s': torch.sys}\n"
        "exec(compile('f = s._getframe(1)', 'numpy/core/x.py', 'exec'), ns)\nreturn 1\n"
    ),
    "ctypes C API": f"{MODULE('ctypes')}return ctypes.pythonapi.PyEval_GetFrame\n",
    "compiled under a frozen module's name": (
        f"{MODULE('gc')}ns = {{'gc': gc}}\n"
        "exec(compile('n = len(gc.get_objects())', '<frozen importlib._bootstrap>', 'exec'), ns)\nreturn 1\n"
    ),
    "compiled under a standard-library path": (
        f"{MODULE('gc')}ns = {{'gc': gc}}\n"
        "exec(compile('n = len(gc.get_objects())', torch.__file__, 'exec'), ns)\nreturn 1\n"
    ),
    "code renamed by replace": (
        f"{MODULE('gc')}ns = {{'gc': gc}}\n"
        "c = compile('n = len(gc.get_objects())', 'mine', 'exec').replace(co_filename=torch.__file__)\n"
        "exec(c, ns)\nreturn 1\n"
    ),
}
ALLOWED = {
    "namedtuple": "import collections\nP = collections.namedtuple('P', 'a b')\nreturn P(1, 2).a\n",
    "typing.NamedTuple": "import typing\nQ = typing.NamedTuple('Q', [('a', int)])\nreturn Q(3).a\n",
    "dataclass": ("import dataclasses\nD = dataclasses.make_dataclass('D', [('a', int)])\nreturn D(4).a\n"),
    "traceback.format_exc": (
        f"{MODULE('traceback')}try:\n    1 / 0\n"
        "except ZeroDivisionError:\n    return len(traceback.format_exc())\n"
    ),
    "logging": f"{MODULE('logging')}logging.getLogger('x').warning('hello %s', 1)\nreturn 1\n",
    "own generator": "g = (i for i in range(3))\nreturn sum(g)\n",
}


def source(body: str) -> str:
    indented = "".join(f"    {line}\n" for line in body.splitlines())
    return f"def probe(x):\n{indented}"


def run_probe(pool, tmp_path, body: str):
    path = tmp_path / f"{EX}.py"
    path.write_text(source(body), encoding="utf-8")
    session = StudentSession(pool)
    session.add(EX, path, seed=1, call_seconds=10)
    try:
        return session.module(EX).probe(1)
    finally:
        session.close()


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_reading_the_workers_own_state_ends_the_call_as_the_students_fault(pool, tmp_path, route):
    with pytest.raises(StudentCrash) as crash:
        run_probe(pool, tmp_path, ROUTES[route])
    assert "interpreter's own state" in crash.value.text.en, crash.value.text.en


@pytest.mark.parametrize("use", sorted(ALLOWED))
def test_libraries_reading_frames_for_their_own_purposes_are_left_alone(pool, tmp_path, use):
    assert run_probe(pool, tmp_path, ALLOWED[use]) is not None
