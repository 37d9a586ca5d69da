"""fluid 1.8's Python inference API (``paddle.fluid.core``): ``AnalysisConfig`` / ``NativeConfig``,
``create_paddle_predictor`` and the predictor's ``run`` over ``PaddleTensor``s or its zero-copy
tensors, serving a model that ``save_inference_model`` wrote (here or by fluid 1.8).

The predictor runs the saved program with fluidcompat's executor in a scope of its own; fluid's
analysis passes (IR fusions, MKL-DNN, TensorRT, Lite) have nothing to do here: their switches are
kept and reported, and change nothing.
"""

from __future__ import annotations

import enum
import os
from typing import Dict, List, Optional

import numpy as np

__all__ = [
    "AnalysisConfig",
    "NativeConfig",
    "PaddleDType",
    "PaddleBuf",
    "PaddleTensor",
    "PaddlePredictor",
    "AnalysisPredictor",
    "NativePaddlePredictor",
    "ZeroCopyTensor",
    "create_paddle_predictor",
]


class PaddleDType(enum.Enum):
    FLOAT32 = 0
    INT64 = 1
    INT32 = 2


_DTYPES = {
    np.dtype("float32"): PaddleDType.FLOAT32,
    np.dtype("int64"): PaddleDType.INT64,
    np.dtype("int32"): PaddleDType.INT32,
}


class PaddleBuf:
    """The memory of a ``PaddleTensor``."""

    def __init__(self, data=None) -> None:
        self._array = np.asarray(data if data is not None else [], dtype=None if data is not None else np.float32)

    def length(self) -> int:
        return self._array.nbytes

    def empty(self) -> bool:
        return self._array.size == 0

    def reset(self, data) -> None:
        self._array = np.asarray(data)

    def resize(self, length: int) -> None:
        self._array = np.zeros(length, np.uint8)

    def float_data(self) -> list:
        return self._array.astype(np.float32).reshape(-1).tolist()

    def int64_data(self) -> list:
        return self._array.astype(np.int64).reshape(-1).tolist()

    def int32_data(self) -> list:
        return self._array.astype(np.int32).reshape(-1).tolist()


def _paddle_dtype(array: np.ndarray) -> PaddleDType:
    dtype = _DTYPES.get(array.dtype)
    if dtype is None:
        raise TypeError(
            f"PaddleTensor holds float32, int64 or int32 data (fluid 1.8's PaddleDType). Received: {array.dtype}"
        )
    return dtype


class PaddleTensor:
    """An input or output of ``predictor.run``: ``name``, ``shape``, ``dtype``, ``lod`` and ``data``."""

    def __init__(self, data=None, name: str = "", lod=None, copy: bool = True) -> None:
        self.name = name
        self.lod = [list(level) for level in lod] if lod else []
        if data is None:
            self.data, self.shape, self.dtype = PaddleBuf(), [], PaddleDType.FLOAT32
            return
        array = np.array(data, copy=copy) if copy else np.asarray(data)
        self.dtype = _paddle_dtype(array)
        self.shape = list(array.shape)
        self.data = PaddleBuf(array)

    def as_ndarray(self) -> np.ndarray:
        return self.data._array.reshape(self.shape)


class ZeroCopyTensor:
    """A predictor's input or output by name, read and written without PaddleTensors (fluid's
    ``get_input_tensor`` / ``get_output_tensor``)."""

    def __init__(self, predictor: "PaddlePredictor", name: str, is_input: bool) -> None:
        self._predictor, self._name, self._is_input = predictor, name, is_input

    def name(self) -> str:
        return self._name

    def _slot(self) -> Dict:
        slots = self._predictor._inputs if self._is_input else self._predictor._outputs
        return slots.setdefault(self._name, {"array": None, "shape": None, "lod": []})

    def reshape(self, shape) -> None:
        self._slot()["shape"] = [int(d) for d in shape]

    def set_lod(self, lod) -> None:
        self._slot()["lod"] = [list(level) for level in lod]

    def copy_from_cpu(self, data) -> None:
        if not self._is_input:
            raise ValueError(f"ZeroCopyTensor '{self._name}' is an output: copy_to_cpu reads it")
        array = np.asarray(data)
        _paddle_dtype(array)
        slot = self._slot()
        if (
            slot["shape"] is not None
            and list(array.shape) != slot["shape"]
            and array.size == int(np.prod(slot["shape"]))
        ):
            array = array.reshape(slot["shape"])
        slot["array"], slot["shape"] = array.copy(), list(array.shape)

    def copy_to_cpu(self) -> np.ndarray:
        slot = self._slot()
        if slot["array"] is None:
            raise ValueError(f"ZeroCopyTensor '{self._name}' holds no data yet: call zero_copy_run() first")
        return slot["array"].copy()

    def shape(self) -> List[int]:
        slot = self._slot()
        return list(slot["shape"] or [])

    def lod(self) -> List[List[int]]:
        return [list(level) for level in self._slot()["lod"]]


