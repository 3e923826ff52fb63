"""The trusted side's view of a submission: a proxy whose every use is a request to a sandbox.

`StudentSession` owns the one worker of a submission; each exercise's module is loaded into it
on first use. It reads the student's files as bytes (regular files only, symlinks refused), has
the worker compile and run them, and replaces the worker after any failure so that one crash costs
only the check it happened in (the other modules load again into the fresh worker when next used).
Checks see `StudentModule` and `RemoteObject`: attribute reads and calls go to the worker, and only
plain data (tensors, numbers, strings, lists) comes back.

Sharing one worker between exercises (one fork per submission instead of one per exercise: a
worker costs ~22 ms of CPU to fork, isolate and tear down) has one cost: a module that sabotages
the worker itself, e.g. leaves a thread spinning, can cost another exercise the check in which that
is noticed; the replacement worker then holds only the modules used after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..sandbox import wire
from ..sandbox.client import (
    ALLOWED_IMPORTS,
    CapturedOutput,
    SandboxFailure,
    SandboxPool,
    SandboxWorker,
    WorkerTimeout,
)
from .budget import EXERCISE_FACTOR, Stopwatch, SubmissionClock, code_of
from .diagnoses import COMMON_ERRORS
from .errors import (
    CheckFailed,
    GraderFault,
    StudentCodeError,
    StudentCrash,
    StudentFault,
    StudentNotImplemented,
    StudentTimeout,
    SubmissionFileError,
    match_error,
)
from .i18n import say
from .siblings import sibling_sources
from .source import MAX_SOURCE_BYTES, read_module_source, read_submission_file  # noqa: F401  (read from here too)

MEMORY_ERROR = re.compile(
    r"bad_alloc|can't allocate memory|out of memory|Cannot allocate memory", re.IGNORECASE
)


def describe_value(value) -> str:
    """A short, data-free description of an argument the grader sent: shapes, not numbers."""
    if isinstance(value, RemoteObject):
        return value._label
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"{type(value).__name__}{tuple(shape)}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(describe_value(v) for v in value[:4]) + (", …" if len(value) > 4 else "")
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {describe_value(v)}" for k, v in list(value.items())[:4]) + "}"
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def describe_call(label: str, args=(), kwargs=None) -> str:
    """`layer(Tensor(2, 5, 16))`: the call that raised, with the shapes of its inputs."""
    parts = [describe_value(a) for a in args] + [
        f"{k}={describe_value(v)}" for k, v in (kwargs or {}).items()
    ]
    return f"{label}({', '.join(parts)})"


PRELUDE_MODULE = "_grader_prelude"  # not a valid exercise id: never a student module's name
WARM_MODULE = "_grader_warm_up"  # trusted code a measurement's fresh worker runs first (`afresh`)


def prelude(seed: int) -> bytes:
    """Source the worker runs before loading a module into a worker that already served another:
    the module starts from the state a fresh worker forked with `seed` would give it."""
    return (
        "import torch\n"
        f"torch.manual_seed({int(seed)})\n"
        "torch.set_grad_enabled(True)\n"
        "torch.set_default_dtype(torch.float32)\n"
    ).encode()


@dataclass
class ModuleSlot:
    """One exercise's module within a session: where it comes from and where it is loaded."""

    name: str
    path: Path
    seed: int
    call_seconds: float
    source: bytes | None = None
    label: str = ""  # the exercise it counts for: output and time budget (default: its own name)
    base: ModuleSlot | None = None  # the module whose source this one extends (`derive`)
    suffix: bytes = b""
    load_error: StudentFault | None = None
    generation: int = 0  # the worker generation it is loaded in; 0: none
    banned: tuple[str, ...] = ()  # names the worker's tripwire watches for this module (see `banned`)
    siblings: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # files it imports (`siblings`)
    provided: dict[str, bytes] = field(default_factory=dict)  # trusted sources for siblings (`with_siblings`)
    objects: dict[str, RemoteObject] = field(default_factory=dict)  # module attributes read, see below
    # where the source comes from when it is not the file `path`: a notebook's cells (see `notebook`);
    # it has read(), display (the file messages name), compile_name, place(line) and translate(text)
    origin: object | None = None

    def __post_init__(self) -> None:
        self.label = self.label or self.name

    @property
    def display(self) -> str:
        """The file messages name: the `.py` file, or the notebook."""
        return self.origin.display if self.origin is not None else self.path.name

    @property
    def compile_name(self) -> str:
        """The file name the worker compiles the module under (what its tracebacks mention)."""
        return self.origin.compile_name if self.origin is not None else self.path.name


