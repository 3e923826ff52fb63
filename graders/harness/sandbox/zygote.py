"""The zygote: a fresh interpreter that imports torch once and forks a worker on request.

Started by the trusted side as `python -I -c BOOT` with a cleared environment and a working
directory outside the project, so nothing of the grader is inherited. torch runs on one thread
before any op (forking after multi-threaded OpenMP work can deadlock the child), every module a
submission may import is imported here (after a uid switch the interpreter's files may be
unreadable), and torch is warmed so that its lazy imports have already happened.

Control protocol (SOCK_SEQPACKET, JSON messages):
  {"op": "spawn", "config": {...}} + fds [channel, output]  ->  {"pid": N}
  {"op": "status", "pid": N, "wait": seconds}               ->  {"status": "running" | "exited:N" | "signal:N" | "unknown"}
  {"op": "exit"}
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import socket
import sys
import time

MAX_CONTROL_BYTES = 1 << 16


def _warm_torch() -> None:
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    x = torch.randn(2, 3, 8, requires_grad=True)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    out, w = mha(x, x, x, average_attn_weights=False)
    lin = torch.nn.Linear(8, 8)
    y = F.scaled_dot_product_attention(lin(x), x, x) + torch.einsum("bld,bmd->blm", x, x).softmax(-1) @ x
    (out.sum() + w.sum() + y.sum() + torch.bmm(x, x.transpose(1, 2)).sum()).backward()
    torch.nn.Dropout(0.1).eval()(x)
    torch.testing.assert_close(x, x)
    x.detach().numpy()


class Zygote:
    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.statuses: dict[int, str] = {}
        self.children: set[int] = set()

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.children.discard(pid)
            if os.WIFSIGNALED(status):
                self.statuses[pid] = f"signal:{os.WTERMSIG(status)}"
            else:
                self.statuses[pid] = f"exited:{os.waitstatus_to_exitcode(status)}"

    def spawn(self, config: dict, fds: list[int]) -> dict:
        channel_fd, output_fd = fds
        pid = os.fork()
        if pid == 0:
            try:
                self._become_worker(config, channel_fd, output_fd)
            finally:
                os._exit(70)
        os.close(channel_fd)
        os.close(output_fd)
        self.children.add(pid)
        return {"pid": pid}

    def _become_worker(self, config: dict, channel_fd: int, output_fd: int) -> None:
        from . import isolation, wire, worker

        os.setsid()
        self.control.close()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        os.dup2(channel_fd, 3)
        os.closerange(4, 1 << 16)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        sock = socket.socket(fileno=3)
        protections = isolation.enter(config)
        import torch

        torch.manual_seed(int(config.get("seed", 0)))
        wire.send_frame(sock, {"ready": True, "protections": protections})
        worker.main(sock, config.get("allowed_imports", []))
        os._exit(0)

    def status(self, pid: int, wait: float) -> dict:
        deadline = time.monotonic() + max(0.0, min(wait, 5.0))
        while True:
            self.reap()
            if pid in self.statuses:
                return {"status": self.statuses.pop(pid)}
            if pid not in self.children:
                return {"status": "unknown"}
            if time.monotonic() >= deadline:
                return {"status": "running"}
            time.sleep(0.005)

    def serve(self) -> None:
        while True:
            try:
                data, fds, _flags, _addr = socket.recv_fds(self.control, MAX_CONTROL_BYTES, 4)
            except OSError:
                return
            if not data:
                return
            self.reap()
            req = json.loads(data)
            if req["op"] == "spawn":
                reply = self.spawn(req["config"], fds)
            elif req["op"] == "status":
                reply = self.status(int(req["pid"]), float(req.get("wait", 0)))
            else:
                return
            self.control.send(json.dumps(reply).encode())


def main(control_fd: int, allowed_imports: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _warm_torch()
    for name in allowed_imports:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of workers come back here
    except OSError:
        pass
    control = socket.socket(fileno=control_fd)
    control.send(json.dumps({"ready": True, "pid": os.getpid()}).encode())
    Zygote(control).serve()