class NativeConfig:
    """fluid's older predictor config: attributes ``model_dir`` or ``prog_file`` / ``param_file``,
    ``use_gpu``, ``device``, ``fraction_of_gpu_memory``, ``specify_input_name``."""

    def __init__(self) -> None:
        self.model_dir = ""
        self.prog_file = ""
        self.param_file = ""
        self.use_gpu = False
        self.device = 0
        self.fraction_of_gpu_memory = -1.0
        self.specify_input_name = False
        self._threads = 1

    def set_cpu_math_library_num_threads(self, n: int) -> None:
        self._threads = int(n)

    def cpu_math_library_num_threads(self) -> int:
        return self._threads


class AnalysisConfig:
    """Where the model is (``AnalysisConfig(model_dir)`` or ``AnalysisConfig(prog_file,
    params_file)``) and how to run it. A config makes one predictor, as in fluid 1.8."""

    Precision = enum.Enum("Precision", "Float32 Int8 Half")
    Float32, Int8, Half = Precision.Float32, Precision.Int8, Precision.Half

    def __init__(self, model_dir_or_prog_file: str = "", params_file: Optional[str] = None) -> None:
        self.set_model(model_dir_or_prog_file, params_file)
        self._use_gpu, self._device_id, self._pool_mb = False, 0, 100
        self._ir_optim, self._feed_fetch_ops, self._specify_input_name = True, True, False
        self._glog_disabled, self._threads = False, 1
        self._switches: Dict[str, object] = {}
        self._used = False

    # where the model is
    def set_model(self, model_dir_or_prog_file: str, params_file: Optional[str] = None) -> None:
        """A model directory, or (with ``params_file``) combined program and parameter files."""
        self._model_dir, self._prog_file, self._params_file = "", "", ""
        if params_file is None:
            self._model_dir = model_dir_or_prog_file
        else:
            self._prog_file, self._params_file = model_dir_or_prog_file, params_file

    def set_prog_file(self, path: str) -> None:
        self._prog_file = path

    def set_params_file(self, path: str) -> None:
        self._params_file = path

    def model_dir(self) -> str:
        return self._model_dir

    def prog_file(self) -> str:
        return self._prog_file

    def params_file(self) -> str:
        return self._params_file

    def model_from_memory(self) -> bool:
        return False

    # the device
    def enable_use_gpu(self, memory_pool_init_size_mb: int, device_id: int = 0) -> None:
        self._use_gpu, self._pool_mb, self._device_id = True, memory_pool_init_size_mb, device_id

    def disable_gpu(self) -> None:
        self._use_gpu = False

    def use_gpu(self) -> bool:
        return self._use_gpu

    def gpu_device_id(self) -> int:
        return self._device_id

    def memory_pool_init_size_mb(self) -> int:
        return self._pool_mb

    def fraction_of_gpu_memory_for_pool(self) -> float:
        return 0.0

    def set_cpu_math_library_num_threads(self, n: int) -> None:
        self._threads = int(n)

    def cpu_math_library_num_threads(self) -> int:
        return self._threads

    # how inputs and outputs are passed
    def switch_use_feed_fetch_ops(self, x: bool = True) -> None:
        self._feed_fetch_ops = bool(x)

    def use_feed_fetch_ops_enabled(self) -> bool:
        return self._feed_fetch_ops

    def switch_specify_input_names(self, x: bool = True) -> None:
        self._specify_input_name = bool(x)

    def specify_input_name(self) -> bool:
        return self._specify_input_name

    # fluid's optimisation passes and engines: recorded, nothing to do here
    def switch_ir_optim(self, x: bool = True) -> None:
        self._ir_optim = bool(x)

    def ir_optim(self) -> bool:
        return self._ir_optim

    def disable_glog_info(self) -> None:
        self._glog_disabled = True

    def glog_info_disabled(self) -> bool:
        return self._glog_disabled

    def _switch(name, default=False):  # noqa: N805  (makes a recorded on/off switch)
        def enable(self, *args, **kwargs):
            self._switches[name] = True

        def enabled(self):
            return bool(self._switches.get(name, default))

        return enable, enabled

    enable_memory_optim, _memory_optim_enabled = _switch("memory_optim")
    enable_mkldnn, mkldnn_enabled = _switch("mkldnn")
    enable_tensorrt_engine, tensorrt_engine_enabled = _switch("tensorrt")
    enable_lite_engine, lite_engine_enabled = _switch("lite")
    enable_profile, _profile_enabled = _switch("profile")
    enable_quantizer, _quantizer_enabled = _switch("quantizer")
    switch_ir_debug, _ir_debug = _switch("ir_debug")
    del _switch

    def set_mkldnn_cache_capacity(self, capacity: int) -> None:
        self._switches["mkldnn_cache_capacity"] = capacity

    def set_mkldnn_op(self, ops) -> None:
        self._switches["mkldnn_op"] = set(ops)

    def set_optim_cache_dir(self, path: str) -> None:
        self._switches["optim_cache_dir"] = path

    def set_trt_dynamic_shape_info(self, *args) -> None:
        self._switches["trt_dynamic_shape"] = args

    def delete_pass(self, name: str) -> None:
        self._switches.setdefault("deleted_passes", []).append(name)

    def to_native_config(self) -> NativeConfig:
        native = NativeConfig()
        native.model_dir, native.prog_file, native.param_file = self._model_dir, self._prog_file, self._params_file
        native.use_gpu, native.device = self._use_gpu, self._device_id
        native.specify_input_name = self._specify_input_name
        return native


