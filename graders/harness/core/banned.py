"""The "built by hand" rule: does a submission use what its exercise bans, statically or at run time?

An exercise lists in its manifest (`banned`) the dotted names a submission must not use, e.g.
``torch.nn.functional.scaled_dot_product_attention``; a last component may be a glob
(``torch.ops.aten._scaled_dot_product_*``). One list serves two checks, and a submission must
evade both to score:

* `static_findings(data, banned)` reads the file's bytes exactly as Python does (`read_source`:
  a UTF-8 BOM, a PEP 263 coding cookie, via `tokenize.detect_encoding`) and finds, outside the
  ``if __name__ == "__main__":`` block: attributes, names, imports and string constants that name a
  banned thing (kind ``"banned"``), and dynamic access (kind ``"dynamic"``): ``eval``, ``exec``,
  ``compile``, ``__import__``, ``importlib``, ``functional_call``, ``vars()``, ``globals()``, ``getattr``/
  ``setattr``/``delattr`` with a computed name, assignment to an attribute of a torch namespace,
  and the dunder attributes that reach behind a function or module (``__dict__``,
  ``__closure__``, ``__wrapped__``, ``__globals__``…), which is also what tampering with the
  tripwire below takes; and detours (kind ``"indirect"``, a message of its own): a module reached
  through another (``.sys``, ``.modules`` on any object, ``sys`` as a name, ``warnings.sys.modules``),
  the interpreter's object graph and stack frames (``gc.get_objects``, ``_getframe``, ``f_globals``,
  ``f_back``…), an attribute named by a string (``operator.attrgetter``/``methodcaller``, or such a
  name as a string constant) and ``getattr``/``setattr`` passed around as values (``reduce(getattr,
  …)``). The student's own names (a function of theirs called like a banned one, ``self.…``
  attributes, ``model.modules()``) are theirs.
* the tripwire (`Tripwire`, installed inside the worker when the module loads: see
  `sandbox.worker`) wraps every banned function and class in the worker's torch before the
  submission runs, and records each call made while the submission's code is on the stack, with
  its line, sending each hit to the trusted side the moment it happens (the worker cannot take it
  back). `tripwire_findings(student)` reads that record (kind ``"tripwire"``).

A source that does not parse gives no static finding: the sandbox reports the syntax error. It is
parsed on a thread of its own (`parse_fresh`), so that the trusted side reads exactly what the worker
compiles; one nested past even that limit is a finding of its own (kind ``"unreadable"``): what
cannot be read cannot be judged built by hand.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import itertools
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .source import read_module_source, read_source

Kind = Literal["banned", "dynamic", "indirect", "tripwire", "unreadable"]

DYNAMIC_CALLS = {
    "eval", "exec", "compile", "__import__", "vars", "globals", "locals", "functional_call", "import_module",
}  # fmt: skip
ATTRIBUTE_CALLS = {"getattr", "setattr", "delattr", "hasattr"}
DYNAMIC_NAMES = {"importlib", "functional_call", "__builtins__", "__import__", "builtins"}
DUNDERS = {
    "__dict__", "__closure__", "__annotations__", "__wrapped__", "__code__", "__globals__", "__builtins__",
    "__getattribute__", "__import__", "__subclasses__", "__mro__", "__bases__", "__base__", "__func__",
    "__defaults__", "__kwdefaults__", "__loader__", "__spec__", "__self__", "__setattr__", "__delattr__",
    "__getattr__", "__match_args__", "__instancecheck__", "__subclasscheck__",
}  # fmt: skip
NAMESPACE_ROOTS = ("torch", "numpy")
# detours: a module through another, the interpreter's object graph, frames and closure cells
# (a wrapper's original), attributes by string (attrgetter, methodcaller, string.Formatter's fields)
INDIRECT_ATTRS = {
    "sys", "get_objects", "get_referrers", "get_referents", "_getframe", "f_globals", "f_locals", "f_back",
    "f_builtins", "f_code", "tb_frame", "tb_next", "gi_frame", "cr_frame", "ag_frame", "attrgetter",
    "methodcaller", "currentframe", "cell_contents", "get_field", "Formatter",
    "_jit_get_operation", "_builtin_ops", "_get_operation_overload", "_builtins",
    # an unpickler runs any callable a pickle names, reached through whatever module holds one
    # (`torch.distributed.distributed_c10d._unpickler`: hostile12 M)
    "Unpickler", "_unpickler", "find_class", "loads", "persistent_load", "copyreg", "_pickle",
    # reads attributes named by strings: update_wrapper(sink, obj, assigned=(name,)) (hostile13 V3);
    # runs torch's kernels through functorch's own batched keys (vmap: hostile13 V1)
    "update_wrapper", "vmap",
}  # fmt: skip
# modules off the import allow-list that allowed modules hold as attributes (`torch.os`,
# `torch.ctypes`, `dataclasses.inspect`): a module reached through another, like `.sys`
OFF_LIST_MODULES = {
    "os", "ctypes", "_ctypes", "importlib", "inspect", "subprocess", "_posixsubprocess", "socket", "signal",
    "threading", "_thread", "multiprocessing", "posix", "pickle", "marshal", "shutil", "tempfile", "mmap",
}  # fmt: skip
INDIRECT_MODULES = {"_builtins", "_C", "_jit_internal"}  # torch's tables of its own operators, by name
# Eval gadgets: what turns a string into code or into a name. `typing` evaluates string annotations
# (`get_type_hints`, `ForwardRef`, `_eval_type`); torch compiles TorchScript from source strings
# (`torch.jit`), registers and looks up kernels by name (`torch.library`, `torch.ops`), and keeps
# tables of its operators (`torch._decomp.decomposition_table`), and traces or rewrites code
# (`torch.fx`, `torch.compile`, `torch.overrides`): each of these reaches a banned kernel without
# naming it in the source, so each counts as a detour, and so does every private attribute of a
# torch namespace (`torch._C`, `torch._ops`, `torch._scaled_dot_product_*`): see `_Scan.named`.
EVAL_GADGETS = {
    "get_type_hints", "ForwardRef", "_eval_type", "eval_type", "evaluate_forward_ref", "_evaluate",
    "get_annotations", "CompilationUnit", "decomposition_table", "core_aten_decompositions",
    "get_decompositions", "register_decomposition",
}  # fmt: skip
TORCH_GADGETS = {
    "jit", "library", "ops", "fx", "compile", "overrides", "export", "hub", "package", "load",
    "serialization", "func", "vmap", "_functorch",
}  # fmt: skip
BUILTIN_TYPES = {
    "int", "float", "complex", "str", "bytes", "bytearray", "bool", "list", "tuple", "dict", "set",
    "frozenset",
}  # fmt: skip
# what decides which attribute a class pattern reads and what it matches (hostile13 V2)
MATCH_HOOKS = {"__match_args__", "__instancecheck__", "__subclasscheck__"}
# calls that give an object an attribute named by a string
REGISTERS = {"setattr", "register_buffer", "register_parameter", "register_module", "add_module"}
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
INDIRECT_NAMES = {
    "sys", "gc", "inspect", "attrgetter", "methodcaller", "get_objects", "_getframe", "update_wrapper",
    "vmap", "Formatter", "get_field", "_builtin_ops", "_builtins", "_jit_get_operation",
}  # fmt: skip
INDIRECT_STRINGS = INDIRECT_ATTRS | EVAL_GADGETS | {"modules", "gc", "inspect"}


def _private(name: str) -> bool:
    """A private name of a module (``_C``, ``_decomp``), not a dunder (``__version__``)."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass(frozen=True)
