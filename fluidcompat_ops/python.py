"""Ops that hand tensors to Python: ``print`` (``layers.Print``), ``py_func`` and ``assert``.

Their kernels read the op's variable names from the private attribute ``_op`` (the Operator), which
the interpreter adds for every op.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, List

import numpy as np

from fluidcompat.logging import cpp_number
from fluidcompat_ops.control import EMPTY
from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.sequence import lod_of, with_lod
from fluidcompat_ops.shapes import same_as

torch = None  # NOTE: [Lazy torch] in registry.py
F = None

# -- print ----------------------------------------------------------------------------------------
# the one-letter type names fluid 1.8 printed (C++ typeid names)
_TYPE_CODES = {
    "float32": "f",
    "float64": "d",
    "int32": "i",
    "int64": "l",
    "bool": "b",
    "int16": "s",
    "int8": "a",
    "uint8": "h",
    "float16": "N8paddle8platform7float16E",
}


def _place_text(device) -> str:
    return "CPUPlace" if device.type == "cpu" else f"CUDAPlace({device.index or 0})"


def format_tensor(
    t, name: str, message: str, summarize: int, show_name=True, show_type=True, show_shape=True, show_lod=True
):
    """One tensor as fluid 1.8's print op wrote it."""
    lines = [f"{int(time.time())}\t{message}\tThe place is:{_place_text(t.device)}"]
    if show_name:
        lines.append(f"Tensor[{name}]")
    if show_shape:
        lines.append("\tshape: [" + "".join(f"{d}," for d in t.shape) + "]")
    if show_type:
        lines.append(f"\tdtype: {_TYPE_CODES.get(str(t.dtype).replace('torch.', ''), str(t.dtype))}")
    lod = lod_of(t)  # NOTE: [LoD values] in sequence.py
    if show_lod and lod:
        lines.append("\tLoD: [" + "".join("[ " + "".join(f"{o}," for o in level) + " ]" for level in lod) + "]")
    flat = t.detach().reshape(-1)
    if summarize >= 0:
        flat = flat[:summarize]
    lines.append("\tdata: " + "".join(cpp_number(v) + "," for v in flat.cpu().tolist()))
    return "\n".join(lines) + "\n"


def _print_kernel(ins, attrs):
    x = ins["In"][0]
    phase = attrs.get("print_phase", "BOTH").upper()
    forward = attrs.get("is_forward", True)
    wanted = phase == "BOTH" or phase == ("FORWARD" if forward else "BACKWARD")
    count = attrs.get("_printed", 0)
    first_n = attrs.get("first_n", -1)
    if wanted and x is not None and (first_n < 0 or count < first_n):
        attrs["_printed"] = count + 1  # first_n counts over every run of the prepared program
        name = attrs["_op"].inputs["In"][0]
        text = format_tensor(
            x,
            name,
            attrs.get("message", ""),
            attrs.get("summarize", 20),
            attrs.get("print_tensor_name", True),
            attrs.get("print_tensor_type", True),
            attrs.get("print_tensor_shape", True),
            attrs.get("print_tensor_lod", True),
        )
        sys.stdout.write(text)
        sys.stdout.flush()
    return {"Out": [None if x is None else x.clone()]}


def _print_grad_maker(op, out_grads, in_grads):
    attrs = {k: v for k, v in op.attrs.items() if k not in ("op_role", "op_role_var", "op_namescope", "op_device")}
    attrs["is_forward"] = False
    return [("print", {"In": out_grads["Out"]}, {"Out": in_grads["In"]}, attrs)]


register(
    OpDef(
        "print",
        ("In",),
        ("Out",),
        {
            "first_n": -1,
            "message": "",
            "summarize": 20,
            "print_tensor_name": True,
            "print_tensor_type": True,
            "print_tensor_shape": True,
            "print_tensor_lod": True,
            "print_phase": "BOTH",
            "is_forward": True,
        },
        same_as("In"),
        _print_kernel,
        grad=GradDef(in_grads=("In",), maker=_print_grad_maker),
        doc="Out = In, writing In to stdout as fluid 1.8 did",
    )
)


