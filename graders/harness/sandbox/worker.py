"""The loop that runs inside a sandboxed worker: load student code from bytes, answer requests.

Requests arrive as wire frames on one socket; every reply carries only plain data (JSON and raw
tensor bytes). Objects that are not data (modules, functions, nn.Modules) stay here and travel as
handles. A student exception, `SystemExit` included, becomes an error reply with the traceback
trimmed to the student's own files. Imports: standard library, numpy, torch, `wire`, `isolation`.

Imports follow one rule everywhere: the student's own `import` statements must name a module of
the allow-list, and no module can be loaded from disk once the worker runs (`seal_imports`), so
a submission sees exactly what the zygote imported, whether the worker runs on an empty root file
system (root, user namespaces) or not: what passes locally passes in an LMS.
"""

from __future__ import annotations

import builtins
import fnmatch
import functools
import importlib
import importlib.machinery
import random
import sys
import sysconfig
import threading
import traceback
import types
import warnings
from pathlib import Path

import numpy as np
import torch

from . import isolation, wire

MAX_MESSAGE_CHARS = 2000
MAX_FRAMES = 8
MAX_TRIPWIRE_HITS = 100


class ImportRefused(ImportError):
    pass


# Where a banned operator also lives in torch's Python namespaces: the same C++ kernel under several
# names (``torch._scaled_dot_product_flash_attention_for_cpu`` is ``torch.ops.aten.…``). Each banned
# name is watched under every one of them; a hit is reported under the banned name itself.
ALIAS_HOMES = (
    "torch",
    "torch._C._VariableFunctions",
    "torch._C._nn",
    "torch.nn.functional",
    "torch.ops.aten",
)


# Banned aten operators torch gives no autograd formula: their autograd kernel dispatches below the
# ADInplaceOrView key (`Tripwire._watch_autograd`)
NO_AUTOGRAD_FORMULA = frozenset(
    {"_native_multi_head_attention", "_transformer_encoder_layer_fwd", "_fused_sdp_choice"}
)


