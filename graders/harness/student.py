"""The trusted side's view of a submission: a proxy whose every use is a request to a sandbox.

`StudentSession` owns the worker for one exercise of one submission. It reads the student's file
as bytes (regular files only, symlinks refused), has the worker compile and run it, and restarts a
fresh worker after any failure so that one crash costs only the check it happened in. Checks see
`StudentModule` and `RemoteObject`: attribute reads and calls go to the worker, and only plain data
(tensors, numbers, strings, lists) comes back.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import (
    CheckFailed,
    StudentCodeError,
    StudentCrash,
    StudentFault,
    StudentNotImplemented,
    StudentTimeout,
    SubmissionFileError,
)
from .i18n import say
from .sandbox import wire
from .sandbox.client import SandboxFailure, SandboxPool, SandboxWorker, WorkerTimeout

MAX_SOURCE_BYTES = 1 << 20


def read_submission_file(path: Path) -> bytes:
    """The bytes of a student's file, or `SubmissionFileError` naming the file and the problem."""
    name = path.name
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise SubmissionFileError(say("missing_file", file=name)) from None
    except OSError as exc:
        raise SubmissionFileError(say("bad_file", file=name, problem=exc.strerror or str(exc))) from None
    if stat.S_ISLNK(info.st_mode):
        raise SubmissionFileError(say("bad_file", file=name, problem="symbolic links are refused"))
    if not stat.S_ISREG(info.st_mode):
        raise SubmissionFileError(say("bad_file", file=name, problem="not a regular file"))
    if info.st_size > MAX_SOURCE_BYTES:
        raise SubmissionFileError(say("bad_file", file=name, problem=f"larger than {MAX_SOURCE_BYTES} bytes"))
    if info.st_nlink > 1:  # a hard link may point at a file the student could not read (the reference)
        raise SubmissionFileError(say("bad_file", file=name, problem="hard links are refused"))
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        opened = os.fstat(fh.fileno())  # the file may have been swapped since lstat
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino) or not stat.S_ISREG(opened.st_mode):
            raise SubmissionFileError(say("bad_file", file=name, problem="the file changed while it was read"))
        return fh.read(MAX_SOURCE_BYTES + 1)


