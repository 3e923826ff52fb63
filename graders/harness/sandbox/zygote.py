"""The zygote: a fresh interpreter that imports torch once and forks a worker on request.

Started by the trusted side as `python -I -c BOOT` with a cleared environment and a working
directory outside the project, so nothing of the grader is inherited. torch runs on one thread
before any op (forking after multi-threaded OpenMP work can deadlock the child), every module a
submission may import is imported here (workers run on an empty file system and can use only what
was imported before the fork), and torch is warmed so that its lazy imports have already happened.

As root a spawn forks once: the zygote unshares a PID namespace for its next child, forks, and
points itself back at its own; the worker is PID 1 of its own PID namespace, so killing it kills
everything the submission started, and enters its other namespaces (mount, network, IPC, UTS;
see `isolation`) itself. In a user namespace the zygote cannot point itself back, so an
intermediate child enters the namespaces, forks the worker and exits; the worker is re-parented
here (this process is a child subreaper). In root mode the worker also gets its
own cgroup and uid. `reap` kills a worker, sweeps up anything left behind (orphans re-parented
here, without PID namespaces) and collects every zombie.

Control protocol (SOCK_SEQPACKET, JSON messages):
  {"op": "spawn", "config": {...}} + fds [channel, output]  ->  {"pid": N, "protections": [...]}
  {"op": "status", "pid": N, "wait": seconds}               ->  {"status": "running" | "exited:N" | "signal:N"
                                                                          | "unknown"}
  {"op": "reap", "pid": N, "wait": seconds}                 ->  {"status": ..., "swept": N, "left": N}
  {"op": "exit"}
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import select
import signal
import socket
import struct
import sys
import time
import traceback

from . import isolation, wire

MAX_CONTROL_BYTES = 1 << 16
EXTRA_IMPORTS = (
    "numpy.linalg", "numpy.random", "numpy.fft", "numpy.testing", "torch.nn.functional", "torch.linalg",
    "torch.fft", "torch.testing", "torch.autograd", "torch.nn.init", "torch.distributions",
    "encodings.ascii", "encodings.latin_1", "encodings.utf_8", "encodings.idna", "traceback", "linecache",
    "tokenize", "unicodedata", "json", "struct",
)  # fmt: skip


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
    y = (
        y
        + torch.matmul(x, x.transpose(-2, -1)).masked_fill(torch.ones(3, 3, dtype=torch.bool).tril(), -1e9)
        @ x
    )
    (out.sum() + w.sum() + y.sum() + torch.bmm(x, x.transpose(1, 2)).sum()).backward()
    torch.nn.Dropout(0.1).eval()(x)
    lin.load_state_dict(lin.state_dict())
    repr(lin), repr(x), str(torch.tensor([1.5, float("nan")]))
    torch._check(True)  # torch's own checks import torch.fx.experimental.symbolic_shapes (and sympy)
    # assert_close would import torch.distributed.tensor (0.2-0.3 s, on the way to every first
    # grade) to unwrap DTensors, which cannot exist in a worker (nothing of torch.distributed is
    # imported here, and a worker imports nothing more)
    comparison = sys.modules.get("torch.testing._comparison")
    if getattr(comparison, "_HAS_DTENSOR", False):
        comparison._HAS_DTENSOR = False
    torch.testing.assert_close(x, x)
    x.detach().numpy()
    torch.from_numpy(x.detach().numpy()).double().sum().item()


def preimport(names) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


class Zygote:
    """Forks workers. In root mode each worker gets a uid of its own, never given to another worker:
    the `index`-th of the uid block this zygote was handed (`uid_block`, reserved by its caller for
    the whole run) or reserved itself (`isolation.reserve_uid_block`), then further blocks it
    reserves when one is used up. Nothing a uid leaves in the kernel can reach another student."""

    def __init__(
        self, control: socket.socket, mode: str, uid_block: int | None = None,
        seccomp: isolation.SeccompFilter | None = None, uid_start: int = 0,
    ) -> None:  # fmt: skip
        self.control = control
        self.mode = mode
        self.statuses: dict[int, str] = {}
        self.children: dict[int, int | None] = {}  # live worker pid -> its uid
        self.cgroups: dict[int, isolation.Cgroup] = {}
        self.cgroups_left: list[isolation.Cgroup] = []  # of collected workers, still to be removed
        self.spawned = 0
        self.own_pidns = isolation.open_own_pid_namespace() if mode == "root" else None
        self.seccomp = seccomp
        self.uid_holders: list[socket.socket] = []  # reservations this zygote made itself
        self.uid_block = uid_block
        self.uid_index = uid_start  # past every uid an earlier zygote of this grader gave out
        if mode == "root" and (uid_block is None or uid_start >= isolation.UID_BLOCK):
            self._reserve_block()
        if mode == "root":
            isolation.sweep_stale_cgroups()  # left by zygotes that were SIGKILLed

    def _reserve_block(self) -> None:
        start = (os.getpid() * 2654435761) % isolation.UID_BLOCKS
        self.uid_block, holder = isolation.reserve_uid_block(start)
        self.uid_holders.append(holder)
        self.uid_index = 0

    def _next_uid(self) -> int:
        if self.uid_index >= isolation.UID_BLOCK:
            self._reserve_block()
        uid = isolation.sandbox_uid(self.uid_block, self.uid_index)
        self.uid_index += 1
        return uid

    # ------------------------------------------------------------ children

    def _record(self, pid: int, status: int) -> None:
        if pid in self.children:
            del self.children[pid]
            if os.WIFSIGNALED(status):
                self.statuses[pid] = f"signal:{os.WTERMSIG(status)}"
            else:
                self.statuses[pid] = f"exited:{os.waitstatus_to_exitcode(status)}"
        cgroup = self.cgroups.pop(pid, None)
        if cgroup is not None and not cgroup.remove():
            self.cgroups_left.append(cgroup)  # busy a moment longer: retried, never waited for here

    def reap(self) -> None:
        """Collect every exited child (workers and swept orphans alike)."""
        self.cgroups_left = [c for c in self.cgroups_left if not c.remove()]
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self._record(pid, status)

    def _strays(self) -> list[int]:
        """Processes re-parented here that are not live workers: orphans a submission left behind."""
        me, found = os.getpid(), []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in self.children or int(entry) == me:
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                found.append(int(entry))  # zombies too: they are swept by being reaped
        return found

    def sweep(self, deadline: float) -> tuple[int, int]:
        """SIGKILL every stray and reap it (zombies included); return how many there were, and how
        many are left at the deadline (the last look at /proc, not another: each reads every process)."""
        swept: set[int] = set()
        while True:
            self.reap()
            strays = self._strays()
            if not strays or time.monotonic() > deadline:
                return len(swept), len(strays)
            for pid in strays:
                swept.add(pid)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.002)

    # ------------------------------------------------------------ ops

    def spawn(self, config: dict, fds: list[int]) -> dict:
        channel_fd, output_fd = fds
        try:
            return self._spawn(config, channel_fd, output_fd)
        finally:
            os.close(channel_fd)
            os.close(output_fd)

    def _spawn(self, config: dict, channel_fd: int, output_fd: int) -> dict:
        if len(self.children) >= isolation.MAX_LIVE_WORKERS:
            return {"error": "too many live workers"}
        uid = self._next_uid() if self.mode == "root" else None
        limits = config["limits"]  # every limit, from the trusted side (client.Limits.for_worker)
        cgroup = None
        if self.mode == "root":
            self.spawned += 1
            cgroup = isolation.Cgroup(
                isolation.cgroup_name(os.getpid(), self.spawned), int(limits["memory_bytes"]),
                int(limits["processes"]),
            )  # fmt: skip
        has_cgroup_memory = cgroup is not None and "cgroup:memory" in cgroup.applied
        config = dict(config, limits=dict(limits, cgroup_memory=has_cgroup_memory))
        if self.mode == "none" or (self.mode == "root" and self.own_pidns is not None):
            pid = self._fork_directly(config, channel_fd, output_fd, uid)
        else:
            pid = self._fork_through_middle(config, channel_fd, output_fd, uid)
        if pid is None:
            if cgroup is not None:
                cgroup.remove()
            return {"error": "the worker could not be forked"}
        self.children[pid] = uid
        reply = {"pid": pid, "protections": [], "cpu_file": None, "memory_files": {}, "uid": uid}
        if cgroup is not None:
            if cgroup.add(pid):
                reply.update(
                    protections=list(cgroup.applied),
                    cpu_file=cgroup.cpu_file,
                    memory_files=cgroup.memory_files,
                )
            self.cgroups[pid] = cgroup
        return reply

    def _worker_main(self, config, channel_fd, output_fd, namespaces, uid) -> None:
        try:
            self._become_worker(config, channel_fd, output_fd, namespaces, uid)
        except BaseException:
            traceback.print_exc()  # to the worker's output pipe once it is set up
            sys.stderr.flush()
        finally:
            os._exit(wire.MACHINERY_EXIT)

    def _fork_directly(self, config, channel_fd, output_fd, uid) -> int:
        """Root: one fork; the child is PID 1 of a new PID namespace and unshares the rest itself."""
        new_pid_ns = self.mode == "root" and isolation.unshare_pid_namespace()
        pid = os.fork()
        if pid == 0:
            try:
                namespaces = isolation.unshare_namespaces(self.mode, pid=False)
            except OSError:
                namespaces = []
            namespaces += ["pid-namespace"] if new_pid_ns else []
            isolation.die_with_parent(signal.SIGKILL)  # the zygote's death (SIGKILL included) ends it
            self._worker_main(config, channel_fd, output_fd, namespaces, uid)
        if new_pid_ns:
            isolation.restore_pid_namespace(self.own_pidns)
        return pid

    def _fork_through_middle(self, config, channel_fd, output_fd, uid) -> int | None:
        """Elsewhere: an intermediate child enters the namespaces and forks the worker, then exits."""
        r, w = os.pipe()
        middle = os.fork()
        if middle == 0:  # the intermediate: new namespaces, then the worker
            try:
                os.close(r)
                try:
                    namespaces = isolation.unshare_namespaces(self.mode)
                except OSError:
                    namespaces = []
                pid = os.fork()
                if pid == 0:
                    os.close(w)
                    self._worker_main(config, channel_fd, output_fd, namespaces, uid)
                os.write(w, struct.pack("=i", pid))
            finally:
                os._exit(0)
        os.close(w)
        try:
            ready, _, _ = select.select([r], [], [], 10.0)
            raw = os.read(r, 4) if ready else b""
        finally:
            os.close(r)
            os.waitpid(middle, 0)
        return struct.unpack("=i", raw)[0] if len(raw) == 4 else None

    def _become_worker(
        self, config: dict, channel_fd: int, output_fd: int, namespaces: list[str], uid: int | None
    ) -> None:
        from . import worker

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
        limits = dict(config["limits"])
        budget = int(limits["memory_bytes"])  # the trusted side sends every limit (client.Limits)
        baseline = isolation.address_space_bytes()  # before the root is emptied: /proc is still there
        limits["address_space_bytes"] = isolation.address_space_limit(
            budget, baseline, bool(limits.get("cgroup_memory"))
        )
        protections = ["fresh-interpreter", "own-session", *namespaces]
        if "mount-namespace" in namespaces:
            try:
                protections += isolation.private_root(int(limits["tmp_bytes"]))
            except OSError as exc:
                print(f"sandbox: no private root: {exc}", file=sys.stderr)
        protections += isolation.apply_rlimits(limits)
        protections += isolation.drop_privileges(self.mode, uid)
        if self.seccomp is not None:  # last: everything above needed what the filter refuses
            protections += self.seccomp.install()
        isolation.reset_signals()
        import torch

        # the CPU generator directly: torch.manual_seed would also queue a lazy seed for every
        # accelerator backend, recording a formatted stack (~1.5 ms here; see worker._reseed)
        torch.default_generator.manual_seed(int(config.get("seed", 0)))
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
            time.sleep(0.002)

    def kill_and_reap(self, pid: int, wait: float) -> dict:
        """SIGKILL the worker's group, wait for it, sweep its leftovers, collect the zombies."""
        if pid in self.children:
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        deadline = time.monotonic() + max(0.0, min(wait, 10.0))
        result = self.status(pid, wait)
        swept, left = self.sweep(deadline)
        return {"status": result["status"], "swept": swept, "left": left}

    def shutdown(self) -> None:
        """The grader is gone (its end of the control socket closed, however it died) or said exit:
        kill every worker and sweep what they left, so that nothing of this zygote outlives it."""
        for pid in list(self.children):
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        self.sweep(time.monotonic() + 2.0)
        for cgroup in [*self.cgroups.values(), *self.cgroups_left]:  # nothing of this zygote outlives it
            cgroup.remove(wait=0.5)
        self.cgroups.clear()
        self.cgroups_left = []

    def serve(self) -> None:
        try:
            self._serve()
        finally:
            self.shutdown()

    def _serve(self) -> None:
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
            elif req["op"] == "reap":
                reply = self.kill_and_reap(int(req["pid"]), float(req.get("wait", 0)))
            else:
                return
            try:
                self.control.send(json.dumps(reply).encode())
            except OSError:  # the grader is gone (it may close without reading a `release`'s answer)
                return