class PaddlePredictor:
    """A loaded inference model: ``run(list of PaddleTensor)``, or ``get_input_tensor(name)``,
    ``zero_copy_run()`` and ``get_output_tensor(name)``; ``clone()`` shares the parameters."""

    def __init__(self, files, use_gpu: bool, device_id: int, specify_input_name: bool, _shared=None) -> None:
        from fluidcompat.executor import Executor
        from fluidcompat.executor.scope import Scope, scope_guard
        from fluidcompat.io import load_inference_model
        from fluidcompat.places import CPUPlace, CUDAPlace

        self._files, self._use_gpu, self._device_id = files, use_gpu, device_id
        self._specify_input_name = specify_input_name
        self._executor = Executor(CUDAPlace(device_id) if use_gpu else CPUPlace())
        if _shared is not None:
            self._scope, self._program, self._feed_names, self._fetch_vars = _shared
        else:
            dirname, model_filename, params_filename = files
            self._scope = Scope()
            with scope_guard(self._scope):
                self._program, self._feed_names, self._fetch_vars = load_inference_model(
                    dirname, self._executor, model_filename, params_filename
                )
        self._inputs: Dict[str, Dict] = {}
        self._outputs: Dict[str, Dict] = {}

    def get_input_names(self) -> List[str]:
        return list(self._feed_names)

    def get_output_names(self) -> List[str]:
        return [v.name for v in self._fetch_vars]

    def get_input_tensor_shape(self) -> Dict[str, List[int]]:
        """Each input's declared shape (-1 for a dimension the model leaves open)."""
        block = self._program.global_block()
        return {name: list(block.var(name).shape) for name in self._feed_names}

    def _run(self, inputs: Dict) -> list:
        """(name, array, LoD) of each output for ``inputs`` (name -> (array, LoD))."""
        from fluidcompat.executor.scope import scope_guard

        feed = {name: self._fed(array, lod) for name, (array, lod) in inputs.items()}
        with scope_guard(self._scope):
            values = self._executor.run(self._program, feed=feed, fetch_list=self._fetch_vars, return_numpy=False)
        return [
            (var.name, np.array(value), value.lod() if hasattr(value, "lod") else [])
            for var, value in zip(self._fetch_vars, values)
        ]

    @staticmethod
    def _fed(array: np.ndarray, lod) -> object:
        if not lod:
            return array
        from fluidcompat.executor.scope import LoDTensor
        from fluidcompat.places import CPUPlace

        tensor = LoDTensor()
        tensor.set(array, CPUPlace())
        tensor.set_lod(lod)
        return tensor

    def run(self, inputs) -> List[PaddleTensor]:
        """The outputs for ``inputs``, matched to the model's inputs in order (by their names when
        the config ``switch_specify_input_names``)."""
        inputs = list(inputs)
        if len(inputs) != len(self._feed_names):
            raise ValueError(
                f"PaddlePredictor.run: the model takes {len(self._feed_names)} inputs {self._feed_names}, "
                f"received {len(inputs)} PaddleTensors"
            )
        if self._specify_input_name:
            unknown = [t.name for t in inputs if t.name not in self._feed_names]
            if unknown:
                raise ValueError(
                    f"PaddlePredictor.run: inputs named {unknown} are not the model's inputs {self._feed_names}"
                )
            named = {t.name: t for t in inputs}
        else:
            named = dict(zip(self._feed_names, inputs))
        results = self._run({name: (t.as_ndarray(), t.lod) for name, t in named.items()})
        return [PaddleTensor(array, name=name, lod=lod, copy=False) for name, array, lod in results]

    def get_input_tensor(self, name: str) -> ZeroCopyTensor:
        if name not in self._feed_names:
            raise ValueError(f"get_input_tensor: '{name}' is not an input of the model; its inputs: {self._feed_names}")
        return ZeroCopyTensor(self, name, True)

    def get_output_tensor(self, name: str) -> ZeroCopyTensor:
        if name not in self.get_output_names():
            raise ValueError(
                f"get_output_tensor: '{name}' is not an output of the model; its outputs: {self.get_output_names()}"
            )
        return ZeroCopyTensor(self, name, False)

    def zero_copy_run(self) -> None:
        """Run with the arrays copied into the input tensors; the output tensors then hold the results."""
        missing = [n for n in self._feed_names if self._inputs.get(n, {}).get("array") is None]
        if missing:
            raise ValueError(f"zero_copy_run: no data was copied into the inputs {missing} (copy_from_cpu)")
        results = self._run({n: (self._inputs[n]["array"], self._inputs[n]["lod"]) for n in self._feed_names})
        for name, array, lod in results:
            self._outputs[name] = {"array": array, "shape": list(array.shape), "lod": lod}

    def clone(self) -> "PaddlePredictor":
        shared = (self._scope, self._program, self._feed_names, self._fetch_vars)
        return type(self)(self._files, self._use_gpu, self._device_id, self._specify_input_name, _shared=shared)


