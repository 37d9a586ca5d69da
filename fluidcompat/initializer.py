"""``fluid.initializer``: each initializer prepends one op to the startup program."""

from __future__ import annotations

import math

import numpy as np

from fluidcompat import unique_name
from fluidcompat.dtypes import VarType, to_vartype


def _seed(seed: int, block) -> int:
    return seed or block.program.random_seed


def _check_out(var, api: str) -> None:
    """fluid 1.8's check of the variable an initializer fills (uniform, normal and Xavier checked it:
    a float16 one warned, a non-float one was refused)."""
    from fluidcompat.arg_checks import check_dtype

    check_dtype(var.dtype, "Out", ["float16", "float32", "float64"], api)


def _fans(shape):
    shape = list(shape)
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[2:]))
    return shape[1] * receptive, shape[0] * receptive


class Initializer:
    """Base class: ``init(var, block)`` appends the op that fills ``var``."""

    def __call__(self, var, block):
        raise NotImplementedError(f"{type(self).__name__} does not define how to initialize {var.name}")

    def _prepend(self, block, op_type, var, attrs, prefix=None):
        return _fill_op(
            block, op_type, var, lambda t: dict(attrs, shape=list(var.shape), dtype=int(t.dtype)), prefix or op_type
        )


def _fill_op(block, op_type, var, attrs_for, prefix: str, append: bool = False):
    """Prepend (or append) the op ``op_type`` that fills ``var`` with attributes ``attrs_for(target)``:
    ``target`` is ``var``, or for a float16 one a float32 temporary (``<prefix>.<var>.tmp_N``) that a
    cast appended after it copies into ``var``, as fluid 1.8 made float16 parameters."""
    target = var
    if to_vartype(var.dtype) == VarType.FP16:
        target = block.create_var(
            name=unique_name.generate(f"{prefix}.{var.name}.tmp"),
            shape=var.shape,
            dtype=VarType.FP32,
            type=VarType.LOD_TENSOR,
            persistable=False,
        )
    add = block.append_op if append else block._prepend_op
    op = add(type=op_type, outputs={"Out": [target]}, attrs=attrs_for(target))
    if target is not var:
        block.append_op(
            type="cast",
            inputs={"X": [target]},
            outputs={"Out": [var]},
            attrs={"in_dtype": int(VarType.FP32), "out_dtype": int(VarType.FP16)},
        )
    return op


class ConstantInitializer(Initializer):
    """Fills a variable with ``value`` (op ``fill_constant``)."""

    def __init__(self, value: float = 0.0, force_cpu: bool = False) -> None:
        self._value = value
        self._force_cpu = force_cpu

    def __call__(self, var, block):
        return self._prepend(
            block,
            "fill_constant",
            var,
            {"value": float(self._value), "force_cpu": self._force_cpu, "str_value": ""},
            "constant_init",
        )


class UniformInitializer(Initializer):
    """Uniform random values in ``[low, high)`` (op ``uniform_random``)."""

    def __init__(self, low=-1.0, high=1.0, seed=0, diag_num=0, diag_step=0, diag_val=1.0) -> None:
        if low > high:
            raise ValueError(f"low must not exceed high. Received: low={low}, high={high}")
        self._low, self._high, self._seed = low, high, seed
        self._diag = (diag_num, diag_step, diag_val)

    def __call__(self, var, block):
        _check_out(var, "uniform_random")
        return self._fill(var, block)

    def _fill(self, var, block, prefix="uniform_random"):
        n, step, val = self._diag
        return self._prepend(
            block,
            "uniform_random",
            var,
            {
                "min": float(self._low),
                "max": float(self._high),
                "seed": _seed(self._seed, block),
                "diag_num": n,
                "diag_step": step,
                "diag_val": float(val),
            },
            prefix,
        )


class NormalInitializer(Initializer):
    """Normal random values of ``loc`` and ``scale`` (op ``gaussian_random``)."""

    def __init__(self, loc=0.0, scale=1.0, seed=0) -> None:
        self._mean, self._std, self._seed = loc, scale, seed

    def __call__(self, var, block):
        _check_out(var, "guassian_random")  # (fluid's spelling)
        return self._fill(var, block)

    def _fill(self, var, block, prefix="gaussian_random"):
        return self._prepend(
            block,
            "gaussian_random",
            var,
            {"mean": float(self._mean), "std": float(self._std), "seed": _seed(self._seed, block)},
            prefix,
        )


class TruncatedNormalInitializer(NormalInitializer):
    """Normal values re-drawn outside two standard deviations (op ``truncated_gaussian_random``)."""

    def __call__(self, var, block):
        return self._prepend(
            block,
            "truncated_gaussian_random",
            var,
            {"mean": float(self._mean), "std": float(self._std), "seed": _seed(self._seed, block)},
        )