class Finding:
    """One use of something banned: its kind, what it is (as written, or the banned name hit at run
    time) and the line of the submission it is on (0 when unknown)."""

    kind: Kind
    what: str
    line: int


def last_names(banned: Sequence[str]) -> list[str]:
    """The last component of each banned dotted name (a glob pattern where it holds `*`)."""
    return [name.rsplit(".", 1)[-1] for name in banned]


def _matches(identifier: str, patterns: list[str]) -> bool:
    return _pattern(tuple(patterns)).match(identifier) is not None


@functools.lru_cache(maxsize=64)
def _pattern(patterns: tuple[str, ...]) -> re.Pattern:
    """One regex for `fnmatchcase` against any of `patterns` (each name is tested against all)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns) or "(?!)")


def _main_block_nodes(tree: ast.Module, nodes: list[ast.AST]) -> set[int]:
    """ids of the nodes in the body of a module-level `if __name__ == "__main__":` (students may
    compare with torch there), and nothing else: not its `else` or `elif` (which is what runs when
    the grader imports the file), not a test that merely mentions both names (`!=`, `or`), and
    nothing at all in a module that binds `__name__` anywhere (`__name__ = "__main__"`, a loop,
    a walrus, an import alias...): there the block may run on import."""
    if _binds(nodes, "__name__"):  # `nodes`: every node of `tree`
        return set()
    out: set[int] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and _is_main_test(stmt.test):
            out |= {id(n) for part in stmt.body for n in ast.walk(part)}
    return out


def _binds(nodes: list[ast.AST], name: str) -> bool:
    """Does any of `nodes` bind (or unbind) `name`: an assignment, augmented assignment, for/with/
    comprehension target, walrus or `del` (an `ast.Name` not loaded), an import alias, an `except …
    as`, a match capture (`case name`, `*name`, `**name`), a parameter, a def or class of that
    name, or a `global`/`nonlocal` declaration (another scope's binding of it)?"""
    for n in nodes:
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load):
            return True
        if isinstance(n, ast.alias) and (n.asname or n.name.split(".")[0]) == name:
            return True
        if isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name == name:
            return True
        if isinstance(n, ast.MatchMapping) and n.rest == name:
            return True
        if isinstance(n, ast.arg) and n.arg == name:
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name:
            return True
        if isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names:
            return True
    return False