class AnalysisPredictor(PaddlePredictor):
    pass


class NativePaddlePredictor(PaddlePredictor):
    pass


def _model_files(model_dir: str, prog_file: str, params_file: str):
    """(dirname, model_filename, params_filename) for load_inference_model."""
    if model_dir:
        return model_dir, None, None
    if not prog_file:
        raise ValueError("create_paddle_predictor: the config names no model (model_dir or prog_file)")
    dirname = os.path.dirname(prog_file) or "."
    params = os.path.relpath(params_file, dirname) if params_file else None
    return dirname, os.path.basename(prog_file), params


def create_paddle_predictor(config) -> PaddlePredictor:
    """A predictor for the model ``config`` names (an ``AnalysisConfig`` or a ``NativeConfig``)."""
    if isinstance(config, AnalysisConfig):
        if config._used:
            raise ValueError("create_paddle_predictor: each AnalysisConfig can only be used for one predictor")
        files = _model_files(config.model_dir(), config.prog_file(), config.params_file())
        predictor = AnalysisPredictor(files, config.use_gpu(), config.gpu_device_id(), config.specify_input_name())
        config._used = True
        return predictor
    if isinstance(config, NativeConfig):
        files = _model_files(config.model_dir, config.prog_file, config.param_file)
        return NativePaddlePredictor(files, config.use_gpu, config.device, config.specify_input_name)
    raise TypeError(f"create_paddle_predictor takes an AnalysisConfig or a NativeConfig. Received: {config!r}")