class StudentSession:
    """The modules of one submission, loaded in one sandboxed worker.

    Each exercise's module loads into the worker the first time one of its checks uses it (the
    worker is forked then, with that module's seed; a module that joins a worker which already
    served another is preceded by `prelude`, which reseeds torch as a fresh worker would be). After
    any failure (timeout, crash, protocol) the worker is replaced by a fresh one, and each module is
    loaded again on its next use: objects from the old worker are refused as stale (`generation`).
    A module whose load fails keeps failing, and only that module's checks. Every request runs
    under the deadline of the module it belongs to, and what the worker prints is filed under that
    module's name (`printed`).
    """

    def __init__(self, pool: SandboxPool) -> None:
        self.pool = pool
        self.worker: SandboxWorker | None = None
        self.generation = 0
        self.protections: list[str] = []
        self.slots: dict[str, ModuleSlot] = {}
        self._outputs: list[CapturedOutput] = []  # of the workers already retired
        # Every call starts from the module's random state (torch, numpy, random), so that a random
        # forward pass repeats: randomness is judged where a check asks for fresh draws (`fresh_draws`).
        self.reseed = True
        self.clock = SubmissionClock(pool.limits.submission_seconds)  # see `budget`

    def add(
        self, name: str, path: Path, seed: int, call_seconds: float | None = None, banned=(), origin=None
    ) -> ModuleSlot:
        """Declare the module `name` (file `path`, or `origin`: a notebook's cells); `call_seconds` is
        capped by the pool's limit; `banned` names are watched by the worker's tripwire while it runs
        (see `banned`)."""
        if name not in self.slots:
            cap = self.pool.limits.call_seconds
            seconds = min(call_seconds or cap, cap)
            self.slots[name] = ModuleSlot(name, path, seed, seconds, banned=tuple(banned), origin=origin)
            budget = self.pool.limits.exercise_seconds or EXERCISE_FACTOR * self.slots[name].call_seconds
            self.clock.add(name, budget)
        return self.slots[name]

    def module(self, name: str) -> StudentModule:
        return StudentModule(self, self.slots[name])

    def derive(self, name: str, suffix: bytes, tag: str) -> StudentModule:
        """Module `name` with `suffix` (trusted source) appended, loaded as a module of its own:
        definitions in `suffix` replace the student's under the same names, while line numbers,
        printed output and every limit stay those of the student's module."""
        base = self.slots[name]
        derived = f"{name}__{tag}"
        if derived not in self.slots:
            self.slots[derived] = ModuleSlot(
                derived, base.path, base.seed, base.call_seconds, label=base.label, base=base,
                suffix=suffix, banned=base.banned, origin=base.origin,
            )  # fmt: skip
        return StudentModule(self, self.slots[derived])

    def with_siblings(self, name: str, provided: dict[str, bytes], tag: str) -> StudentModule:
        """Module `name` as the student wrote it, loaded as a module of its own in which the sibling
        modules named in `provided` are trusted sources (e.g. a correct earlier exercise) instead of
        the student's files: a later part is graded on its own, whatever the earlier part does or
        whether its file exists (error carried forward). Limits and output stay the student's."""
        base = self.slots[name]
        derived = f"{name}__{tag}"
        if derived not in self.slots:
            self.slots[derived] = ModuleSlot(
                derived, base.path, base.seed, base.call_seconds, label=base.label, banned=base.banned,
                provided=dict(provided), origin=base.origin,
            )  # fmt: skip
        return StudentModule(self, self.slots[derived])

    def afresh(self, name: str, warm: bytes, *args) -> SandboxWorker:
        """Retire the worker and start a fresh one in which only `warm` (trusted source) is loaded and
        its `warm(*args)` has run, with module `name`'s seed and limits (its time counts for `name`):
        every module loads again on its next use. What a peak-memory measurement starts from
        (`expect.peak_memory`): nothing of the submission is in that worker yet, so memory its
        module takes when it loads, or in a call before the measured one, cannot be freed inside
        the measured call to make room for what that call builds; `warm` has torch take what it
        takes on first use of the operations a correct solution uses, so that is not counted."""
        base = self.slots[name]
        self._retire()
        slot = ModuleSlot(WARM_MODULE, Path("<warm-up>"), base.seed, base.call_seconds, source=warm,
                          label=base.label)  # fmt: skip
        self.slots[WARM_MODULE] = slot
        self._ensure(slot)
        self.module(WARM_MODULE).warm(*args)
        assert self.worker is not None
        return self.worker

    def current(self, slot: ModuleSlot) -> bool:
        """Is `slot`'s module loaded in a worker that is still alive?"""
        return self.worker is not None and self.worker.alive and slot.generation == self.generation

    # ------------------------------------------------------------ lifecycle

    def _ensure(self, slot: ModuleSlot) -> SandboxWorker:
        """The live worker with `slot`'s module loaded, or the `StudentFault` that prevents it."""
        if slot.load_error is not None:
            raise slot.load_error
        if slot.source is None:
            try:
                if slot.base is not None:  # the student's file first: its own problems are reported as such
                    self._ensure(slot.base)
                    slot.siblings = slot.base.siblings
                    slot.source = slot.base.source + b"\n\n" + slot.suffix
                else:  # the file, or a notebook's cells: their imports are found the same way
                    source = read_module_source(slot.path, slot.origin)
                    slot.siblings = sibling_sources(
                        slot.path.parent, source, ALLOWED_IMPORTS, slot.provided, shown=slot.display
                    )
                    slot.source = source
            except SubmissionFileError as exc:
                slot.load_error = exc
                raise
        fresh = self.worker is None or not self.worker.alive
        if fresh:
            self._retire()
            self.worker = self.pool.spawn(slot.seed)
            self.generation += 1
            self.protections = self.worker.protections
        if slot.generation != self.generation:
            self._load(slot, fresh)
        return self.worker

    def _load(self, slot: ModuleSlot, fresh: bool) -> None:
        if not fresh:  # a fault here is the other module's doing: it costs this check, nothing more
            header = {"op": "load", "module": PRELUDE_MODULE, "filename": "<prelude>"}
            self._exchange(slot, header, [prelude(slot.seed)])
        header = {
            "op": "load", "module": slot.name, "filename": slot.compile_name, "banned": list(slot.banned),
            "siblings": [[name, file] for name, (file, _) in slot.siblings.items()],
        }  # fmt: skip
        buffers = [slot.source, *(data for _, data in slot.siblings.values())]
        try:
            reply = self._exchange(slot, header, buffers)
        except StudentFault as exc:  # a load that hangs or kills its worker does so every time: fail fast
            slot.load_error = exc
            raise
        if not reply["ok"]:
            slot.load_error = self._load_fault(slot, reply["error"])
            raise slot.load_error
        slot.generation = self.generation

    def _load_fault(self, slot: ModuleSlot, err: dict) -> StudentFault:
        file = slot.display
        if err.get("syntax"):
            siblings = {name for name, _ in slot.siblings.values()}
            file = err.get("file") if err.get("file") in siblings else file  # a sibling's own mistake
            message = self.translate(err.get("message", ""))
            return SubmissionFileError(say("submission.syntax_error", file=file, message=message))
        if err.get("import_refused"):
            missing = err.get("missing")
            if isinstance(missing, list) and len(missing) == 2 and all(isinstance(m, str) for m in missing):
                module, importer = missing[0].removesuffix(".py"), missing[1] or file
                text = say("submission.sibling_missing", file=missing[0], module=module, importer=importer)
                return SubmissionFileError(text)
            return SubmissionFileError(say("submission.import_refused", message=err.get("message", "")))
        if placeholder(err):
            return StudentNotImplemented(say("check.not_implemented", name=file))
        if is_memory_error(err):
            return self._out_of_memory(f"{err.get('type')}: {err.get('message')}")
        kind, message, where = (
            str(err.get("type", "?")),
            self.translate(str(err.get("message", ""))),
            self.where(err.get("frames")),
        )
        text = say("submission.load_error", file=file, type=kind, message=message)
        text = text.lines(say("run.exception_where", where=where)) if where else text
        return SubmissionFileError(text, match_error(COMMON_ERRORS, kind, message, where))

    def _out_of_memory(self, detail: str) -> StudentFault:
        """A submission that ran out of memory: its fault when a fresh worker really gets the budget
        the sandbox promises; otherwise the grader's (raised as `GraderFault`)."""
        budget = self.pool.limits.memory_bytes >> 20
        if self.pool.provides_memory_budget():
            return StudentCrash(say("run.out_of_memory", budget=budget, detail=detail[:300]))
        raise GraderFault(say("run.grader_memory", budget=budget, detail=detail[:300]))

    def where(self, frames) -> str:
        """ "file, line N: code" for the innermost frame of the student's own files that the grader
        holds the source of (the code line is read from those bytes here, not from the worker)."""
        slots = {s.compile_name: s for s in self.slots.values() if s.source is not None and s.base is None}
        siblings: dict[str, bytes] = {}
        for slot in self.slots.values():
            own = {n: v for n, v in slot.siblings.items() if n not in slot.provided}
            siblings.update({file: data for file, data in own.values() if file not in slots})
        for frame in reversed(frames if isinstance(frames, list) else []):
            if not (isinstance(frame, list) and len(frame) == 3 and type(frame[1]) is int):
                continue
            file, line = str(frame[0]), frame[1]
            if file in slots:
                source, origin = slots[file].source, slots[file].origin
            elif file in siblings:
                source, origin = siblings[file], None
            else:
                continue
            lines = source.decode("utf-8", "replace").splitlines()
            code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            code = code if len(code) <= 160 else code[:159] + "…"
            place = origin.place(line) if origin is not None else f"{file}, line {line}"
            return f"{place}: `{code}`" if code else place
        return ""

    def translate(self, text: str) -> str:
        """`text` from the worker with the lines of notebook code named by cell (see `notebook`)."""
        for slot in self.slots.values():
            if slot.origin is not None and slot.base is None:
                text = slot.origin.translate(text)
        return text

    def _retire(self) -> None:
        if self.worker is not None:
            self.worker.label_output(self.worker.output.label)  # collect what it printed before it dies
            self.worker.release()  # the zygote reaps it while grading goes on
            self._outputs.append(self.worker.output)
            self.worker = None

    def close(self) -> None:
        self._retire()

    def printed(self, name: str) -> tuple[str, int]:
        """What the student's code printed while module `name` was in use (text, bytes over the cap)."""
        outputs = self._outputs + ([self.worker.output] if self.worker is not None else [])
        return "".join(o.text(name) for o in outputs), sum(o.dropped_in(name) for o in outputs)

    # ------------------------------------------------------------ requests

    def _exchange(self, slot: ModuleSlot, header: dict, buffers: list[bytes] = (), code: str = "") -> dict:
        worker = self.worker
        assert worker is not None
        if worker.output.label != slot.label:  # a derived module counts as the student's own
            worker.label_output(slot.label)
        timeout = self.clock.timeout(slot.label, code, slot.call_seconds)  # the budgets' share of it
        try:
            with Stopwatch(self.clock, slot.label):
                reply, bufs = worker.request_raw(header, timeout, list(buffers))
        except WorkerTimeout:
            self.clock.timed_out(slot.label, code)
            raise StudentTimeout(say("run.timeout", seconds=timeout)) from None
        except SandboxFailure as exc:
            if exc.kind == "memory":
                raise self._out_of_memory(exc.detail) from None
            if exc.kind == "sandbox":
                raise GraderFault(say("run.sandbox_failed", detail=exc.detail[-800:])) from None
            key = "run.protocol" if exc.kind == "protocol" else "run.crash"
            raise StudentCrash(say(key, detail=exc.detail)) from None
        if type(reply.get("ok")) is not bool:
            worker.kill()
            raise StudentCrash(say("run.protocol", detail="reply without a status"))
        if reply["ok"] and "value" in reply:
            try:
                generation = self.generation
                reply["value"] = wire.decode_value(
                    reply["value"], bufs, lambda h: RemoteObject(self, slot, h, generation)
                )
            except wire.WireError as exc:
                worker.kill()
                raise StudentCrash(say("run.protocol", detail=str(exc))) from None
        elif not reply["ok"] and type(reply.get("error")) is not dict:
            worker.kill()
            raise StudentCrash(say("run.protocol", detail="malformed error reply"))
        return reply

    def _handle_of(self, obj) -> wire.Handle:
        if isinstance(obj, RemoteObject):
            obj._target()  # refuses objects from a worker that has since been replaced
            return obj._handle
        raise wire.WireError(f"cannot send a {type(obj).__name__} to the submission")

    def request(self, slot: ModuleSlot, op: str, obj: RemoteObject | None, label: str = "", **fields):
        """Run one op on `slot`'s module (`obj` None) or on an object of the worker; return its
        decoded value or raise a `StudentFault`."""
        code = code_of(label)
        self.clock.timeout(slot.label, code, slot.call_seconds)  # fails at once if it must not run
        self._ensure(slot)  # may replace a dead worker: only then can `obj` be checked for staleness
        target = {"$module": slot.name} if obj is None else obj._target()
        buffers: list[bytes] = []
        header = {"op": op, "target": target, "module": slot.name}  # whose request (the tripwire's owner)
        if self.reseed and op in ("call", "vjp"):
            header["seed"] = slot.seed
        for key, value in fields.items():
            header[key] = wire.encode_value(value, buffers, self._handle_of)
        reply = self._exchange(slot, header, buffers, code)
        if not reply["ok"]:
            call = (
                describe_call(label, fields.get("args", ()), fields.get("kwargs"))
                if op in ("call", "vjp")
                else ""
            )
            raise self._call_fault(reply["error"], label, call)
        value = reply.get("value")
        if isinstance(value, RemoteObject):
            value._label = (
                label
                if op == "getattr"
                else describe_call(label, fields.get("args", ()), fields.get("kwargs"))
            )
        return value

    def _call_fault(self, err: dict, label: str, call: str = "") -> StudentFault:
        if placeholder(err):
            return StudentNotImplemented(say("check.not_implemented", name=label))
        if is_memory_error(err):
            return self._out_of_memory(f"{err.get('type')}: {err.get('message')}")
        return StudentCodeError(
            str(err.get("type", "?")), self.translate(str(err.get("message", ""))),
            self.translate(str(err.get("traceback", ""))),
            where=self.where(err.get("frames")), call=call,
        )  # fmt: skip