class Tripwire:
    """Run-time half of the "built by hand" rule (the static half is `graders.harness.core.banned`).

    `arm(module, banned)` wraps each banned dotted name of this worker's torch (a function: the
    attribute is replaced by a wrapper; a class: its `__init__` is; an operator of ``torch.ops``: the
    packet and each of its overloads, whose `_op` is what every reference to them calls, so an
    overload taken from another table, ``torch._decomp.decomposition_table``, is watched too), and
    the same operator under each of its other names (`ALIAS_HOMES`), once, before the module
    `module` runs. A wrapper finds the innermost student frame on the stack (none when only torch's
    own code is there) and sends the hit to the trusted side at once, before the wrapped function
    runs: a frame on the worker's socket, which nothing in the worker can take back. Every call is
    sent: which hit is a repeat is decided on the trusted side (`SandboxWorker._event`), which keeps
    the record; the worker keeps none, so there is no "already sent" state here to fake.

    Each banned aten operator is also watched in the dispatcher itself (`_watch_dispatcher`), which
    sees the calls that pass no Python wrapper: an original read out of a wrapper's closure, the C++
    function table, TorchScript, torch's own C++ code called by the submission. A call counts as
    the submission's wherever it comes from (its files, code it compiled, a thread it started, a
    torch function it handed over as its own), except torch's backward pass of a gradient request
    (`make_recorder`).

    What a wrapper closes over is the original, the name it reports and `record`, a plain function
    whose closure holds the socket's `sendall`, the frame packer, a lock, `sys._getframe` and a
    read-only view of which globals belong to which exercise: no object with attributes that turn
    it off, and nothing that leads to the Worker. What in-process code can still do: rewrite a
    closure cell (``wrapper.__closure__[i].cell_contents = …``) or call the original it reads out
    of one; both need `__closure__`/`cell_contents` (or an eval gadget that writes them), which the
    static rule flags; the dispatcher's watch still sees such a call unless the submission also
    steps around the dispatcher keys it sits at (torch's private guards that exclude them, a
    `torch.library` registration of its own, a dispatch mode), all private torch namespaces the
    static rule flags too. `report(module)` names any wrapper found no longer in place.
    """

    def __init__(self, record) -> None:
        self.record = record  # (dotted name, owned_only=False) -> None: sends the hit (`make_recorder`)
        self.banned_of: dict[str, set[str]] = {}
        self.installed: dict[str, tuple] = {}  # name watched -> (owner, attribute, wrapper, reported)
        self.dispatched: set[str] = set()  # aten operators watched at the dispatcher
        self._library = None  # torch.library.Library("aten", "IMPL"), made on first use

    @staticmethod
    def _resolve(dotted: str):
        """(object that holds it, attribute name) for an already imported dotted name, else (None, "")."""
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            owner = sys.modules.get(".".join(parts[:cut]))
            if owner is None:
                continue
            try:
                for name in parts[cut:-1]:
                    owner = getattr(owner, name)
                getattr(owner, parts[-1])
            except AttributeError:
                return None, ""
            return owner, parts[-1]
        return None, ""

    @classmethod
    def _expand(cls, pattern: str) -> list[str]:
        """The dotted names a glob entry (``torch.ops.aten._scaled_dot_product_*``) covers in this
        torch: the attributes of its owner that match, and, for an operator namespace, every
        operator the dispatcher knows under it (they are created on first access)."""
        prefix, last = pattern.rsplit(".", 1)
        owner, attr = cls._resolve(prefix)
        if owner is None:
            return []
        namespace = getattr(owner, attr)
        names = set(dir(namespace))
        if isinstance(namespace, torch._ops._OpNamespace):
            qualified = f"{namespace.name}::"
            ops = torch._C._dispatch_get_all_op_names()
            names |= {op[len(qualified) :].split(".")[0] for op in ops if op.startswith(qualified)}
        return sorted(f"{prefix}.{name}" for name in names if fnmatch.fnmatchcase(name, last))

    @classmethod
    def _aliases(cls, dotted: str) -> list[str]:
        """`dotted` and the other names torch gives the same function (`ALIAS_HOMES`)."""
        last = dotted.rsplit(".", 1)[-1]
        out = [dotted] + [f"{home}.{last}" for home in ALIAS_HOMES if f"{home}.{last}" != dotted]
        return [name for name in out if cls._resolve(name)[0] is not None]

    def arm(self, module: str, banned) -> None:
        self.banned_of[module] = {str(b) for b in banned}
        names: set[str] = set()
        for dotted in self.banned_of[module]:
            names |= set(self._expand(dotted)) if "*" in dotted else {dotted}
        for dotted in sorted(names):  # each banned name under its own name first, then its aliases
            self._install(dotted, dotted)
        for dotted in sorted(names):
            for alias in self._aliases(dotted):
                self._install(alias, dotted)
        for dotted in sorted(names):
            self._watch_dispatcher(dotted)

    def _watch_dispatcher(self, reported: str) -> None:
        """Watch the aten operator named like `reported` (if there is one) in the dispatcher itself:
        a kernel at AutogradCPU, which every call of the operator on an ordinary CPU tensor passes,
        sends the hit and runs the autograd kernel torch computed for it (`_watch_autograd`); a
        kernel at the ADInplaceOrView key, passed after autograd has recorded the call (and by
        torch's C++ callers below autograd), does the same and redispatches to the real kernel, so
        the result and its gradient are torch's own; a kernel at the CPU key does the same in front
        of torch's CPU kernel (`_watch_backend`). An operator torch decomposes
        (`scaled_dot_product_attention`, its math path) is watched in front of its decomposition
        at CompositeImplicitAutograd, the kernel every key of it runs (on a torch before 2.9, at
        AutogradCPU only, running the same decomposition, `OpOverload.decompose`).
        It sees the calls no Python wrapper can: the original function read out of a wrapper's
        closure, `torch._C._VariableFunctions.X`, TorchScript, a C++ caller, a call that starts below
        the autograd keys (real inference mode, torch's private guards, an operator handle's
        `redispatch_boxed`). It costs nothing to a submission that does not call the operator."""
        name = reported.rsplit(".", 1)[-1]
        packet = getattr(torch.ops.aten, name, None) if name.isidentifier() else None
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            return
        if self._library is None:
            self._library = torch.library.Library("aten", "IMPL")
        after, record = torch._C._after_ADInplaceOrView_keyset, self.record
        computed_kernels = hasattr(torch._C, "_dispatch_get_computed_kernel_for_dispatch_key")
        for overload_name in packet.overloads():
            overload = getattr(packet, overload_name)
            qualified = overload._schema.name + ("." + overload_name if overload_name != "default" else "")
            if qualified in self.dispatched:
                continue
            key = name if overload_name == "default" else f"{name}.{overload_name}"
            has = functools.partial(torch._C._dispatch_has_kernel_for_dispatch_key, overload.name())
            try:
                if has("CompositeImplicitAutograd") and computed_kernels:
                    # watched in front of the decomposition itself, which serves every key: a call
                    # that starts below autograd (inference mode, torch's guards, a handle's
                    # `redispatch_boxed` with any keyset: hostile12 s2-s5) runs it too
                    self._watch_in_front(key, overload, reported, "CompositeImplicitAutograd", "CPU")
                    self.dispatched.add(qualified)
                    continue
                if has("CompositeImplicitAutograd"):  # a torch older than 2.9 cannot hand its kernel
                    # over: decomposed at the autograd key, before ADInplaceOrView: watched there, and
                    # computed by the same decomposition torch would run (`decompose`)
                    decompose = overload.decompose

                    def composite(*args, _decompose=decompose, _reported=reported, **kwargs):
                        record(_reported, True)
                        return _decompose(*args, **kwargs)

                    self._library.impl(key, composite, "AutogradCPU")
                    self.dispatched.add(qualified)
                    continue
                self._watch_autograd(key, overload, reported)
                self._watch_backend(key, overload, reported)
                if not has("ADInplaceOrView"):  # a view or in-place operator's kernel there is not ours
                    redispatch = overload.redispatch

                    def kernel(keyset, *args, _redispatch=redispatch, _reported=reported, **kwargs):
                        record(_reported, True)
                        return _redispatch(keyset & after, *args, **kwargs)

                    self._library.impl(key, kernel, "ADInplaceOrView", with_keyset=True)
            except (RuntimeError, ValueError):
                continue
            self.dispatched.add(qualified)

    def _watch_autograd(self, key: str, overload, reported: str) -> None:
        """Watch `overload` at AutogradCPU too, in front of the autograd kernel torch computed for it,
        which then runs as it would have (the gradient is torch's own). An operator with no autograd
        formula of its own (`_native_multi_head_attention`, `_transformer_encoder_layer_fwd`: hostile10
        s4, s5) gets torch's "not implemented" autograd kernel, which dispatches below
        ADInplaceOrView: the watch there never runs for it, this one does."""
        if not hasattr(torch._C, "_dispatch_get_computed_kernel_for_dispatch_key"):  # a torch older
            # than 2.9 cannot hand its kernel over: for an operator without an autograd formula,
            # compute below autograd (no gradient either way)
            if overload._schema.name.removeprefix("aten::") not in NO_AUTOGRAD_FORMULA:
                return
            below = torch._C._AutoDispatchBelowADInplaceOrView  # what torch's own kernel for it does
            record = self.record

            def no_formula(keyset, *args, _overload=overload, _reported=reported, **kwargs):
                record(_reported, True)
                with below():
                    return _overload(*args, **kwargs)

            self._library.impl(key, no_formula, "AutogradCPU", with_keyset=True)
            return
        if torch._C._dispatch_has_computed_kernel_for_dispatch_key(overload.name(), "AutogradCPU"):
            self._watch_in_front(key, overload, reported, "AutogradCPU")

    def _watch_backend(self, key: str, overload, reported: str) -> None:
        """Watch `overload` at the CPU key too, in front of torch's own CPU kernel: the last key any
        computation of it passes. A call that starts below the keys above (`OpOverload.redispatch`
        with a keyset of CPU alone, or under `_AutoDispatchBelowADInplaceOrView`: hostile11 s3, s5)
        reaches this one. On a torch that cannot hand its kernel over (before 2.9) it is not
        installed: the keys above and the static rule stand."""
        if not hasattr(torch._C, "_dispatch_get_computed_kernel_for_dispatch_key"):
            return
        if torch._C._dispatch_has_kernel_for_dispatch_key(overload.name(), "CPU"):
            self._watch_in_front(key, overload, reported, "CPU")

    def _watch_in_front(
        self, key: str, overload, reported: str, dispatch_key: str, kernel_of: str | None = None
    ) -> None:
        """A kernel at `dispatch_key` that sends the hit, then runs the kernel torch had computed for
        that key (`_watch_autograd`, `_watch_backend`), or for the runtime key `kernel_of` where
        `dispatch_key` is an alias (CompositeImplicitAutograd: its kernel is what CPU runs): the
        result and gradient are torch's own."""
        get_kernel = torch._C._dispatch_get_computed_kernel_for_dispatch_key
        original = get_kernel(overload.name(), getattr(torch._C.DispatchKey, kernel_of or dispatch_key))
        record = self.record

        def watched(keyset, *args, _original=original, _reported=reported, **kwargs):
            record(_reported, True)
            return _original.call_boxed(keyset, *args, **kwargs)

        with warnings.catch_warnings():  # torch warns that a kernel is overridden: it is, by this
            warnings.simplefilter("ignore")  # watch, which runs it; not the student's output
            self._library.impl(key, watched, dispatch_key, with_keyset=True)

    def _install(self, alias: str, reported: str) -> None:
        if alias in self.installed:
            return
        owner, attr = self._resolve(alias)
        if owner is None:
            return
        target = getattr(owner, attr)
        if isinstance(target, torch._ops.OpOverloadPacket):
            for name in target.overloads():  # the overloads' own `_op`: what any reference calls
                overload = getattr(target, name)
                self._install_at(f"{alias}.{name}", overload, "_op", overload._op, reported)
            owner, attr = target, "_op"
            target = target._op
        elif isinstance(target, type):
            # every function of the class, not only `__init__`: a method can be borrowed without an
            # instance (`TransformerEncoderLayer.forward(self, x)` on an object of one's own, its
            # class reached by a route the static rule missed: hostile12 s1)
            for name, value in list(type.__dict__["__dict__"].__get__(target).items()):
                if type(value) is types.FunctionType and name != "__init__":
                    self._install_at(f"{alias}.{name}", target, name, value, reported)
            owner, attr, target = target, "__init__", target.__init__
        if callable(target):
            self._install_at(alias, owner, attr, target, reported)

    def _install_at(self, alias: str, owner, attr: str, original, reported: str) -> None:
        wrapper = _wrap(self.record, reported, original)
        try:
            setattr(owner, attr, wrapper)
        except (AttributeError, TypeError):
            return
        self.installed[alias] = (owner, attr, wrapper, reported)

    def report(self, module: str) -> list[list]:
        """The wrappers of names `module` bans that are no longer in place (the hits themselves are
        on the trusted side)."""
        banned = self.banned_of.get(module, set())
        out = []
        for alias in sorted(self.installed):
            owner, attr, wrapper, reported = self.installed[alias]
            if not wire.is_banned(reported, banned):
                continue
            held = owner.__dict__.get(attr) if hasattr(owner, "__dict__") else None
            if held is not wrapper:
                out.append([f"{alias} (tripwire undone)", 0])
        return out[:MAX_TRIPWIRE_HITS]


