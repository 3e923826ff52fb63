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
import importlib
import importlib.machinery
import random
import sys
import traceback
import types

import numpy as np
import torch

from . import isolation, wire

MAX_MESSAGE_CHARS = 2000
MAX_FRAMES = 8


class ImportRefused(ImportError):
    pass


class Worker:
    def __init__(self, sock, allowed_imports: frozenset[str]) -> None:
        self.sock = sock
        self.allowed_imports = allowed_imports
        self.objects: dict[int, object] = {}
        self.handle_ids: dict[int, int] = {}
        self.modules: dict[str, types.ModuleType] = {}
        self.student_files: set[str] = set()

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
        student_modules = self.modules

        def guarded(name, globals=None, locals=None, fromlist=(), level=0):
            caller = (globals or {}).get("__name__")
            if caller in student_modules:
                top = name.partition(".")[0]
                if level != 0 or top not in self.allowed_imports:
                    allowed = ", ".join(sorted(m for m in self.allowed_imports if not m.startswith("_")))
                    raise ImportRefused(
                        f"import of {name!r} is not allowed in a submission (allowed: {allowed})"
                    )
            return original(name, globals, locals, fromlist, level)

        return guarded

    def install_import_guard(self) -> None:
        builtins.__import__ = self._guarded_import(builtins.__import__)

    @staticmethod
    def seal_imports() -> None:
        """From now on only modules already in `sys.modules` (or built into the interpreter) import."""
        keep = (importlib.machinery.BuiltinImporter, importlib.machinery.FrozenImporter)
        sys.meta_path[:] = [finder for finder in sys.meta_path if finder in keep]
        sys.path_hooks.clear()
        sys.path_importer_cache.clear()
        sys.path[:] = []

    # ------------------------------------------------------------ ops

    def op_load(self, req, bufs):
        name, filename = req["module"], req["filename"]
        code = compile(bufs[0], filename, "exec", dont_inherit=True)
        module = types.ModuleType(name)
        module.__file__ = filename
        self.modules[name] = module
        self.student_files.add(filename)
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
        """Start a call from a given random state (`seed` in the request), so that calls repeat."""
        seed = req.get("seed")
        if type(seed) is int:
            torch.manual_seed(seed)
            random.seed(seed)
            np.random.seed(seed % 2**32)

    def op_call(self, req, bufs):
        fn = self._target(req["target"])
        args = wire.decode_value(req["args"], bufs, self._resolve)
        kwargs = wire.decode_value(req["kwargs"], bufs, self._resolve)
        self._reseed(req)
        value = fn(*args, **kwargs)
        out: list[bytes] = []
        return {"ok": True, "value": self._encode(value, out)}, out

    def op_vjp(self, req, bufs):
        """Call, then backpropagate `sum(output_i * cotangent_i)`; return outputs and gradients."""
        fn = self._target(req["target"])
        args = list(wire.decode_value(req["args"], bufs, self._resolve))
        cotangents = wire.decode_value(req["cotangents"], bufs, self._resolve)
        for i in req["grad_args"]:
            args[i] = args[i].detach().clone().requires_grad_(True)
        module = fn if isinstance(fn, torch.nn.Module) else getattr(fn, "__self__", None)
        params = dict(module.named_parameters()) if isinstance(module, torch.nn.Module) else {}
        for p in params.values():
            p.grad = None
        self._reseed(req)
        outputs = fn(*args)
        leaves = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
        loss = None
        for leaf, cot in zip(leaves, cotangents, strict=False):  # a wrong output count fails later
            if cot is not None and isinstance(leaf, torch.Tensor) and leaf.requires_grad:
                term = (leaf * cot.to(leaf.dtype)).sum()
                loss = term if loss is None else loss + term
        if loss is not None:
            loss.backward()
        out: list[bytes] = []
        value = {
            "outputs": outputs,
            "input_grads": [args[i].grad for i in req["grad_args"]],
            "param_grads": {n: p.grad for n, p in params.items()},
            "backward_ran": loss is not None,
        }
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
            info["modules"] = [[n, type(m).__qualname__, type(m).__module__] for n, m in obj.named_modules()]
        return {"ok": True, "value": wire.encode_value(info, [])}

    OPS = {
        "load": op_load,
        "getattr": op_getattr,
        "hasattr": op_hasattr,
        "call": op_call,
        "vjp": op_vjp,
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
            },
        }

    def serve(self) -> None:
        while True:
            try:
                req, bufs = wire.recv_frame(self.sock)
            except wire.WireError:
                return
            handler = self.OPS.get(req.get("op"))
            cpu = req.get("cpu")
            if type(cpu) in (int, float) and cpu > 0:
                isolation.set_call_cpu_limit(cpu)
            try:
                result = handler(self, req, bufs)
                header, out = result if isinstance(result, tuple) else (result, [])
            except BaseException as exc:  # student code may raise anything, SystemExit included
                header, out = self._error_reply(exc), []
            header["seq"] = req.get("seq")  # replies answer one request each, in turn
            try:
                frame = wire.pack_frame(header, out)
            except BaseException as exc:
                frame = wire.pack_frame(dict(self._error_reply(exc), seq=req.get("seq")))
            self.sock.sendall(frame)


def main(sock, allowed_imports) -> None:
    worker = Worker(sock, frozenset(allowed_imports))
    worker.install_import_guard()
    worker.seal_imports()
    worker.serve()