TORCH_NOT_IMPLEMENTED = re.compile(r"not implemented for '|missing the required \"forward\" function")


def placeholder(err: dict) -> bool:
    """Is this error a part left unwritten (the stub's NotImplementedError)? torch raises the same
    type for a kernel missing for a dtype, or an nn.Module without forward: those are mistakes."""
    return bool(err.get("not_implemented")) and not TORCH_NOT_IMPLEMENTED.search(str(err.get("message", "")))


def is_memory_error(err: dict) -> bool:
    """Did the worker report running out of memory (Python's MemoryError, C++'s bad_alloc, torch's
    allocator)? Judged from the reply's type and message; what it means is decided by the caller."""
    return err.get("type") == "MemoryError" or bool(MEMORY_ERROR.search(str(err.get("message", ""))))


class StudentModule:
    """The submission's module for one exercise. `student.NAME` reads NAME inside the worker."""

    def __init__(self, session: StudentSession, slot: ModuleSlot) -> None:
        self._session = session
        self._slot = slot

    def __getattr__(self, name: str):
        """A module attribute that is an object of the worker (a function, a class) is read once per
        worker: reading it again would give the same handle unless the submission rebinds the name,
        and checks read them all the time (`student.f(x)` in a loop); a third of all requests went to
        such reads. Plain data (ex. 1's constants) is read every time: a call may have changed it."""
        if name.startswith("__"):
            raise AttributeError(name)
        session, slot = self._session, self._slot
        cached = slot.objects.get(name)
        if cached is not None and session.current(slot) and cached._generation == session.generation:
            return cached
        try:
            value = session.request(slot, "getattr", None, name, name=name)
        except StudentCodeError as exc:
            if exc.type_name == "AttributeError":
                raise CheckFailed(say("submission.missing_name", name=name)) from None
            raise
        if isinstance(value, RemoteObject):
            slot.objects[name] = value
        return value

    def _tripwire(self) -> list:
        """The worker tripwire's record for this module, [[banned name, line], ...] (see `banned`)."""
        return self._session.request(self._slot, "tripwire", None, "tripwire") or []