# -- py_func --------------------------------------------------------------------------------------
_CALLABLES: List[Callable] = []


def register_callable(fn: Callable) -> int:
    """The id a py_func op's attributes name ``fn`` by (fluid's PyFuncRegistry)."""
    _CALLABLES.append(fn)
    return len(_CALLABLES) - 1


def _py_func_kernel(ins, attrs):
    from fluidcompat.dtypes import np_name
    from fluidcompat.executor.scope import LoDTensor

    op = attrs["_op"]
    fn = _CALLABLES[attrs["forward_callable_id"]]
    args = [None if t is None else LoDTensor(t) for t in ins.get("X", [])]
    names = op.outputs.get("Out", [])
    ret = fn(*args)
    if ret is None:
        ret = []
    elif not isinstance(ret, (list, tuple)):
        ret = [ret]
    if len(ret) != len(names):
        raise ValueError(
            f"py_func: the Python function {getattr(fn, '__name__', fn)!r} returned {len(ret)} values for the "
            f"{len(names)} outputs {names}"
        )
    outs = []
    for name, value in zip(names, ret):
        if value is None:
            if name != EMPTY:
                raise ValueError(f"py_func: {getattr(fn, '__name__', fn)!r} returned None for the output '{name}'")
            outs.append(None)
            continue
        t = value._t if isinstance(value, LoDTensor) else torch.as_tensor(np.asarray(value))
        var = op.block._find_var_recursive(name)
        want = np_name(var.dtype) if var is not None else None
        got = str(t.dtype).replace("torch.", "")
        if want is not None and got != want:
            raise TypeError(
                f"py_func: {getattr(fn, '__name__', fn)!r} returned {got} for the output '{name}', which is "
                f"declared {want}. Return an array of dtype {want}."
            )
        outs.append(t.to(attrs["_device"]))
    return {"Out": outs}


def _py_func_grad_maker(op, out_grads, in_grads):
    """The backward function reads the forward inputs and outputs (less the skipped ones) and the
    outputs' gradients, and returns one gradient per forward input."""
    back = op.attrs.get("backward_callable_id", -1)
    if back < 0:
        return []
    skip = set(op.attrs.get("backward_skip_vars", []))
    xs = [n for n in op.inputs.get("X", []) + op.outputs.get("Out", []) if n not in skip]
    ins = {"X": xs + list(out_grads["Out"])}
    attrs = {"forward_callable_id": back, "backward_callable_id": -1, "backward_skip_vars": []}
    return [("py_func", ins, {"Out": [g or EMPTY for g in in_grads["X"]]}, attrs)]


register(
    OpDef(
        "py_func",
        ("X",),
        ("Out",),
        {"forward_callable_id": -1, "backward_callable_id": -1, "backward_skip_vars": []},
        None,
        _py_func_kernel,
        optional_inputs=frozenset({"X"}),
        grad=GradDef(in_grads=("X",), maker=_py_func_grad_maker),
        doc="Out = a Python function of X",
    )
)


# -- assert (fluid 1.8 had none; Paddle 2's Assert) ------------------------------------------------
def _assert_kernel(ins, attrs):
    cond = ins["Cond"][0]
    if cond.numel() != 1:
        raise ValueError(f"Assert needs a one-element bool Cond. Received: shape {list(cond.shape)}")
    if bool(cond.reshape(-1)[0]):
        return {}
    op = attrs["_op"]
    text = [f"The condition variable '{op.inputs['Cond'][0]}' of Assert must be true, but received false"]
    for name, t in zip(op.inputs.get("Data", []), ins.get("Data", [])):
        if t is not None:
            text.append(format_tensor(t, name, "", attrs.get("summarize", 20)).rstrip("\n"))
    raise AssertionError("\n".join(text))


register(
    OpDef(
        "assert",
        ("Cond", "Data"),
        (),
        {"summarize": 20},
        None,
        _assert_kernel,
        host_inputs=frozenset({"Cond"}),
        doc="fails the run, printing Data, when Cond is false",
    )
)