class StudentSession:
    """The student's module for one exercise, loaded in a sandboxed worker."""

    def __init__(
        self, pool: SandboxPool, path: Path, module_name: str, seed: int, call_seconds: float | None = None
    ) -> None:
        self.pool = pool
        self.call_seconds = min(call_seconds or pool.limits.call_seconds, pool.limits.call_seconds)  # pool caps
        self.path = path
        self.module_name = module_name
        self.seed = seed
        self.worker: SandboxWorker | None = None
        self.generation = 0
        self.protections: list[str] = []
        self.outputs: list[tuple[str, int]] = []
        self._source: bytes | None = None
        self._load_error: StudentFault | None = None

    # ------------------------------------------------------------ lifecycle

    def _fresh_worker(self) -> SandboxWorker:
        if self._source is None:
            self._source = read_submission_file(self.path)  # raises SubmissionFileError
        worker = self.pool.spawn(self.seed)
        self.generation += 1
        self.protections = worker.protections
        self.worker = worker
        try:
            header = self._exchange({"op": "load", "module": self.module_name, "filename": self.path.name}, [self._source])
        except StudentFault as exc:  # a load that hangs or kills its worker does so every time: fail fast after
            self._load_error = exc
            raise
        if not header["ok"]:
            self._load_error = self._load_fault(header["error"])
            raise self._load_error
        return worker

    def _load_fault(self, err: dict) -> StudentFault:
        file = self.path.name
        if err.get("syntax"):
            return SubmissionFileError(say("syntax_error", file=file, message=err.get("message", "")))
        if err.get("import_refused"):
            return SubmissionFileError(say("import_refused", message=err.get("message", "")))
        if err.get("not_implemented"):
            return StudentNotImplemented(say("not_implemented", name=file))
        return SubmissionFileError(
            say("load_error", file=file, type=err.get("type", "?"), message=err.get("message", ""))
        )

    def _ensure(self) -> SandboxWorker:
        if self._load_error is not None:
            raise self._load_error
        if self.worker is None or not self.worker.alive:
            self._retire()
            return self._fresh_worker()
        return self.worker

    def _retire(self) -> None:
        if self.worker is not None:
            self.worker.close()
            out = self.worker.output
            if out.data or out.dropped:
                self.outputs.append((out.text(), out.dropped))
            self.worker = None

    def close(self) -> None:
        self._retire()

    def printed(self) -> tuple[str, int]:
        """Everything the student's code printed so far (text, bytes dropped over the cap)."""
        parts = list(self.outputs)
        if self.worker is not None:
            parts.append((self.worker.output.text(), self.worker.output.dropped))
        return "".join(p[0] for p in parts), sum(p[1] for p in parts)

    # ------------------------------------------------------------ requests

    def _exchange(self, header: dict, buffers: list[bytes] = ()) -> dict:
        assert self.worker is not None
        timeout = self.call_seconds
        try:
            reply, bufs = self.worker.request_raw(header, timeout, list(buffers))
        except WorkerTimeout:
            raise StudentTimeout(say("timeout", seconds=timeout)) from None
        except SandboxFailure as exc:
            key = "protocol" if exc.kind == "protocol" else "crash"
            raise StudentCrash(say(key, detail=exc.detail)) from None
        if type(reply.get("ok")) is not bool:
            self.worker.kill()
            raise StudentCrash(say("protocol", detail="reply without a status"))
        if reply["ok"] and "value" in reply:
            try:
                reply["value"] = wire.decode_value(reply["value"], bufs, self._remote)
            except wire.WireError as exc:
                self.worker.kill()
                raise StudentCrash(say("protocol", detail=str(exc))) from None
        elif not reply["ok"] and type(reply.get("error")) is not dict:
            self.worker.kill()
            raise StudentCrash(say("protocol", detail="malformed error reply"))
        return reply

    def _handle_of(self, obj) -> wire.Handle:
        if isinstance(obj, RemoteObject):
            obj._target()  # refuses objects from a worker that has since been replaced
            return obj._handle
        raise wire.WireError(f"cannot send a {type(obj).__name__} to the submission")

    def _remote(self, handle: wire.Handle) -> RemoteObject:
        return RemoteObject(self, handle, self.generation)

    def request(self, op: str, target: dict, label: str = "", **fields):
        """Run one op in the worker; return its decoded value or raise a `StudentFault`."""
        self._ensure()
        buffers: list[bytes] = []
        header = {"op": op, "target": target}
        for key, value in fields.items():
            header[key] = wire.encode_value(value, buffers, self._handle_of)
        reply = self._exchange(header, buffers)
        if not reply["ok"]:
            raise self._call_fault(reply["error"], label)
        value = reply.get("value")
        if isinstance(value, RemoteObject):
            value._label = label if op == "getattr" else f"{label}(...)"
        return value

    def _call_fault(self, err: dict, label: str) -> StudentFault:
        if err.get("not_implemented"):
            return StudentNotImplemented(say("not_implemented", name=label))
        return StudentCodeError(str(err.get("type", "?")), str(err.get("message", "")), str(err.get("traceback", "")))

    def module(self) -> StudentModule:
        return StudentModule(self)


class StudentModule:
    """The submission's module. `student.NAME` reads NAME inside the worker."""

    def __init__(self, session: StudentSession) -> None:
        self._session = session

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._session.request("getattr", {"$module": self._session.module_name}, name, name=name)
        except StudentCodeError as exc:
            if exc.type_name == "AttributeError":
                raise CheckFailed(say("missing_name", name=name)) from None
            raise


class RemoteObject:
    """An object that lives in the worker (a function, class or nn.Module instance)."""

    def __init__(self, session: StudentSession, handle: wire.Handle, generation: int) -> None:
        self._session = session
        self._handle = handle
        self._generation = generation
        self._label = handle.type

    @property
    def _type(self) -> str:
        return self._handle.type

    def _target(self) -> dict:
        if self._generation != self._session.generation:
            raise StudentCrash(say("stale_object"))
        return {"$handle": self._handle.id, "type": self._handle.type, "callable": self._handle.callable}

    def _ref(self) -> dict:
        return self._target()

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return self._session.request("getattr", self._target(), f"{self._label}.{name}", name=name)

    def __call__(self, *args, **kwargs):
        return self._session.request(
            "call", self._target(), self._label, args=list(args), kwargs=dict(kwargs)
        )

    def _introspect(self) -> dict:
        return self._session.request("introspect", self._target(), self._label)

    def _vjp(self, args: tuple, grad_args: list[int], cotangents: list) -> dict:
        """Call with `args[i]` requiring grad for i in `grad_args`, backpropagate the cotangents."""
        return self._session.request(
            "vjp", self._target(), self._label,
            args=list(args), grad_args=list(grad_args), cotangents=list(cotangents),
        )  # fmt: skip

    def __repr__(self) -> str:
        return f"<student object {self._handle.type}>"