def _wrap(record, dotted: str, original):
    """A wrapper that sends the hit, then calls through. It closes over these three alone."""

    def tripwire(*args, **kwargs):
        record(dotted)
        return original(*args, **kwargs)

    return tripwire


def refusal_text(allowed_imports, sibling_sources, owner: str | None, name: str, level: int) -> str:
    """Why the student's `import name` is refused, naming the file it would need."""
    allowed = ", ".join(sorted(m for m in allowed_imports if not m.startswith("_")))
    top = name.partition(".")[0]
    if level != 0:
        return (
            f"relative import of {name!r} (level {level}) is not allowed: a file of your submission"
            f" is imported by its name alone, e.g. import {top or 'utils'}"
        )
    if top in sibling_sources.get(owner, {}):
        return f"import of {name!r} is not allowed: {top}.py is a file of your submission, not a package"
    if top.isidentifier() and top.isascii():
        return (
            f"import of {name!r} is not allowed: there is no file {top}.py in your submission, and it"
            f" is not one of the modules a submission may import ({allowed})"
        )
    return f"import of {name!r} is not allowed in a submission (allowed: {allowed})"


def _defined_in(cls, spaces: dict[int, str], files: dict[int, str | None] | None = None) -> str:
    """The module `cls` was defined in, judged by what its methods run with, not by what it says
    (`__module__` is a class attribute like any other: hostile11 f1 set it to exercise 4's name on
    a class of exercise 7's own). The first class along its MRO that defines functions of its own
    (seen through staticmethod, classmethod, partialmethod, partial, property: `_function_of`)
    names the module: the student module (`spaces`: id of the namespace of an exercise's module,
    or of the copy of a file one imported -> its name) those functions run in (`_space_of`: "?" for
    code compiled from another file than that module's, `files`), all of them joined where they
    run in two; a class of no student module (torch's) is named by its `__module__`, and one whose
    functions are none a student module's but which claims a student module, or a module not
    loaded, is named "?"."""
    for klass in type.__dict__["__mro__"].__get__(cls):
        functions = [
            f for value in type.__dict__["__dict__"].__get__(klass).values() if (f := _function_of(value))
        ]
        if not functions:
            continue
        names = sorted({_space_of(f, spaces, files or {}) for f in functions} - {None})
        if names:  # functions of two student modules (one lent its methods to the other's class,
            return " + ".join(names)  # or had one put in): of neither alone
        # functions of no student module (torch's, borrowed): only a class of a library's own may
        # say where it is from (a module the interpreter loaded that is not a student's); one that
        # claims any other module, with none of its code, is no one's
        claimed = str(cls.__module__)
        library = sys.modules.get(claimed)
        space = getattr(library, "__dict__", None) if type(library) is types.ModuleType else None
        return claimed if type(space) is dict and id(space) not in spaces else "?"
    return str(cls.__module__)