class XavierInitializer(Initializer):
    """Xavier/Glorot initialization, uniform or normal, from fan-in and fan-out."""

    def __init__(self, uniform=True, fan_in=None, fan_out=None, seed=0) -> None:
        self._uniform, self._fan_in, self._fan_out, self._seed = uniform, fan_in, fan_out, seed

    def __call__(self, var, block):
        _check_out(var, "xavier_init")
        f_in, f_out = _fans(var.shape)
        f_in = f_in if self._fan_in is None else self._fan_in
        f_out = f_out if self._fan_out is None else self._fan_out
        if self._uniform:
            limit = math.sqrt(6.0 / float(f_in + f_out))
            return UniformInitializer(-limit, limit, self._seed)._fill(var, block, "xavier_init")
        return NormalInitializer(0.0, math.sqrt(2.0 / float(f_in + f_out)), self._seed)._fill(var, block, "xavier_init")


class MSRAInitializer(Initializer):
    """MSRA/He initialization, uniform or normal, from fan-in."""

    def __init__(self, uniform=True, fan_in=None, seed=0) -> None:
        self._uniform, self._fan_in, self._seed = uniform, fan_in, seed

    def __call__(self, var, block):
        f_in = _fans(var.shape)[0] if self._fan_in is None else self._fan_in
        if self._uniform:
            limit = math.sqrt(6.0 / float(f_in))
            return UniformInitializer(-limit, limit, self._seed)._fill(var, block, "masra_init")  # (fluid's name)
        return NormalInitializer(0.0, math.sqrt(2.0 / float(f_in)), self._seed)._fill(var, block, "masra_init")


class NumpyArrayInitializer(Initializer):
    """Sets a variable to a given numpy array (op ``assign_value``)."""

    def __init__(self, value) -> None:
        if not isinstance(value, np.ndarray):
            raise TypeError(f"NumpyArrayInitializer expects a numpy array. Received: {type(value).__name__}")
        self._value = value

    def __call__(self, var, block):
        if tuple(self._value.shape) != tuple(var.shape):
            raise ValueError(
                f"the array's shape must equal the parameter's. Received: array {self._value.shape}, "
                f"{var.name} {tuple(var.shape)}"
            )
        return _fill_op(
            block, "assign_value", var, lambda t: assign_value_attrs(self._value, t.dtype), "numpy_array_init"
        )


def assign_value_attrs(value: np.ndarray, dtype) -> dict:
    """Attributes of an ``assign_value`` op holding ``value`` as ``dtype``."""
    vt = to_vartype(dtype)
    slot = {
        VarType.FP32: "fp32_values",
        VarType.INT32: "int32_values",
        VarType.INT64: "int64_values",
        VarType.BOOL: "bool_values",
    }.get(vt)
    if slot is None:
        raise TypeError(f"assign_value supports float32, int32, int64 and bool. Received: dtype={vt}")
    cast = {"fp32_values": float, "int32_values": int, "int64_values": int, "bool_values": bool}[slot]
    return {"shape": list(value.shape), "dtype": int(vt), slot: [cast(v) for v in value.reshape(-1).tolist()]}


class BilinearInitializer(Initializer):
    """Bilinear upsampling weights for a conv2d_transpose filter [C, 1, K, K]. (fluid 1.8.5 under
    Python 3 took the row as ``(i / size) % size``, a fraction, and so made another kernel than the
    bilinear one it documents: a departure, these are the bilinear weights.)"""

    def __call__(self, var, block):
        shape = list(var.shape)
        if len(shape) != 4 or shape[2] != shape[3]:
            raise ValueError(f"Bilinear needs a 4-D filter with square kernels. Received: shape={shape}")
        size = shape[3]
        f = math.ceil(size / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        weight = np.zeros(int(np.prod(shape)), dtype="float32")
        for i in range(weight.size):
            x = i % size
            y = (i // size) % size
            weight[i] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
        # fluid 1.8 appends this one op to the startup program (the other initializers prepend theirs)
        weight = weight.reshape(shape)
        return _fill_op(
            block, "assign_value", var, lambda t: assign_value_attrs(weight, t.dtype), "bilinear_init", append=True
        )


Constant = ConstantInitializer
Uniform = UniformInitializer
Normal = NormalInitializer
TruncatedNormal = TruncatedNormalInitializer
Xavier = XavierInitializer
MSRA = MSRAInitializer
Bilinear = BilinearInitializer

__all__ = [
    "Constant",
    "Uniform",
    "Normal",
    "TruncatedNormal",
    "Xavier",
    "Bilinear",
    "MSRA",
    "ConstantInitializer",
    "UniformInitializer",
    "NormalInitializer",
    "TruncatedNormalInitializer",
    "XavierInitializer",
    "BilinearInitializer",
    "MSRAInitializer",
    "NumpyArrayInitializer",
]


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.initializer")(name)
