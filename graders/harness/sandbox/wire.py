"""The wire format between the trusted grader and a sandboxed worker.

A frame is: 4-byte big-endian header length, a UTF-8 JSON header, then the raw bytes of every
tensor named in the header, back to back. Nothing is pickled. Values are JSON trees where tagged
objects stand for what JSON cannot say::

    {"$tensor": i, "dtype": "float32", "shape": [2, 3], "requires_grad": false}   # buffer i
    {"$ndarray": i, "dtype": "float64", "shape": [3]}
    {"$tuple": [...]}   {"$dict": [[key, value], ...]}   {"$float": "nan" | "inf" | "-inf"}
    {"$handle": 7, "type": "mod.Class", "callable": true}   # an object kept inside the worker

Decoding checks every cap (header size, buffer bytes, tensor count, nesting depth, dtype, shape
against byte count), so a malformed or hostile frame raises `WireError` and never anything else.
Imports: standard library, numpy, torch only (this module runs inside the worker too).
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
import socket
import struct
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import torch

MACHINERY_EXIT = 70  # exit status of a worker whose own sandbox code failed outside any request (EX_SOFTWARE)
MAX_HEADER_BYTES = 4 << 20
MAX_BUFFER_BYTES = 64 << 20
MAX_BUFFERS = 256
MAX_DEPTH = 32
MAX_NODES = 200_000
MAX_NDIM = 8
MAX_HEADER_DEPTH = 2 * MAX_DEPTH + 8  # a value of MAX_DEPTH tuples is twice as deep in JSON
MAX_STRING_CHARS = 10_000

_JSON_STRING = re.compile(rb'"(?:[^"\\]+|\\.)*"')

TORCH_DTYPES: dict[str, torch.dtype] = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
DTYPE_NAMES = {v: k for k, v in TORCH_DTYPES.items()}
NUMPY_DTYPES = {k for k in TORCH_DTYPES if k != "bfloat16"}


class WireError(Exception):
    """A frame broke the format or one of its caps."""


class ChannelClosed(WireError):
    """The other side closed the connection (or died) before a whole frame arrived."""


class ChannelTimeout(Exception):
    """No whole frame arrived before the deadline."""


@dataclass
class Handle:
    """A reference to an object that lives inside the worker."""

    id: int
    type: str
    callable: bool


# ---------------------------------------------------------------- encoding


def _tensor_bytes(t: torch.Tensor) -> bytes:
    t = t.detach().cpu().resolve_conj().resolve_neg().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def encode_value(value, buffers: list[bytes], handles=None, _depth: int = 0):
    """Turn `value` into a JSON tree, appending raw tensor bytes to `buffers`.

    `handles`, when given, is called with any object that is not plain data and must return a
    `Handle` (the worker keeps such objects). Without it, such objects raise `WireError`.
    """
    if _depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if abs(value) >= 2**63:
            raise WireError("integer too large")
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, torch.Tensor) and type(value) in (torch.Tensor, torch.nn.Parameter):
        if value.layout != torch.strided or value.device.type != "cpu":
            raise WireError("only dense CPU tensors can be returned")
        if value.dtype not in DTYPE_NAMES:
            raise WireError(f"tensor dtype {value.dtype} cannot be sent")
        buffers.append(_tensor_bytes(value))
        return {
            "$tensor": len(buffers) - 1,
            "dtype": DTYPE_NAMES[value.dtype],
            "shape": list(value.shape),
            "requires_grad": bool(value.requires_grad),
        }
    if isinstance(value, np.ndarray) and type(value) is np.ndarray:
        name = value.dtype.name
        if name not in NUMPY_DTYPES:
            raise WireError(f"array dtype {name} cannot be sent")
        buffers.append(np.ascontiguousarray(value).tobytes())
        return {"$ndarray": len(buffers) - 1, "dtype": name, "shape": list(value.shape)}
    if isinstance(value, np.generic) and type(value).__module__ == "numpy":
        return encode_value(value.item(), buffers, handles, _depth + 1)
    if type(value) is list:
        return [encode_value(v, buffers, handles, _depth + 1) for v in value]
    if type(value) is tuple:
        return {"$tuple": [encode_value(v, buffers, handles, _depth + 1) for v in value]}
    if type(value) in (dict, OrderedDict) and all(type(k) is str for k in value):
        return {"$dict": [[k, encode_value(v, buffers, handles, _depth + 1)] for k, v in value.items()]}
    if handles is not None:
        h = handles(value)
        return {"$handle": h.id, "type": h.type, "callable": h.callable}
    raise WireError(f"cannot send a value of type {type(value).__name__}")


# ---------------------------------------------------------------- decoding


class _Budget:
    def __init__(self) -> None:
        self.nodes = 0


def _decode_tensor_meta(node: dict, buffers: list[bytes]):
    idx, dtype, shape = node.get("$tensor", node.get("$ndarray")), node.get("dtype"), node.get("shape")
    if type(idx) is not int or not 0 <= idx < len(buffers):
        raise WireError("tensor refers to a missing buffer")
    if dtype not in TORCH_DTYPES:
        raise WireError(f"dtype {dtype!r} is not allowed")
    if (
        type(shape) is not list
        or len(shape) > MAX_NDIM
        or not all(type(d) is int and 0 <= d <= MAX_BUFFER_BYTES for d in shape)
    ):
        raise WireError("tensor shape is malformed")
    itemsize = torch.empty((), dtype=TORCH_DTYPES[dtype]).element_size()
    if math.prod(shape) * itemsize != len(buffers[idx]):
        raise WireError(f"tensor shape {shape} does not match its {len(buffers[idx])} bytes")
    return idx, dtype, shape


def _decode_tensor(node: dict, buffers: list[bytes]) -> torch.Tensor:
    idx, dtype, shape = _decode_tensor_meta(node, buffers)
    tdtype = TORCH_DTYPES[dtype]
    if not buffers[idx]:
        return torch.empty(shape, dtype=tdtype)
    raw_dtype = torch.int16 if tdtype == torch.bfloat16 else tdtype
    t = torch.frombuffer(bytearray(buffers[idx]), dtype=raw_dtype).reshape(shape)
    return t.view(torch.bfloat16) if tdtype == torch.bfloat16 else t


def _decode(node, buffers, resolve, depth: int, budget: _Budget):
    budget.nodes += 1
    if budget.nodes > MAX_NODES:
        raise WireError("value has too many parts")
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if type(node) is list:
        return [_decode(v, buffers, resolve, depth + 1, budget) for v in node]
    if type(node) is not dict or len(node) == 0:
        raise WireError("malformed value")
    if "$tensor" in node:
        t = _decode_tensor(node, buffers)
        if node.get("requires_grad") is True:
            t.requires_grad_(t.is_floating_point() or t.is_complex())
        return t
    if "$ndarray" in node:
        _decode_tensor_meta(node, buffers)
        if node["dtype"] == "bfloat16":
            raise WireError("numpy has no bfloat16")
        arr = np.frombuffer(buffers[node["$ndarray"]], dtype=np.dtype(node["dtype"]))
        return arr.reshape(node["shape"]).copy()
    if "$tuple" in node and type(node["$tuple"]) is list:
        return tuple(_decode(v, buffers, resolve, depth + 1, budget) for v in node["$tuple"])
    if "$dict" in node and type(node["$dict"]) is list:
        out = {}
        for pair in node["$dict"]:
            if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
                raise WireError("malformed dict entry")
            out[pair[0]] = _decode(pair[1], buffers, resolve, depth + 1, budget)
        return out
    if "$float" in node and node["$float"] in ("nan", "inf", "-inf"):
        return float(node["$float"])
    if "$handle" in node and type(node["$handle"]) is int:
        h = Handle(node["$handle"], str(node.get("type", "?"))[:200], bool(node.get("callable")))
        return resolve(h) if resolve else h
    raise WireError("malformed value")


def decode_value(node, buffers: list[bytes], resolve=None):
    """Inverse of `encode_value`; `resolve` maps a `Handle` to what it stands for on this side."""
    return _decode(node, buffers, resolve, 0, _Budget())


# ---------------------------------------------------------------- framing


def pack_frame(header: dict, buffers: list[bytes] = ()) -> bytes:
    header = dict(header, buffers=[len(b) for b in buffers])
    raw = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    return b"".join([struct.pack(">I", len(raw)), raw, *buffers])


def send_frame(sock: socket.socket, header: dict, buffers: list[bytes] = ()) -> None:
    sock.sendall(pack_frame(header, buffers))


def _recv_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeout()
            sock.settimeout(left)
        else:
            sock.settimeout(None)
        try:
            chunk = sock.recv(min(n - got, 1 << 20))
        except TimeoutError as exc:
            raise ChannelTimeout() from exc
        except OSError as exc:
            raise ChannelClosed(str(exc)) from exc
        if not chunk:
            raise ChannelClosed("connection closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def json_depth(raw: bytes) -> int:
    """How deeply the arrays and objects of the JSON text `raw` nest, found without parsing it
    (`json.loads` recurses: 100 000 nested brackets would raise RecursionError, not `WireError`)."""
    codes = np.frombuffer(_JSON_STRING.sub(b'""', raw), dtype=np.uint8)
    if codes.size == 0:
        return 0
    steps = ((codes == 0x5B) | (codes == 0x7B)).astype(np.int32) - ((codes == 0x5D) | (codes == 0x7D))
    return int(np.cumsum(steps).max())


def check_strings(node, max_chars: int, depth: int = 0) -> None:
    """Raise `WireError` if a string anywhere in the JSON tree `node` (keys included) is over
    `max_chars` characters. `node` has already passed `json_depth`."""
    if type(node) is str:
        if len(node) > max_chars:
            raise WireError(f"a string of {len(node)} characters is over the {max_chars}-character cap")
    elif type(node) is list:
        for item in node:
            check_strings(item, max_chars, depth + 1)
    elif type(node) is dict:
        for key, item in node.items():
            check_strings(key, max_chars, depth + 1)
            check_strings(item, max_chars, depth + 1)


def recv_frame(
    sock: socket.socket,
    deadline: float | None = None,
    max_buffer_bytes: int = MAX_BUFFER_BYTES,
    *,
    max_header_bytes: int = MAX_HEADER_BYTES,
    max_depth: int = MAX_HEADER_DEPTH,
    max_string_chars: int = MAX_STRING_CHARS,
) -> tuple[dict, list[bytes]]:
    """Read one frame. Raises `WireError` on anything malformed or over a cap (header bytes, JSON
    depth, string length, buffer bytes: the receiver sets each), `ChannelTimeout` past `deadline`."""
    (size,) = struct.unpack(">I", _recv_exact(sock, 4, deadline))
    if size > max_header_bytes:
        raise WireError(f"header of {size} bytes is over the {max_header_bytes}-byte cap")
    raw = _recv_exact(sock, size, deadline)
    # each level of nesting opens a bracket, so a header with few brackets needs no count of its depth
    depth = json_depth(raw) if raw.count(b"[") + raw.count(b"{") > max_depth else 0
    if depth > max_depth:
        raise WireError(f"header nested {depth} deep, over the cap of {max_depth}")
    try:
        header = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # ValueError: also an integer of 4 301+ digits
        raise WireError(f"header is not JSON: {str(exc)[:120]}") from exc
    if type(header) is not dict:
        raise WireError("header is not an object")
    if len(raw) > max_string_chars:  # a decoded string is never longer than the bytes it came from
        check_strings(header, max_string_chars)
    sizes = header.get("buffers", [])
    if (
        type(sizes) is not list
        or len(sizes) > MAX_BUFFERS
        or not all(type(s) is int and s >= 0 for s in sizes)
    ):
        raise WireError("buffer list is malformed")
    if sum(sizes) > max_buffer_bytes:
        raise WireError(f"reply of {sum(sizes)} bytes is over the {max_buffer_bytes}-byte cap")
    return header, [_recv_exact(sock, s, deadline) for s in sizes]


def is_banned(dotted: str, banned) -> bool:
    """Is the dotted name `dotted` one of `banned` (a manifest's list; a last component may be a glob,
    ``torch.ops.aten._scaled_dot_product_*``)? Shared by the worker's tripwire and the trusted side."""
    return dotted in banned or any("*" in b and fnmatch.fnmatchcase(dotted, b) for b in banned)