def _space_of(
    function: types.FunctionType, spaces: dict[int, str], files: dict[int, str | None]
) -> str | None:
    """The student module `function` runs in, "?" where its code was compiled from another file than
    that module's (`types.FunctionType(code, other_module.__dict__)`: hostile13 V4), None for none."""
    name = spaces.get(id(function.__globals__))
    if name is None:
        return None
    file = files.get(id(function.__globals__))
    return name if file is None or file == function.__code__.co_filename else "?"


def _function_of(value) -> types.FunctionType | None:
    """The Python function a class attribute runs, through the wrappers that hold one: staticmethod,
    classmethod, `functools.partialmethod`/`partial`, a property's getter (hostile12 f1, f2: a class
    whose methods were all `partialmethod` objects was named by what it said it was)."""
    for _ in range(8):  # wrappers of wrappers, a few deep; anything deeper is no one's function
        kind = type(value)  # never `isinstance`, which asks the object's own `__class__`
        if kind is types.FunctionType:
            return value
        if kind is staticmethod or kind is classmethod:
            value = value.__func__
        elif kind is functools.partialmethod or kind is functools.partial:
            value = value.func
        elif kind is property:
            value = value.fget
        else:
            return None
    return None


def make_sibling_loader(sibling_sources, siblings, owners, student_files, file_owners):
    """`load(owner, name)`: exercise `owner`'s copy of its sibling module `name`, run on first import.
    Registered before it runs, as Python does, so that circular imports see the partly run module.
    A closure over the Worker's tables (not the Worker): what the import guard calls."""

    def load(owner: str, name: str) -> types.ModuleType:
        key = (owner, name)
        if key not in siblings:
            filename, source = sibling_sources[owner][name]
            code = compile(source, filename, "exec", dont_inherit=True)
            module = types.ModuleType(name)
            module.__file__ = filename
            siblings[key] = module
            owners[id(module.__dict__)] = owner
            student_files.add(filename)
            file_owners[filename] = owner
            previous = sys.modules.get(name)  # dataclasses, typing look a class's module up there
            space = getattr(previous, "__dict__", None)
            if previous is None or (type(space) is dict and owners.get(id(space)) is not None):
                sys.modules[name] = module  # never in place of a module of the interpreter
            exec(code, module.__dict__)
        return siblings[key]

    return load


def inference_as_no_grad() -> None:
    """In the worker, `torch.inference_mode()` turns gradients off as `torch.no_grad()` does and makes
    no inference tensors: those skip the dispatcher key the tripwire watches banned operators at
    (`Tripwire._watch_dispatcher`). What the submission computes is the same; only the flag that
    forbids using such a tensor in autograd later is not set (more permissive, never less)."""
    cls = torch.autograd.grad_mode.inference_mode
    set_grad, grad_enabled = torch._C._set_grad_enabled, torch.is_grad_enabled

    def __enter__(self) -> None:
        self._worker_prev = grad_enabled()
        if self.mode:
            set_grad(False)

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        set_grad(self._worker_prev)

    cls.__enter__, cls.__exit__ = __enter__, __exit__


def _backward_pass(grad):
    """The worker's own backward pass (`make_vjp`): `grad` is torch's `autograd.grad`, bound before
    any submission ran. Its frame is how the recorder knows a banned operator's call comes from
    autograd answering a gradient request, not from the submission (`make_recorder`)."""

    def torch_backward(loss, inputs):
        return grad(loss, inputs, allow_unused=True)

    return torch_backward


BACKWARD_CODE = _backward_pass(None).__code__


def make_recorder(owners, files, file_owners, current, sendall, lock):
    """`record(dotted)`: send a hit now, as an event frame (it carries no `nonce`), naming the
    exercise and the student's line where they are known. Bound here, before any submission runs;
    nothing in it is looked up later.

    Whose call it is does not depend on the globals a frame runs with alone (hostile10 s1, s2: code
    exec'd into a fresh dict, a function rebuilt with a copy of its module's globals) nor on the
    calling thread (s3: a thread of the submission's own): walking out from the call, the innermost
    frame of an exercise module (`owners`: id of a module's globals -> its exercise) or of a file of
    the submission (`files`: its files and every name code it compiled carries; `file_owners`: the
    exercise of each file loaded) gives the line. Every call is the submission's except one whose
    stack reaches the worker's own backward pass (`BACKWARD_CODE`, run with torch's own `grad`)
    before any frame of the submission: torch's backward of what the forward pass computed. A call
    on another thread, or one with no frame of the submission on the stack (a function of torch
    the submission handed over as its own), is the exercise's whose request is being answered
    (`current[0]`, None before any)."""
    getframe, pack = sys._getframe, wire.pack_frame
    get, get_file = owners.get, file_owners.get
    backward_code, real_grad = BACKWARD_CODE, torch.autograd.grad

    def record(dotted: str, owned_only: bool = False) -> None:
        frame, owner, line, seen = getframe(2), None, 0, False
        while frame is not None:
            code = frame.f_code
            space = frame.f_globals
            found = get(id(space)) if type(space) is dict else None
            if found is not None:  # the exercise's own code, or a sibling module it imported
                if owner is None:  # else an inner frame of one of its files gave the line already
                    line = frame.f_lineno
                owner = found
                break
            if not seen and code.co_filename in files:  # its file, whatever globals the code runs with
                seen, owner, line = True, get_file(code.co_filename), frame.f_lineno
            elif (
                not seen and owned_only and code is backward_code and frame.f_locals.get("grad") is real_grad
            ):
                return  # torch's own backward pass of a gradient request, no submission code above it
            frame = frame.f_back
        if owner is None:
            owner = current[0]
        data = pack({"event": "tripwire", "module": owner, "what": dotted, "line": int(line)})
        with lock:
            sendall(data)

    return record