def main(control_fd: int, options: dict) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _warm_torch()
    preimport(options.get("allowed_imports", []))
    preimport(EXTRA_IMPORTS)
    from . import worker  # noqa: F401  (imported before any uid switch)

    seccomp = isolation.SeccompFilter()

    if options.get("run_as"):
        uid, gid = options["run_as"]
        isolation.drop_to_user(int(uid), int(gid))
    mode = "none"
    if options.get("isolate", True):
        mode = isolation.probe_privilege(allow_userns=options.get("userns", True))
    subreaper = isolation.become_subreaper()
    control = socket.socket(fileno=control_fd)
    zygote = Zygote(control, mode, options.get("uid_block"), seccomp, int(options.get("uid_start") or 0))
    hello = {"ready": True, "pid": os.getpid(), "mode": mode, "subreaper": subreaper, "uid": os.getuid(),
             "uid_block": zygote.uid_block, "seccomp": seccomp.problem or "ok",
             "footprint": isolation.address_space_bytes()}  # fmt: skip
    control.send(json.dumps(hello).encode())
    # Everything imported so far is shared with each worker, copy-on-write. A garbage collection in
    # a worker would walk those objects and write to each one's header, copying every page of the
    # heap into the worker: frozen, they are never collected, and stay shared.
    gc.freeze()
    zygote.serve()  # returns once everything it started is gone
    sys.stderr.flush()
    os._exit(0)  # skip the interpreter's teardown (torch's): the grader may be waiting for this exit
