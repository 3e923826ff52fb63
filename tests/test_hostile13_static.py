"""The static half of the built-by-hand rule against hostile13's routes (issue 9): attributes read
by a positional class pattern (`case R(x)` reads `x.<R.__match_args__[0]>`, which a class computes),
by `functools.update_wrapper`, and torch's kernels run under `torch.vmap` (whose batched dispatch
keys the run-time watch does not sit at). A chain of attributes thousands long is judged in time
linear in its length and never raises."""

from __future__ import annotations

import pytest

from graders.harness.core.banned import static_findings
from graders.harness.core.project import default_project

PROJECT = default_project()
EX4 = PROJECT.load_manifest("ex04_multi_head_attention").banned
HEAD = "import functools\nimport torch\nimport torch.nn.functional as F\n"


def kinds(source: str) -> set[str]:
    return {f.kind for f in static_findings((HEAD + source).encode(), EX4)}


@pytest.mark.parametrize(
    "source",
    [
        "match F:\n    case R(kernel):\n        pass\n",
        "class R:\n    __match_args__ = ('scaled_dot_' + 'product_attention',)\n",
        "class Meta(type):\n    def __instancecheck__(cls, obj):\n        return True\n",
        "functools.update_wrapper(sink, F, assigned=(name,), updated=())\n",
        "run = torch.vmap(kernel)\n",
        "from torch import vmap\n",
        "from torch.func import vmap as v\n",
    ],
    ids=["positional_class_pattern", "match_args", "instancecheck", "update_wrapper", "torch_vmap",
         "from_torch_import_vmap", "torch_func"],
)  # fmt: skip
def test_an_attribute_read_by_a_pattern_or_a_wrapper_helper_is_a_finding(source):
    assert kinds(source) & {"dynamic", "indirect"}, source


def test_patterns_of_builtin_types_stay_allowed():
    assert (
        kinds("match shape:\n    case tuple((b, l, e)):\n        pass\n    case int(n):\n        pass\n")
        == set()
    )


def test_a_chain_thousands_of_attributes_long_is_judged_without_raising():
    chain = "x = torch" + ".a" * 3000 + "\n"
    found = static_findings((HEAD + chain).encode(), EX4)
    assert isinstance(found, list)
    assert all(f.kind in {"indirect", "dynamic", "unreadable"} for f in found)