def _is_main_test(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [n.id for n in sides if isinstance(n, ast.Name)]
    texts = [n.value for n in sides if isinstance(n, ast.Constant)]
    return names == ["__name__"] and texts == ["__main__"]


OWN_NAMES = ("self", "cls")
# doors to kernels that skip the dispatcher keys the tripwire watches (`OpOverload.decompose`,
# `.redispatch`, `._op_dk`), torch's below-autograd guard and its table of raw functions: an
# attribute of that name counts whatever it is read from, unless the module defines the name
KERNEL_DOORS = {
    "decompose", "redispatch", "_op_dk", "_AutoDispatchBelowADInplaceOrView", "_VariableFunctions", "_C",
}  # fmt: skip


def _own_nodes(nodes: list[ast.AST], defined: set[str]) -> set[int]:
    """ids of the nodes inside a class's methods whose first parameter is `self` or `cls` (with no
    default, never rebound there by any binding form, see `_binds`) and whose first argument only
    Python picks: the only places where `self.attr` is the student's own object. A method is not
    own once anything else may pick that argument: read off anything but an own `self`/`cls` or
    `super()` other than as a call with no argument (`_Hop.ops(torch)`, `type(x).m(torch)`,
    `f = X.m`, `getattr(X, "m")`), named as a plain value (`partial(m, torch)` in the class body),
    or decorated by `staticmethod` or a decorator of the module's. Elsewhere a name spelled `self`
    or `cls` is judged as any other (`def f(cls=torch)`). `nodes` is every node of the module,
    `defined` the names it defines (`_Scan.defined`)."""
    classes = [n for n in nodes if isinstance(n, ast.ClassDef)]
    defs = (ast.FunctionDef, ast.AsyncFunctionDef)
    bodies: dict[str, list[list[ast.AST]]] = {}  # a method's name -> the nodes of each method of that name
    for cls in classes:
        for method in cls.body:
            if not isinstance(method, defs):
                continue
            body = [n for part in method.body for n in ast.walk(part)]
            positional = method.args.posonlyargs + method.args.args
            decorated = any(_root(d) in defined or _root(d) == "staticmethod" for d in method.decorator_list)
            if (
                not positional
                or positional[0].arg not in OWN_NAMES
                or len(method.args.defaults) >= len(positional)  # the first parameter has a default
                or decorated
                or _binds(body, positional[0].arg)
            ):
                body = []  # not own: its nodes are judged as any other
            bodies.setdefault(method.name, []).append(body)
    if not bodies:
        return set()
    bare = {id(n.func) for n in nodes if isinstance(n, ast.Call) and not n.args and not n.keywords}
    reads: list[tuple[ast.AST, str, ast.AST]] = []  # (base, name, node): `base.m`, `getattr(base, "m")`
    loaded = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    borrowed = loaded & set(bodies)
    for n in nodes:
        if isinstance(n, ast.Attribute) and n.attr in bodies and id(n) not in bare:
            reads.append((n.value, n.attr, n))
        elif (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id in ATTRIBUTE_CALLS
            and len(n.args) >= 2
            and isinstance(n.args[1], ast.Constant)
            and n.args[1].value in bodies
        ):
            reads.append((n.args[0], n.args[1].value, n))
    # A method that is not own passes on whatever `self` it got: `self.m` read inside method `x`
    # makes `m` not own once every method holding that read is not own. Worked off a queue, each
    # name and read once (a fixed point rescanning every read per name was quadratic: hostile12 d1)
    holders: dict[int, set[str]] = {}  # id of a node inside own-shaped methods -> their names
    for name, group in bodies.items():
        for body in group:
            for n in body:
                holders.setdefault(id(n), set()).add(name)
    queue = list(borrowed)

    def borrow(name: str) -> None:
        if name not in borrowed:
            borrowed.add(name)
            queue.append(name)

    conditional: list[tuple[str, set[str]]] = []  # (name read, the methods holding the read)
    for base, name, node in reads:
        if isinstance(base, ast.Call) and _last(base.func) == "super" and not base.args:
            continue
        if isinstance(base, ast.Name) and base.id in OWN_NAMES and id(node) in holders:
            conditional.append((name, holders[id(node)]))
        else:
            borrow(name)
    waiting: dict[str, list[int]] = {}  # a method's name -> the conditional reads it holds
    left: list[int] = []  # per conditional read: how many of its holders are still own
    for index, (name, held_by) in enumerate(conditional):
        own_holders = held_by - borrowed
        left.append(len(own_holders))
        if not own_holders:
            borrow(name)
        for holder in own_holders:
            waiting.setdefault(holder, []).append(index)
    while queue:
        for index in waiting.pop(queue.pop(), []):
            left[index] -= 1
            if left[index] == 0:
                borrow(conditional[index][0])
    return {id(n) for name in set(bodies) - borrowed for body in bodies[name] for n in body}


class _Scan:
    def __init__(self, tree: ast.Module, patterns: list[str]) -> None:
        self.patterns = patterns
        self.nodes = nodes = list(ast.walk(tree))  # every node, walked once (`static_findings` visits these)
        defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        self.defined = {n.name for n in nodes if isinstance(n, defs)} | {
            n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        self.skip = _main_block_nodes(tree, nodes)
        self.own_nodes = _own_nodes(nodes, self.defined)
        self.docstrings = {
            id(n.value) for n in nodes if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
        }
        self.annotations = {
            id(a)
            for n in nodes
            for a in (
                [n.annotation] if isinstance(n, (ast.arg, ast.AnnAssign)) else
                [n.returns] if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
            )
            if isinstance(a, ast.Constant) and isinstance(a.value, str)
        }  # fmt: skip
        self.torch_names = self._torch_names(nodes)
        self.called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        self.roots: dict[int, str | None] = {}  # id of a node -> its `_root`, for every node asked
        # private names the module gives its own objects: its methods, the attributes it sets, and
        # those it registers by name (`register_buffer("_mask", …)`, `setattr(self, "_x", …)`)
        classes = [n for n in nodes if isinstance(n, ast.ClassDef)]
        methods = {m.name for n in classes for m in n.body if isinstance(m, DEFS)}
        stored = {n.attr for n in nodes if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
        registered = {
            a.value
            for n in nodes
            if isinstance(n, ast.Call) and _last(n.func) in REGISTERS
            for a in n.args[:2]
            if isinstance(a, ast.Constant) and isinstance(a.value, str)
        }
        self.attributes = methods | stored | registered
        self.found: list[Finding] = []

    @staticmethod
    def _torch_names(nodes: list[ast.AST]) -> set[str]:
        """Names bound to a torch or numpy namespace: imports, and assignments from such names."""
        names: set[str] = set()
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in NAMESPACE_ROOTS:
                        names.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in NAMESPACE_ROOTS:
                names |= {alias.asname or alias.name for alias in node.names}
        for _ in range(3):  # aliases of aliases
            for node in nodes:
                if isinstance(node, ast.Assign) and _root(node.value) in names:
                    names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        return names

    def is_namespace(self, node: ast.AST) -> bool:
        root = _root(node, self.roots)
        return root in self.torch_names or root in NAMESPACE_ROOTS

    def add(self, kind: Kind, what: str, node: ast.AST) -> None:
        self.found.append(Finding(kind, what, getattr(node, "lineno", 0)))

    def visit(self, node: ast.AST) -> None:
        if id(node) in self.skip:
            return
        if isinstance(node, ast.Attribute):
            self.attribute(node)
        elif isinstance(node, ast.ImportFrom):
            torch_gadget = _torch_gadget((node.module or "").split("."))
            for a in node.names:
                if _matches(a.name, self.patterns):
                    self.add("banned", f"from {node.module} import {a.name}", node)
                elif a.name in DYNAMIC_NAMES:
                    self.add("dynamic", f"from {node.module} import {a.name}", node)
                elif a.name in INDIRECT_NAMES or a.name == "modules" or a.name in EVAL_GADGETS:
                    self.add("indirect", f"from {node.module} import {a.name}", node)
                elif a.name in OFF_LIST_MODULES and node.module:  # `from torch import os`
                    self.add("indirect", f"from {node.module} import {a.name}", node)
                elif torch_gadget or _torch_gadget([*(node.module or "").split("."), a.name]):
                    self.add("indirect", f"from {node.module} import {a.name}", node)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in DYNAMIC_NAMES:
                    self.add("dynamic", f"import {a.name}", node)
                elif INDIRECT_MODULES & set(a.name.split(".")[1:]) or _torch_gadget(a.name.split(".")):
                    self.add("indirect", f"import {a.name}", node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in MATCH_HOOKS:
            self.add("dynamic", f"def {node.name}", node)  # decides what a class pattern matches
        elif isinstance(node, ast.Name) and node.id in MATCH_HOOKS:
            self.add("dynamic", node.id, node)  # `__match_args__ = (…)`: what `case C(x)` reads
        elif isinstance(node, ast.Name):
            if _matches(node.id, self.patterns) and node.id not in self.defined:
                self.add("banned", node.id, node)
            elif node.id in DYNAMIC_NAMES or (node.id in DYNAMIC_CALLS and node.id not in self.defined):
                self.add("dynamic", node.id, node)
            elif (node.id in INDIRECT_NAMES or node.id in EVAL_GADGETS) and node.id not in self.defined:
                self.add("indirect", node.id, node)
            elif node.id in ATTRIBUTE_CALLS and node.id not in self.defined and id(node) not in self.called:
                self.add("indirect", node.id, node)  # getattr as a value: reduce(getattr, names, F)
        elif isinstance(node, ast.Call):
            self.call(node)
        elif isinstance(node, ast.MatchClass):  # case object(name=x): fetches the attribute `name`
            for attr in node.kwd_attrs:
                self.named(attr, f"{_text(node.cls)}({attr}=…)", node)
            if node.patterns and not (isinstance(node.cls, ast.Name) and node.cls.id in BUILTIN_TYPES):
                # case C(x): fetches the attribute named by C.__match_args__, which a class can
                # compute, and C's metaclass decides what matches (hostile13 V2)
                self.add("dynamic", f"{_text(node.cls)}(…) (positional class pattern)", node)
        elif isinstance(node, ast.keyword) and node.arg is not None:  # f(name=…): a name, as written
            if _matches(node.arg, self.patterns):
                self.add("banned", f"{node.arg}=…", node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in self.docstrings:
                return
            if id(node) in self.annotations and not _plain_annotation(node.value):
                self.add("dynamic", f"string annotation {node.value[:60]!r} (evaluated as code)", node)
            parts = node.value.split(".")
            if all(p.isidentifier() for p in parts) and _matches(parts[-1], self.patterns):
                self.add("banned", repr(node.value), node)
            elif node.value in DUNDERS or node.value in DYNAMIC_NAMES:
                self.add("dynamic", repr(node.value), node)
            elif node.value in INDIRECT_STRINGS:
                self.add("indirect", repr(node.value), node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, bytes) and _pickled(node.value):
            self.add("dynamic", f"a pickle in a bytes literal {node.value[:40]!r}", node)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and self.is_namespace(target.value):
                    self.add("dynamic", f"{_text(target)} = …", target)

    def attribute(self, node: ast.Attribute) -> None:
        own = isinstance(node.value, ast.Name) and node.value.id in OWN_NAMES and id(node) in self.own_nodes
        called = id(node) in self.called
        if not own and self.is_namespace(node.value) and (_private(node.attr) or node.attr in TORCH_GADGETS):
            if not _matches(node.attr, self.patterns):  # a private name of torch, or a door to kernels
                self.add("indirect", _text(node), node)
                return
        if (
            not own
            and _private(node.attr)
            and node.attr not in self.attributes
            and not _matches(node.attr, self.patterns)  # a banned name is named as such (`named`)
        ):
            # a private name the module never defines, whatever it is read from: torch's, reached
            # through a subscript, a call or a container (`[torch.x][0]._priv`: hostile12 N)
            self.add("indirect", _text(node), node)
            return
        if node.attr == "aten" and _last(node.value) == "ops" and not self.is_namespace(node.value):
            self.add("indirect", _text(node), node)  # `<anything>.ops.aten`: the operator table
            return
        self.named(node.attr, None, node, own=own, called=called)

    def named(
        self, attr: str, what: str | None, node: ast.AST, own: bool = False, called: bool = False
    ) -> None:
        """`attr` is fetched as an attribute (`x.attr`, or a class pattern `case C(attr=…)`); `what`
        is the finding's text (None: `node` as written, made only for a finding)."""
        kind: Kind | None = None
        if _matches(attr, self.patterns) and not (own and attr in self.defined):
            kind = "banned"  # `self.<banned>` is the student's only if they define it
        elif attr in KERNEL_DOORS and attr not in self.defined:
            kind = "indirect"
        elif attr in DUNDERS or attr in DYNAMIC_NAMES or attr in ("functional_call", "import_module"):
            kind = "dynamic"
        elif (attr in INDIRECT_ATTRS or attr in EVAL_GADGETS or attr in OFF_LIST_MODULES) and not own:
            kind = "indirect"
        elif attr == "modules" and not called and not own:  # model.modules() is fine
            kind = "indirect"
        if kind is not None:
            self.add(kind, what if what is not None else _text(node), node)

    def call(self, node: ast.Call) -> None:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name in ATTRIBUTE_CALLS and name not in self.defined and len(node.args) >= 2:
            target, attr = node.args[0], node.args[1]
            own = isinstance(target, ast.Name) and target.id in OWN_NAMES and id(node) in self.own_nodes
            if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)) and not own:
                self.add("dynamic", _text(node), node)
            elif name != "getattr" and name != "hasattr" and self.is_namespace(target):
                self.add("dynamic", _text(node), node)
            elif not own and not _matches(attr.value, self.patterns) and (
                (_private(attr.value) and attr.value not in self.attributes)
                or (attr.value in TORCH_GADGETS and self.is_namespace(target))
            ):  # `getattr(torch, "_C")`, `getattr(x, "_priv")`: what `torch._C`, `x._priv` would be
                self.add("indirect", _text(node), node)


def _pickled(data: bytes) -> bool:
    """Does a bytes literal look like a pickle (a protocol header, or a GLOBAL opcode naming a
    module and a name)? Unpickled, it can fetch and call anything by name."""
    return data.startswith(b"\x80") or re.search(rb"(^|[^\w])c[\w.]+\n[\w.]+\n", data) is not None


def _text(node: ast.AST, limit: int = 80) -> str:
    """`node` as written, for a finding: at most `limit` characters, at a cost bounded whatever its
    size (`ast.unparse` of every link of an attribute chain thousands long was quadratic, and past
    Python's recursion limit: hostile13 d1, d2)."""
    if sum(1 for _ in itertools.islice(ast.walk(node), 64)) < 64:
        return ast.unparse(node)[:limit]
    parts, inner = [], node
    while isinstance(inner, ast.Attribute) and len(parts) < 4:
        parts.append(inner.attr)
        inner = inner.value
    return "….".join(["", ".".join(reversed(parts))]) if parts else f"<{type(node).__name__}>"


def _torch_gadget(parts: list[str]) -> bool:
    """Is the dotted module `parts` a private module of torch or one of its doors to kernels by name
    (``torch._decomp``, ``torch.jit``, ``torch.library``...)?"""
    return (
        len(parts) > 1
        and parts[0] in NAMESPACE_ROOTS
        and (parts[1] in TORCH_GADGETS or any(_private(p) for p in parts[1:]))
    )


_ANNOTATION_NODES = (
    ast.Expression, ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Tuple, ast.List, ast.Load,
    ast.BinOp, ast.BitOr,
)  # fmt: skip


def _plain_annotation(text: str) -> bool:
    """Is a string annotation a type as written (``"Tensor"``, ``"list[int] | None"``), not code that
    `typing.get_type_hints` would run (a call, a lambda, a comprehension)?"""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True  # not an expression: typing cannot evaluate it either
    return all(isinstance(n, _ANNOTATION_NODES) for n in ast.walk(tree))


def _root(node: ast.AST, known: dict[int, str | None] | None = None) -> str | None:
    """The name an attribute, subscript or call chain starts from (None: not a name). With `known`,
    every link walked is remembered there: asked of each link of an attribute chain thousands long,
    walking from scratch each time was quadratic (hostile13 d1)."""
    known = {} if known is None else known
    chain = []
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)) and id(node) not in known:
        chain.append(node)
        node = node.value if not isinstance(node, ast.Call) else node.func
    found = known[id(node)] if id(node) in known else node.id if isinstance(node, ast.Name) else None
    for link in chain:
        known[id(link)] = found
    return found


def _last(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def parse_fresh(source: str) -> ast.AST:
    """`ast.parse` on a thread of its own: the parser's nesting limit counts the caller's stack, and
    the trusted side parses from deep inside pytest while the worker compiles from a shallow stack;
    from a fresh thread both read the same source alike."""
    out: dict[str, object] = {}

    def parse() -> None:
        try:
            out["tree"] = ast.parse(source)
        except BaseException as exc:  # handed to the caller as it is
            out["error"] = exc

    thread = threading.Thread(target=parse, name="parse-submission")
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["tree"]


def static_findings(data: bytes, banned: Sequence[str]) -> list[Finding]:
    """Every static use of a banned name, and every dynamic access, in the source `data`, in line order."""
    if not banned:
        return []
    try:
        tree = parse_fresh(read_source(data))
    except (SyntaxError, ValueError):  # the worker cannot compile it either: the submission runs nothing
        return []
    except (RecursionError, MemoryError):  # what cannot be read cannot be judged built by hand
        return [Finding("unreadable", "nested past the parser's limits", 1)]
    try:
        scan = _Scan(tree, last_names(banned))
        for node in scan.nodes:
            scan.visit(node)
    except (RecursionError, MemoryError):  # a tree too deep to judge is not judged built by hand
        return [Finding("unreadable", "nested past the scan's limits", 1)]
    order = {"banned": 0, "dynamic": 1, "indirect": 2, "tripwire": 3, "unreadable": 4}
    return sorted(set(scan.found), key=lambda f: (f.line, order[f.kind], f.what))


def source_text(data: bytes) -> str:
    """`read_source`, or (for a file Python would refuse) the bytes as UTF-8 with replacements."""
    try:
        return read_source(data)
    except SyntaxError:
        return data.decode("utf-8", "replace")


def tripwire_findings(student) -> list[Finding]:
    """What the tripwire in `student`'s worker saw: each banned function or class used while the
    submission's code ran (and any wrapper found undone: a submission that tampered with it)."""
    hits = student._tripwire()
    return [Finding("tripwire", str(what), int(line)) for what, line in hits]


class BuiltByHand:
    """The rule for one submission of one exercise, as a check uses it (the `built_by_hand` fixture).

    `static()` reads the file (as bytes, never run here); `tripwire()` asks the worker, so call it
    after the submission's code has run; `findings()` is both, static first."""

    def __init__(self, student, path, banned: Sequence[str], origin=None) -> None:
        self.student, self.path, self.banned = student, path, list(banned)
        self.origin = origin  # a notebook's cells (see `notebook`): lines are then those of a cell

    def static(self, skip: Sequence[str] = ()) -> list[Finding]:
        """Findings in the exercise's file (a notebook's: lines are then those of a cell), then in
        each file of the submission it imports (their `what` starts with that file's name: the line
        is a line of that file), except the modules named in `skip` (an earlier exercise graded on
        its own, whose file the checks replace)."""
        from ..sandbox.launch import ALLOWED_IMPORTS
        from .siblings import sibling_sources

        data = read_module_source(self.path, self.origin)
        if not self.banned:
            return []
        provided = {name: b"" for name in skip}  # not read, not scanned
        shown = getattr(self.origin, "display", self.path.name)
        # first: it refuses more code than the trusted side may parse and scan (`MAX_TOTAL_BYTES`)
        siblings = sibling_sources(self.path.parent, data, ALLOWED_IMPORTS, provided, shown=shown)
        found = self._placed(static_findings(data, self.banned))
        for name, (file, source) in siblings.items():
            if name in provided:
                continue
            findings = static_findings(source, self.banned)
            found += [Finding(f.kind, f"{file}: {f.what}", f.line) for f in findings]
        return found

    def tripwire(self) -> list[Finding]:
        return self._placed(tripwire_findings(self.student)) if self.banned else []

    def _placed(self, findings: list[Finding]) -> list[Finding]:
        """In a notebook, a finding's line is that of its cell, and the cell is named with what it found."""
        cell_line = getattr(self.origin, "cell_line", None)
        if cell_line is None:
            return findings
        out = []
        for f in findings:
            at = cell_line(f.line)
            out.append(Finding(f.kind, f"{f.what}, cell {at[0]}", at[1]) if at else f)
        return out

    def findings(self) -> list[Finding]:
        return self.static() + self.tripwire()