# What reads the interpreter's own state: its stack frames, its object graph, a tracer's view of every
# frame, and the C API through ctypes. From there code reaches the worker's objects (the request being
# answered, the socket, the reply being built): a submission that walked the stack to the vjp
# request and sent a complete reply of its own scored two gradient checks on a cut graph (hostile8 f2).
WATCHED_EVENTS = frozenset(
    {"sys._getframe", "sys._current_frames", "sys._current_exceptions", "gc.get_objects", "gc.get_referrers",
     "gc.get_referents", "sys.settrace", "sys.setprofile", "ctypes.dlsym"}
)  # fmt: skip
WATCHED_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})  # audited as object.__getattr__
# library functions that hand their caller a frame (called by student code, they count as its call)
FRAME_HELPERS = frozenset(
    {("inspect", "currentframe"), ("inspect", "stack"), ("inspect", "trace"), ("inspect", "getouterframes"),
     ("inspect", "getinnerframes"), ("traceback", "walk_stack"), ("traceback", "walk_tb"),
     ("logging", "<lambda>"), ("ctypes", "__getattr__"), ("ctypes", "__getitem__")}
)  # fmt: skip


# Where the code of Python, its libraries and this package lives (read when the zygote imports this
# module, before any sandbox): code from anywhere else (the submission's files, or code it compiled
# itself, "<string>" or any name it chose) counts as the submission's.
TRUSTED_CODE = tuple(
    sorted(
        {sysconfig.get_paths()[key] + "/" for key in ("stdlib", "platstdlib", "purelib", "platlib")}
        | {str(Path(__file__).resolve().parents[2]) + "/", "<frozen "}
    )
)


class TorchTampered(RuntimeError):
    """Raised when the submission replaced what the worker's backward pass runs on."""


def _backward_namespaces() -> list:
    """What `op_vjp` computes gradients with: autograd's modules and the classes whose methods it
    calls. A submission that replaces any of their entries (``torch.autograd.grad = …``, the engine
    that function calls, `Tensor.requires_grad_`) could answer the gradient request itself."""
    import torch.autograd.graph
    import torch.autograd.variable

    return [
        torch.autograd, torch.autograd.graph, torch.autograd.variable, torch.autograd.Variable,
        torch.Tensor, torch._C.TensorBase, torch.nn.Module,
    ]  # fmt: skip


class BackwardSeal:
    """The entries of `_backward_namespaces`, and of the worker's own code that answers a gradient
    request (this module, `wire`, the `Worker` class and the worker object's attributes), as they
    were before any submission ran; `broken()` names those that changed since. The snapshot is kept
    in read-only views: nothing here can be edited to agree with a change."""

    def __init__(self, worker=None) -> None:
        spaces = _backward_namespaces() + [sys.modules[__name__], wire, Worker]
        seen = [(space, getattr(space, "__name__", "?")) for space in spaces]
        if worker is not None:
            seen.append((worker, "the worker"))
        self.spaces = tuple(
            (space, where, types.MappingProxyType(dict(vars(space)))) for space, where in seen
        )

    def broken(self) -> list[str]:
        out = []
        for space, where, before in self.spaces:
            now = vars(space)
            for key in now.keys() | before.keys():
                value = now.get(key)
                if value is before.get(key):
                    continue
                if key not in before and isinstance(value, types.ModuleType):
                    continue  # a submodule imported since: torch sets it on its package
                out.append(f"{where}.{key}")
        return sorted(out)


class Unfit(TypeError):
    """Raised when a tensor handed to the gradient computation is of a class of the submission's
    own that overrides torch's functions (it could answer the gradient request itself)."""


def _own_override(value) -> str | None:
    """The class of `value` when it is a tensor whose class (not torch's Tensor or Parameter) has a
    `__torch_function__` or `__torch_dispatch__` of its own, else None."""
    if not isinstance(value, torch.Tensor):
        return None
    cls = type(value)
    if cls is torch.Tensor or cls is torch.nn.Parameter:
        return None
    torch_own = (torch.Tensor, torch.nn.Parameter, torch._C.TensorBase, object)
    for klass in cls.__mro__:
        if klass not in torch_own and (
            "__torch_function__" in vars(klass) or "__torch_dispatch__" in vars(klass)
        ):
            return f"{cls.__module__}.{cls.__qualname__}"
    return None