class RemoteObject:
    """An object that lives in the worker (a function, class or nn.Module instance)."""

    def __init__(
        self, session: StudentSession, slot: ModuleSlot, handle: wire.Handle, generation: int
    ) -> None:
        self._session = session
        self._slot = slot
        self._handle = handle
        self._generation = generation
        self._label = handle.type

    @property
    def _type(self) -> str:
        return self._handle.type

    def _target(self) -> dict:
        if self._generation != self._session.generation:
            raise StudentCrash(say("run.stale_object"))
        return {"$handle": self._handle.id, "type": self._handle.type, "callable": self._handle.callable}

    def _ref(self) -> dict:
        return self._target()

    def _request(self, op: str, label: str, **fields):
        return self._session.request(self._slot, op, self, label, **fields)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in MODULE_METHODS:
            return MethodCall(self, name)
        return self._request("getattr", f"{self._label}.{name}", name=name)

    def __call__(self, *args, **kwargs):
        return self._request("call", self._label, args=list(args), kwargs=dict(kwargs))

    def _introspect(self) -> dict:
        return self._request("introspect", self._label)

    def _vjp(self, args: tuple, grad_args: list[int], cotangents: list) -> dict:
        """Call with `args[i]` requiring grad for i in `grad_args`, backpropagate the cotangents."""
        return self._request(
            "vjp", self._label, args=list(args), grad_args=list(grad_args), cotangents=list(cotangents)
        )

    def __repr__(self) -> str:
        return f"<student object {self._handle.type}>"


# nn.Module's methods that checks call on the student's layers all the time (`layer.double()`,
# `layer.load_state_dict(state)`, `layer.eval()`): a read and a call were two requests each, a
# third of exercise 4's
MODULE_METHODS = frozenset(
    {"load_state_dict", "state_dict", "eval", "train", "double", "float", "to", "zero_grad", "requires_grad_",
     "parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules", "children"}
)  # fmt: skip


class MethodCall:
    """`obj.name` for a name of `MODULE_METHODS`: called, it is read and called inside the worker in
    one request, as the same call would be after a read (the student's own override included).
    Checks only call these; any other use (`layer.eval.__name__`) is a grader bug and raises."""

    def __init__(self, obj: RemoteObject, name: str) -> None:
        self._obj = obj
        self._name = name

    def __call__(self, *args, **kwargs):
        label = f"{self._obj._label}.{self._name}"
        return self._obj._request("call", label, args=list(args), kwargs=dict(kwargs), method=self._name)
