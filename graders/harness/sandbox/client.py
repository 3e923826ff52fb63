"""The trusted side's handle on the sandbox: a zygote per grading process, a worker per exercise.

`SandboxPool` starts the zygote (a fresh `python -I` with a cleared environment, never a fork of
this process) and asks it to fork workers. `SandboxWorker.request` sends one frame and waits for
the reply under a wall-clock deadline; a worker that misses it, dies, or sends anything malformed
is killed (SIGKILL to its whole process group) and the caller gets a `SandboxFailure`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import wire

SANDBOX_PARENT = Path(__file__).resolve().parent.parent  # the folder that holds `sandbox/`

ALLOWED_IMPORTS = (
    "__future__", "abc", "array", "bisect", "cmath", "collections", "contextlib", "copy",
    "dataclasses", "decimal", "enum", "fractions", "functools", "heapq", "itertools", "math",
    "numbers", "numpy", "operator", "random", "statistics", "string", "time", "torch", "types",
    "typing", "warnings", "re",
)  # fmt: skip

BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); import sandbox.zygote as z; del sys.path[0]; "
    "z.main(int(sys.argv[2]), sys.argv[3].split(','))"
)


@dataclass(frozen=True)
class Limits:
    """Per-worker limits. Times in seconds, sizes in bytes."""

    call_seconds: float = 10.0
    cpu_seconds: int = 60
    memory_bytes: int = 3 << 30
    file_bytes: int = 1 << 20
    open_files: int = 64
    processes: int = 64
    output_bytes: int = 16 << 10
    reply_bytes: int = 64 << 20
    start_seconds: float = 10.0

    def for_worker(self) -> dict:
        return {
            "memory_bytes": self.memory_bytes,
            "cpu_seconds": self.cpu_seconds,
            "file_bytes": self.file_bytes,
            "open_files": self.open_files,
            "processes": self.processes,
        }


class SandboxFailure(Exception):
    """The worker could not give an answer: it timed out, crashed or broke the protocol."""

    kind = "crash"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class WorkerTimeout(SandboxFailure):
    kind = "timeout"


class WorkerCrashed(SandboxFailure):
    kind = "crash"


class WorkerProtocolError(SandboxFailure):
    kind = "protocol"


class SandboxUnavailable(Exception):
    """The zygote itself could not be started or stopped answering: a grader-side failure."""


@dataclass
class CapturedOutput:
    """What a worker printed, kept up to `cap` bytes; the rest is counted and dropped."""

    cap: int
    data: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        self.data += chunk[: max(room, 0)]
        self.dropped += max(len(chunk) - max(room, 0), 0)

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


class SandboxPool:
    """One zygote, started lazily, from which every worker of this process is forked."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._proc: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._lock = threading.Lock()
        self._tmp = tempfile.TemporaryDirectory(prefix="agw-zygote-")
        self.zygote_pid: int | None = None

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-c", BOOT, str(SANDBOX_PARENT), str(theirs.fileno()), ",".join(ALLOWED_IMPORTS)],
            env=env,
            cwd=self._tmp.name,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self._tmp.name, "zygote.log"), "wb"),
            pass_fds=[theirs.fileno()],
            start_new_session=True,
        )
        theirs.close()
        self._control = ours
        ours.settimeout(120)
        try:
            hello = json.loads(ours.recv(1 << 16) or b"null")
        except (OSError, json.JSONDecodeError) as exc:
            raise SandboxUnavailable(f"the sandbox zygote did not start: {exc}; {self._log()}") from exc
        if not hello or not hello.get("ready"):
            raise SandboxUnavailable(f"the sandbox zygote did not start; {self._log()}")
        self.zygote_pid = hello["pid"]

    def _log(self) -> str:
        try:
            return Path(self._tmp.name, "zygote.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def _ask(self, req: dict, fds: list[int] = ()) -> dict:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            try:
                socket.send_fds(self._control, [json.dumps(req).encode()], list(fds))
                return json.loads(self._control.recv(1 << 16))
            except (OSError, json.JSONDecodeError) as exc:
                self.close()
                raise SandboxUnavailable(f"the sandbox zygote stopped answering: {exc}") from exc

    def spawn(self, seed: int = 0) -> SandboxWorker:
        """Fork a fresh worker and wait for it to say it is ready."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_r, out_w = os.pipe()
        config = {"limits": self.limits.for_worker(), "seed": seed, "allowed_imports": list(ALLOWED_IMPORTS)}
        try:
            reply = self._ask({"op": "spawn", "config": config}, [theirs.fileno(), out_w])
        finally:
            theirs.close()
            os.close(out_w)
        worker = SandboxWorker(self, reply["pid"], ours, out_r)
        hello = worker.request_raw(None, self.limits.start_seconds)[0]
        worker.protections = list(hello.get("protections", []))
        return worker

    def exit_status(self, pid: int, wait: float = 0.5) -> str:
        try:
            return self._ask({"op": "status", "pid": pid, "wait": wait})["status"]
        except SandboxUnavailable:
            return "unknown"

    def close(self) -> None:
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._proc is not None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._proc.wait()
            self._proc = None

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SandboxWorker:
    """One forked worker: a socket for requests, a pipe for what it prints."""

    def __init__(self, pool: SandboxPool, pid: int, sock: socket.socket, out_fd: int) -> None:
        self.pool = pool
        self.pid = pid
        self.sock = sock
        self.alive = True
        self.protections: list[str] = []
        self.output = CapturedOutput(pool.limits.output_bytes)
        self._reader = threading.Thread(target=self._drain, args=(out_fd,), daemon=True)
        self._reader.start()

    def _drain(self, fd: int) -> None:
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                self.output.feed(chunk)

    def request_raw(self, header: dict | None, timeout: float, buffers: list[bytes] = ()) -> tuple[dict, list[bytes]]:
        """Send `header` (or nothing, to read the hello frame) and return the validated reply frame."""
        if not self.alive:
            raise WorkerCrashed("the worker is no longer running")
        deadline = time.monotonic() + timeout
        try:
            if header is not None:
                self.sock.settimeout(timeout)
                wire.send_frame(self.sock, header, buffers)
            return wire.recv_frame(self.sock, deadline, self.pool.limits.reply_bytes)
        except (wire.ChannelTimeout, TimeoutError) as exc:
            self.kill()
            raise WorkerTimeout(f"no answer within {timeout:g} s") from exc
        except wire.ChannelClosed as exc:
            detail = self._describe_exit()
            self.kill()
            raise WorkerCrashed(detail) from exc
        except (wire.WireError, OSError) as exc:
            self.kill()
            raise WorkerProtocolError(str(exc)) from exc

    def _describe_exit(self) -> str:
        status = self.pool.exit_status(self.pid, wait=1.0)
        return {"signal:9": "killed (SIGKILL, probably a resource limit)"}.get(status, status)

    def kill(self) -> None:
        if not self.alive:
            return
        self.alive = False
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.sock.close()

    def close(self) -> None:
        self.kill()
        self.pool.exit_status(self.pid, wait=0.5)