def make_vjp(worker, seal):
    """The `vjp` request's handler, a closure over what it computes with, bound before any submission
    runs (see `Worker.make_ops`): torch's `autograd.grad`, the seal, torch's switch that turns off
    every `__torch_function__` override, and the worker's own helpers. A submission that reaches the
    Worker and replaces its attributes (hostile9 f1, f2) changes nothing here, and the seal names
    the change; one whose tensors override torch's functions (f3) is refused by name."""
    grad, broken, no_overrides = torch.autograd.grad, seal.broken, torch._C.DisableTorchFunction
    target, decode, encode, reseed = worker._target, wire.decode_value, wire.encode_value, worker._reseed
    resolve, handle = worker._resolve, worker._handle
    is_tensor, module_type, dispatch_modes = torch.Tensor, torch.nn.Module, torch._C._len_torch_dispatch_stack
    own_override = _own_override
    backward = _backward_pass(grad)  # its frame tells the tripwire these calls are torch's (`make_recorder`)

    def op_vjp(self, req, bufs):
        """Call, then backpropagate `sum(output_i * cotangent_i)`; return outputs and gradients."""
        fn = target(req["target"])
        args = list(decode(req["args"], bufs, resolve))
        cotangents = decode(req["cotangents"], bufs, resolve)
        for i in req["grad_args"]:
            args[i] = args[i].detach().clone().requires_grad_(True)
        module = fn if isinstance(fn, module_type) else getattr(fn, "__self__", None)
        params = dict(module.named_parameters()) if isinstance(module, module_type) else {}
        for p in params.values():
            p.grad = None
        reseed(req)
        outputs = fn(*args)
        leaves = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
        targets = [args[i] for i in req["grad_args"]] + list(params.values())
        for what, values in (("an output", leaves), ("a parameter", list(params.values()))):
            for value in values:
                cls = own_override(value)
                if cls is not None:
                    raise Unfit(
                        f"{what} of your code is of class {cls}, a tensor class of your own that overrides"
                        " torch's functions: the gradients are computed with torch's own autograd on plain"
                        " tensors"
                    )
        changed = broken()
        if changed or dispatch_modes() > 0:  # what computes the gradients is no longer torch's
            changed = changed or ["torch's dispatcher (a dispatch mode is on)"]
            raise TorchTampered(
                f"your code replaced {', '.join(changed[:3])}: the gradients are computed with torch's own"
                " autograd, which a submission may not replace"
            )
        with no_overrides():
            loss = None
            for leaf, cot in zip(leaves, cotangents, strict=False):  # a wrong output count fails later
                if cot is not None and isinstance(leaf, is_tensor) and leaf.requires_grad:
                    term = (leaf * cot.to(leaf.dtype)).sum()
                    loss = term if loss is None else loss + term
            # the gradients autograd computes along the graph, never what ended up in `.grad` (a hook
            # could write anything there, on a graph cut off from the inputs)
            wanted = [i for i, t in enumerate(targets) if isinstance(t, is_tensor) and t.requires_grad]
            grads: list = [None] * len(targets)
            if loss is not None and wanted:
                found = backward(loss, [targets[i] for i in wanted])
                for i, g in zip(wanted, found, strict=True):
                    grads[i] = g
        count = len(req["grad_args"])
        out: list[bytes] = []
        value = {
            "outputs": outputs,
            "input_grads": grads[:count],
            "param_grads": dict(zip(params, grads[count:], strict=True)),
            "backward_ran": loss is not None,
        }
        return {"ok": True, "value": encode(value, out, handle)}, out

    return op_vjp


class IntrospectionRefused(RuntimeError):
    """Raised into student code that reads the interpreter's frames or object graph."""


def watch_introspection(student_files: set[str], notify) -> None:
    """Install (for good: an audit hook cannot be removed) a watch on `WATCHED_EVENTS`: when the code
    that asks is the submission's own (its file, or one of `FRAME_HELPERS` called from it), the
    trusted side is told at once (`notify(what, line)`: an event frame, sent through references
    bound here, before the submission holds anything of the worker) and the call is refused.
    Everything the hook needs is bound in its closure now; nothing in it is looked up later."""
    getframe, busy = sys._getframe, [False]
    files, helpers, events, attrs = student_files, FRAME_HELPERS, WATCHED_EVENTS, WATCHED_ATTRS
    refused = IntrospectionRefused
    trusted = TRUSTED_CODE
    # compile(source, NAME), types.CodeType(..., NAME, ...) and code.replace(co_filename=NAME), exec of a
    # code object: called from the submission's code, NAME joins its files (hostile10 compiled under
    # "<frozen …>" and a standard-library path, which the checks below took for the library's)
    made = frozenset({"compile", "code.__new__", "exec"})

    def hook(event: str, args: tuple) -> None:
        if event in made and not busy[0]:  # code the submission makes is the submission's, whatever its name
            busy[0] = True
            try:
                caller = getframe(1).f_code.co_filename
                if caller in files or not caller.startswith(trusted):
                    name = getattr(args[0], "co_filename", None) if event == "exec" else args[1]
                    if isinstance(name, str):
                        files.add(name)
                    elif isinstance(name, bytes):
                        files.add(name.decode("utf-8", "surrogateescape"))
            finally:
                busy[0] = False
            return
        if event not in events and not (event == "object.__getattr__" and args[1] in attrs) or busy[0]:
            return
        if event == "ctypes.dlsym" and not str(args[1]).startswith(("Py", "_Py")):
            return  # a C library's own function, not the interpreter's API
        busy[0] = True
        try:
            frame = getframe(1)
            code = frame.f_code
            while (frame.f_globals.get("__name__"), code.co_name) in helpers and frame.f_back is not None:
                frame = frame.f_back
                code = frame.f_code
            if code.co_filename not in files and code.co_filename.startswith(trusted):
                return
            what = event if event != "object.__getattr__" else f".{args[1]}"
            notify(what, frame.f_lineno)
        finally:
            busy[0] = False
        raise refused(f"{what}: reading the interpreter's frames or object graph is not allowed here")

    sys.addaudithook(hook)