# -- read: the next batch of a Python reader (py_reader, DataLoader(iterable=False)) ---------------
class EOFException(Exception):
    """The reader has no next batch (fluid's ``core.EOFException``): reset it and start again."""


class ReaderState:
    """A Python reader a read op pulls batches from. ``source()`` gives an iterator of batches (lists of
    arrays); ``start()`` begins a pass over it, ``reset()`` ends it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.source = None
        self._it = None

    def start(self) -> None:
        if self.source is None:
            raise ValueError(f"The reader '{self.name}' has no data source: decorate it with a generator first")
        if self._it is not None:
            raise ValueError(f"The reader '{self.name}' is started already: call reset() at the end of each pass")
        self._it = iter(self.source())

    def reset(self) -> None:
        self._it = None

    def next(self):
        if self._it is None and self.source is None and getattr(self, "queue", None) is not None:
            if self.queue._can_give():  # a py_reader with no generator: the batches pushed to its queue
                return self.queue.pop()
        if self._it is None:
            raise ValueError(
                f"The reader '{self.name}' is not started: call start() before Executor.run, and reset() after "
                "the EOFException that ends the pass"
            )
        try:
            return next(self._it)
        except StopIteration:
            raise EOFException("There is no next data.") from None


def _read_kernel(ins, attrs):
    from fluidcompat.dtypes import np_name

    op = attrs["_op"]
    state = _CALLABLES[attrs["reader_id"]]
    batch = state.next()
    names = op.outputs["Out"]
    if len(batch) != len(names):
        raise ValueError(f"read: the reader '{state.name}' gave {len(batch)} fields for the outputs {names}")
    outs = []
    for name, value in zip(names, batch):
        var = op.block._find_var_recursive(name)
        lod = value.lod() if hasattr(value, "lod") else []  # a LoDTensor's sequences (NOTE: [LoD values])
        arr = np.asarray(value, dtype=np_name(var.dtype)) if var is not None else np.asarray(value)
        outs.append(with_lod(torch.from_numpy(np.ascontiguousarray(arr)).to(attrs["_device"]), lod))
    return {"Out": outs}


register(OpDef("read", (), ("Out",), {"reader_id": -1, "infer_out": False}, None, _read_kernel))


# -- load: a variable from a file in fluid's LoDTensor stream format --------------------------------
def _load_kernel(ins, attrs):
    from fluidcompat.proto import read_tensor

    path = attrs["file_path"]
    try:
        with open(path, "rb") as f:
            arr, lod = read_tensor(f, path)
    except FileNotFoundError:
        raise FileNotFoundError(f"load: the file '{path}' does not exist") from None
    seek = int(attrs.get("seek", -1))
    if seek != -1:  # a block of the file's tensor: ``shape``'s elements from element ``seek`` on, no LoD
        arr, lod = _load_block(arr, seek, [int(d) for d in attrs.get("shape", [])], path), []
    t = torch.from_numpy(np.ascontiguousarray(arr)).to(attrs["_device"])
    t = t.half() if attrs.get("load_as_fp16") else t
    return {"Out": [with_lod(t, lod)]}  # the file's LoD travels with the value (NOTE: [LoD values])


def _load_block(arr, seek: int, shape, path: str):
    """The elements ``seek`` .. ``seek + prod(shape)`` of ``arr`` (row-major) in ``shape`` (fluid's load
    of one slice of a variable a distributed save wrote whole)."""
    if seek < 0:
        raise ValueError(f"load: seek must be >= 0 (elements into the tensor), or -1 for all of it. Received: {seek}")
    if not shape or any(d < 0 for d in shape):
        raise ValueError(f"load: with seek, shape gives the block's dims (all >= 0). Received: {shape}")
    count = int(np.prod(shape))
    flat = arr.reshape(-1)
    if seek + count > flat.size:
        raise ValueError(
            f"load: '{path}' holds {flat.size} elements; seek {seek} and shape {shape} want elements "
            f"{seek} to {seek + count}"
        )
    return flat[seek : seek + count].reshape(shape)


register(
    OpDef("load", (), ("Out",), {"file_path": "", "load_as_fp16": False, "seek": -1, "shape": []}, None, _load_kernel)
)