class Worker:
    def __init__(self, sock, allowed_imports: frozenset[str]) -> None:
        self.sock = sock
        self.allowed_imports = allowed_imports
        self.objects: dict[int, object] = {}
        self.handle_ids: dict[int, int] = {}
        self.modules: dict[str, types.ModuleType] = {}
        self.student_files: set[str] = set()
        self.owners: dict[int, str] = {}  # id(module.__dict__) of every student module -> its exercise
        self.file_owners: dict[str, str] = {}  # file name of every module loaded -> its exercise
        self.module_files: dict[str, str] = {}  # an exercise's module -> the file name it was compiled as
        self.current: list = [None]  # the exercise whose request is being answered (`serve`)
        self.sibling_sources: dict[str, dict[str, tuple[str, bytes]]] = {}  # exercise -> name -> file, source
        self.siblings: dict[tuple[str, str], types.ModuleType] = {}  # (exercise, name) -> its copy
        self._sendall = sock.sendall  # bound now: rebinding the socket class later changes nothing here
        self._pack = wire.pack_frame
        self._send_lock = threading.Lock()  # a frame is never interleaved with another thread's
        self.owners_view = types.MappingProxyType(self.owners)  # what closures get: read-only
        self._load_sibling = make_sibling_loader(
            self.sibling_sources, self.siblings, self.owners, self.student_files, self.file_owners
        )
        recorder = make_recorder(
            self.owners_view, self.student_files, types.MappingProxyType(self.file_owners), self.current,
            self._sendall, self._send_lock,
        )  # fmt: skip
        self.tripwire = Tripwire(recorder)

    def introspection_notifier(self):
        """`notify(what, line)` for `watch_introspection`, bound to this socket now."""
        sendall, pack, lock = self._sendall, self._pack, self._send_lock

        def notify(what: str, line: int) -> None:
            frame = pack({"event": "introspection", "what": str(what)[:100], "line": int(line)})
            with lock:
                sendall(frame)

        return notify

    def owner_of(self, namespace) -> str | None:
        """The exercise module whose code runs with `namespace` as its globals, or None."""
        return self.owners.get(id(namespace)) if type(namespace) is dict else None

    def make_ops(self) -> dict:
        """The request handlers, with `vjp` a closure over what computes and checks gradients, all
        bound now (`serve` calls this before any submission runs and keeps the table in a local):
        code that reaches this Worker later and replaces its attributes, or `Worker.OPS`, changes
        neither what answers a request nor what computes a gradient (the seal names the change)."""
        return dict(self.OPS, vjp=make_vjp(self, BackwardSeal(self)))

    # ------------------------------------------------------------ handles

    def _handle(self, obj) -> wire.Handle:
        key = id(obj)
        if key not in self.handle_ids:
            hid = len(self.objects) + 1
            self.objects[hid] = obj
            self.handle_ids[key] = hid
        t = type(obj)
        return wire.Handle(self.handle_ids[key], f"{t.__module__}.{t.__qualname__}", callable(obj))

    def _resolve(self, h: wire.Handle):
        if h.id not in self.objects:
            raise LookupError(f"unknown handle {h.id}")
        return self.objects[h.id]

    def _target(self, ref):
        if type(ref) is dict and "$module" in ref:
            return self.modules[ref["$module"]]
        return wire.decode_value(ref, [], self._resolve)

    def _encode(self, value, buffers):
        return wire.encode_value(value, buffers, self._handle)

    # ------------------------------------------------------------ imports

    def _guarded_import(self, original):
        """`__import__` as the submission sees it. Which imports are the submission's is decided by
        the code that asks (the caller frame's file): code of Python, its libraries and this package
        (`TRUSTED_CODE`, "<frozen " included) imports freely; anything else, the submission's files
        or code compiled from a string (an eval gadget's "<string>", whatever globals it was given),
        is held to the allow-list. The guard closes over plain values and functions bound here, not
        the Worker (its sibling loader does hold the Worker's tables of modules)."""
        allowed, trusted, files = self.allowed_imports, TRUSTED_CODE, self.student_files
        getframe, owners, modules = sys._getframe, self.owners_view, sys.modules
        sources, sibling = self.sibling_sources, self._load_sibling
        refusal = functools.partial(refusal_text, allowed, sources)

        def guarded(name, globals=None, locals=None, fromlist=(), level=0):
            file = getframe(1).f_code.co_filename
            if file not in files and file.startswith(trusted):
                return original(name, globals, locals, fromlist, level)
            owner = owners.get(id(globals)) if type(globals) is dict else None
            top = name.partition(".")[0]
            if level == 0 and top in allowed:
                return original(name, globals, locals, fromlist, level)
            if owner is not None and level == 0 and name == top and top in sources.get(owner, {}):
                return sibling(owner, top)
            refused = ImportRefused(refusal(owner, name, level))
            plain = level == 0 and name.isidentifier() and name.isascii()
            if owner is not None and plain and name not in modules:  # a file of theirs, missing
                refused.missing = (f"{name}.py", str(globals.get("__file__", "")))  # file, importer
            raise refused

        return guarded

    def _refusal(self, owner: str | None, name: str, level: int) -> str:
        """Why the student's `import name` is refused, naming the file it would need."""
        return refusal_text(self.allowed_imports, self.sibling_sources, owner, name, level)

    def _sibling(self, owner: str, name: str) -> types.ModuleType:
        """Exercise `owner`'s copy of its sibling module `name` (see `make_sibling_loader`)."""
        return self._load_sibling(owner, name)

    def install_import_guard(self) -> None:
        builtins.__import__ = self._guarded_import(builtins.__import__)

    @staticmethod
    def seal_imports() -> dict:
        """From now on only modules already in `sys.modules` (or built into the interpreter) import.

        Returns the path finders' old cache, which the caller keeps alive until the worker exits:
        emptying it would free a finder and its set of file names per library folder (~200 here),
        writing to pages shared with the zygote, 4-5 ms of every worker's start."""
        keep = (importlib.machinery.BuiltinImporter, importlib.machinery.FrozenImporter)
        sys.meta_path[:] = [finder for finder in sys.meta_path if finder in keep]
        sys.path_hooks.clear()
        retired, sys.path_importer_cache = sys.path_importer_cache, {}
        sys.path[:] = []
        return retired

    # ------------------------------------------------------------ ops

    def op_load(self, req, bufs):
        name, filename = req["module"], req["filename"]
        self.tripwire.arm(name, req.get("banned") or [])
        siblings = req.get("siblings") or []
        self.sibling_sources[name] = {
            str(sib): (str(file), bytes(buf)) for (sib, file), buf in zip(siblings, bufs[1:], strict=True)
        }
        for key in [k for k in self.siblings if k[0] == name]:  # a reload runs its siblings afresh
            del self.siblings[key]
        code = compile(bufs[0], filename, "exec", dont_inherit=True)
        module = types.ModuleType(name)
        module.__file__ = filename
        self.modules[name] = module
        self.module_files[name] = filename
        self.owners[id(module.__dict__)] = name
        self.student_files.add(filename)
        self.file_owners[filename] = name
        sys.modules[name] = module
        exec(code, module.__dict__)
        return {"ok": True}

    def op_getattr(self, req, bufs):
        value = getattr(self._target(req["target"]), req["name"])
        out: list[bytes] = []
        return {"ok": True, "value": self._encode(value, out)}, out

    def op_hasattr(self, req, bufs):
        return {"ok": True, "value": hasattr(self._target(req["target"]), req["name"])}

    @staticmethod
    def _reseed(req) -> None:
        """Start a call from a given random state (`seed` in the request), so that calls repeat.

        The CPU generator is seeded directly: `torch.manual_seed` would also queue a lazy seed for
        every accelerator backend, which records a formatted stack each time (~1 ms a call here,
        where linecache finds no source files); a worker computes on the CPU only (dense CPU
        tensors are all the wire carries), so the random state a call sees is the same."""
        seed = req.get("seed")
        if type(seed) is int:
            torch.default_generator.manual_seed(seed)
            random.seed(seed)
            np.random.seed(seed % 2**32)

    def op_call(self, req, bufs):
        fn = self._target(req["target"])
        method = req.get("method")
        if type(method) is str:  # `obj.method(...)` read and called in one request
            fn = getattr(fn, method)
        args = wire.decode_value(req["args"], bufs, self._resolve)
        kwargs = wire.decode_value(req["kwargs"], bufs, self._resolve)
        self._reseed(req)
        value = fn(*args, **kwargs)
        out: list[bytes] = []
        return {"ok": True, "value": self._encode(value, out)}, out

    def op_introspect(self, req, bufs):
        obj = self._target(req["target"])
        t = type(obj)
        info = {
            "class": t.__qualname__,
            "module": t.__module__,
            "is_nn_module": isinstance(obj, torch.nn.Module),
        }
        if isinstance(obj, torch.nn.Module):
            info["training"] = obj.training
            info["parameters"] = [[n, list(p.shape), p.requires_grad] for n, p in obj.named_parameters()]
            info["buffers"] = [[n, list(b.shape)] for n, b in obj.named_buffers()]
            spaces = {id(module.__dict__): name for name, module in self.modules.items()}
            spaces.update({id(module.__dict__): name for (_, name), module in self.siblings.items()})
            files = {
                id(module.__dict__): self.module_files.get(name) for name, module in self.modules.items()
            }
            files.update(
                {id(m.__dict__): self.sibling_sources[o][n][0] for (o, n), m in self.siblings.items()}
            )
            info["modules"] = [
                [n, type(m).__qualname__, _defined_in(type(m), spaces, files)] for n, m in obj.named_modules()
            ]
        return {"ok": True, "value": wire.encode_value(info, [])}

    def op_tripwire(self, req, bufs):
        module = req["target"].get("$module") if type(req.get("target")) is dict else None
        return {"ok": True, "value": wire.encode_value(self.tripwire.report(str(module)), [])}

    def op_prepare_heap(self, req, bufs):
        """Set the heap up for the peak-memory measurement that follows (see `isolation`)."""
        return {"ok": True, "value": isolation.prepare_heap_for_measurement()}

    OPS = {
        "prepare_heap": op_prepare_heap,
        "tripwire": op_tripwire,
        "load": op_load,
        "getattr": op_getattr,
        "hasattr": op_hasattr,
        "call": op_call,
        "introspect": op_introspect,
    }

    # ------------------------------------------------------------ loop

    def _error_reply(self, exc: BaseException) -> dict:
        try:
            message = str(exc)[:MAX_MESSAGE_CHARS]
        except BaseException:
            message = "<the exception could not be printed>"
        try:
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename in self.student_files]
            tb = "".join(traceback.format_list(frames))[-4 * MAX_MESSAGE_CHARS :]
            where = [[f.filename, f.lineno, f.name] for f in frames[-MAX_FRAMES:]]
        except BaseException:
            tb, where = "", []
        missing = getattr(exc, "missing", ()) if type(exc) is ImportRefused else ()
        missing = [str(m)[:200] for m in missing][:2]
        return {
            "ok": False,
            "error": {
                "type": type(exc).__name__[:100],
                "message": message,
                "traceback": tb,
                "frames": where,  # [file, line, function] of the student's own frames, innermost last
                "not_implemented": isinstance(exc, NotImplementedError),
                "import_refused": isinstance(exc, ImportRefused),
                "syntax": isinstance(exc, SyntaxError),
                "file": str(getattr(exc, "filename", "") or "")[:200] if isinstance(exc, SyntaxError) else "",
                "missing": missing,  # [file, importer] of a sibling that is not there
            },
        }

    def serve(self) -> None:
        ops = self.make_ops()  # bound now, before any submission runs (see `make_ops`)
        while True:
            try:
                req, bufs = wire.recv_frame(self.sock)
            except wire.WireError:
                return
            handler = ops.get(req.get("op"))
            module = req.get("module")
            self.current[0] = module if type(module) is str else None
            cpu = req.get("cpu")
            if type(cpu) in (int, float) and cpu > 0:
                isolation.set_call_cpu_limit(cpu)
            try:
                result = handler(self, req, bufs)
                header, out = result if isinstance(result, tuple) else (result, [])
            except BaseException as exc:  # student code may raise anything, SystemExit included
                header, out = self._error_reply(exc), []
            header["nonce"] = req.get("nonce")  # the request's own number: a reply answers it alone
            try:
                frame = wire.pack_frame(header, out)
            except BaseException as exc:
                frame = wire.pack_frame(dict(self._error_reply(exc), nonce=req.get("nonce")))
            with self._send_lock:
                self._sendall(frame)


def main(sock, allowed_imports) -> None:
    inference_as_no_grad()
    worker = Worker(sock, frozenset(allowed_imports))
    watch_introspection(worker.student_files, worker.introspection_notifier())
    worker.install_import_guard()
    retired = worker.seal_imports()  # noqa: F841  (alive until os._exit: never freed, see there)
    worker.serve()
