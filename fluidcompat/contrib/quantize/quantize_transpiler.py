"""``QuantizeTranspiler``: fluid 1.8's quantization-aware training by rewriting a program.

``training_transpile`` puts a fake quantize op and a fake dequantize op in front of every input of
the ``conv2d``, ``depthwise_conv2d`` and ``mul`` ops (parameters with ``weight_bits`` and the weight
type, activations with ``activation_bits`` and the activation type) and points those ops and their
grad ops at the dequantized values: training sees the quantization error, gradients pass straight
through. ``freeze_program`` turns a transpiled test program into one that quantizes the weights in
the scope once and dequantizes each quantized op's output; ``convert_to_int8`` stores those weights
as int8 parameters (``NAME.int8``). The programs are fluid 1.8.5's (tests/golden/quantize_transpiler).
Torch-free.
"""

from __future__ import annotations

from typing import Dict

import numpy as np

from fluidcompat import framework, unique_name
from fluidcompat.dtypes import VarType
from fluidcompat.framework import Variable, default_main_program, default_startup_program, program_guard

__all__ = ["QuantizeTranspiler"]

_QUANTIZABLE_OP_TYPES = ("conv2d", "depthwise_conv2d", "mul")
_QUANT_TYPES = ("abs_max", "range_abs_max", "moving_average_abs_max")
_FAKE_QUANT_OPS = ("fake_quantize_abs_max", "fake_quantize_range_abs_max", "fake_quantize_moving_average_abs_max")
_SUFFIXES = (".quantized.dequantized", ".quantized", ".dequantized", ".scale")


def _original_var_name(name: str) -> str:
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _quant(x, scale, num_bits):
    return np.round(x / scale * ((1 << (num_bits - 1)) - 1))


class QuantizeTranspiler:
    """Quantization-aware training: ``weight_bits`` / ``activation_bits`` (8), each quantize type
    one of 'abs_max' (the batch's largest magnitude), 'range_abs_max' (the largest over the last
    ``window_size`` batches) or 'moving_average_abs_max' (a moving average at ``moving_rate``)."""

    def __init__(
        self, weight_bits=8, activation_bits=8, activation_quantize_type="abs_max", weight_quantize_type="abs_max",
        window_size=10000, moving_rate=0.9,
    ):  # fmt: skip
        # fluid 1.8.5's words (with its space before the activation's colon)
        kinds = (
            ("weight_quantize_type:", weight_quantize_type),
            ("activation_quantize_type :", activation_quantize_type),
        )
        for what, kind in kinds:
            if kind not in _QUANT_TYPES:
                raise ValueError(
                    f"Unknown {what} '{kind}'. It can only be 'abs_max' or 'range_abs_max' or 'moving_average_abs_max'."
                )
        self.weight_bits = weight_bits
        self.activation_bits = activation_bits
        self.weight_quantize_type = weight_quantize_type
        self.activation_quantize_type = activation_quantize_type
        self.window_size = window_size
        self.moving_rate = moving_rate
        self.is_test = None
        self.global_step = None

    # -- training ---------------------------------------------------------------------------------------
    def training_transpile(self, program=None, startup_program=None):
        """Rewrite ``program`` (default: the default main program), built with its backward pass,
        for quantization-aware training; new state goes into ``startup_program``."""
        self.is_test = False
        program = default_main_program() if program is None else program
        startup_program = default_startup_program() if startup_program is None else startup_program
        params = {p.name for p in program.global_block().iter_parameters()}
        grad_types = {t + "_grad" for t in _QUANTIZABLE_OP_TYPES}
        with framework.program_transaction(program, startup_program, deep=True):
            with program_guard(program, startup_program):
                if "range_abs_max" in (self.weight_quantize_type, self.activation_quantize_type):
                    from fluidcompat.layer_helper import fluid_layers

                    self.global_step = fluid_layers.autoincreased_step_counter()
                for block in program.blocks:
                    dequantized: Dict[str, Variable] = {}
                    for op in list(block.ops):
                        if op.type in _QUANTIZABLE_OP_TYPES:
                            self._quantize_inputs(block, op, params, dequantized)
                        elif op.type in grad_types:
                            renamed = [n for n in op.input_arg_names if n in dequantized]
                            if not renamed:
                                raise ValueError(f"There is no dequanted inputs for op {op.type}.")
                            for name in dict.fromkeys(renamed):
                                op._rename_input(name, dequantized[name].name)

    def _quantize_inputs(self, block, op, params, dequantized) -> None:
        """Each input (in fluid's order: by slot name) quantized and dequantized right before ``op``,
        each pair in front of the previous one, as fluid 1.8.5 placed them."""
        at = block.ops.index(op)
        names = [n for slot in sorted(op.inputs) for n in op.inputs[slot]]
        for name in dict.fromkeys(names):
            if name not in dequantized:
                var = block._var_recursive(name)
                is_weight = name in params
                bits = self.weight_bits if is_weight else self.activation_bits
                kind = self.weight_quantize_type if is_weight else self.activation_quantize_type
                quantized, scale = self._insert_quant_op(block, at, var, bits, kind)
                dequantized[name] = self._insert_dequant_op(block, at + 1, quantized, scale, bits)
            op._rename_input(name, dequantized[name].name)

    def _like(self, block, var, name):
        return block.create_var(name=name, type=var.type, shape=var.shape, dtype=var.dtype)

    def _state(self, name, shape, dtype, value, parameter=False):
        """A persistable variable of the main program set to ``value`` by the startup program (a
        non-trainable parameter with ``parameter``)."""
        from fluidcompat.initializer import ConstantInitializer
        from fluidcompat.layer_helper import LayerHelper, fluid_layers
        from fluidcompat.param_attr import ParamAttr

        if not parameter:
            return fluid_layers.create_global_var(shape, value, dtype, persistable=True, name=name)
        attr = ParamAttr(name=name, initializer=ConstantInitializer(value), trainable=False)
        var = LayerHelper(type(self).__name__).create_parameter(attr=attr, shape=shape, dtype=dtype)
        var.stop_gradient = True
        return var

    def _insert_quant_op(self, block, at, var, bits, kind):
        quantized = self._like(block, var, var.name + ".quantized")
        if kind == "abs_max":
            scale = self._like(block, var, var.name + ".scale")
            block._insert_op(
                at, type="fake_quantize_abs_max", inputs={"X": [var]},
                outputs={"Out": [quantized], "OutScale": [scale]}, attrs={"bit_length": bits},
            )  # fmt: skip
            return quantized, scale
        scale = self._state(var.name + ".scale", [1], var.dtype, 0.001, parameter=True)
        inputs, outputs = {"X": [var], "InScale": [scale]}, {"Out": [quantized], "OutScale": [scale]}
        if kind == "range_abs_max":
            if not self.is_test:
                scales = self._state(unique_name.generate("scales"), [self.window_size], var.dtype, 0.0)
                inputs["Iter"] = [self.global_step]
                outputs["OutScales"] = [scales]
            attrs = {"window_size": self.window_size, "bit_length": bits, "is_test": self.is_test}
            block._insert_op(at, type="fake_quantize_range_abs_max", inputs=inputs, outputs=outputs, attrs=attrs)
            return quantized, scale
        state = self._state(unique_name.generate("state"), [1], var.dtype, 1.0)
        accum = self._state(unique_name.generate("accum"), [1], var.dtype, 1.0)
        if not self.is_test:
            inputs.update(InState=[state], InAccum=[accum])
            outputs.update(OutState=[state], OutAccum=[accum])
        attrs = {"bit_length": bits, "moving_rate": self.moving_rate, "is_test": self.is_test}
        block._insert_op(at, type="fake_quantize_moving_average_abs_max", inputs=inputs, outputs=outputs, attrs=attrs)
        return quantized, scale

    def _insert_dequant_op(self, block, at, var, scale, bits):
        dequantized = self._like(block, var, var.name + ".dequantized")
        block._insert_op(
            at, type="fake_dequantize_max_abs", inputs={"X": [var], "Scale": [scale]},
            outputs={"Out": [dequantized]}, attrs={"max_range": float((1 << (bits - 1)) - 1)},
        )  # fmt: skip
        return dequantized

    # -- inference ----------------------------------------------------------------------------------------
    def freeze_program(self, program, place, scope=None):
        """Make a transpiled test program (``clone(for_test=True)``) an inference program: each
        weight is quantized in ``scope`` once (its values become the integers) and its fake ops go;
        activations keep their fake quantize op, and a quantized op's output is dequantized by the
        product of both scales. The weights' range_abs_max scale is the one training kept (fluid
        1.8.5 failed there)."""
        from fluidcompat.executor.scope import global_scope

        self.is_test = True
        scope = global_scope() if scope is None else scope
        program = default_main_program() if program is None else program
        persistable = {v.name for v in program.list_vars() if v.persistable}

        def load(name):
            found = scope.find_var(name)
            if found is None:
                raise ValueError(
                    f"freeze_program: the scope holds no value for '{name}'; run the startup program first"
                )
            return np.array(found.get_tensor())

        with framework.program_transaction(program, deep=True):
            for block in program.blocks:
                input_of: Dict[str, str] = {}  # a removed fake op's output -> the original input
                output_of: Dict[str, str] = {}  # a quantized op's output -> its dequantized name
                scales: Dict[str, object] = {}
                for op in list(block.ops):
                    for name in op.input_arg_names:
                        if name in output_of:
                            op._rename_input(name, output_of[name])
                    if op.type in _FAKE_QUANT_OPS:
                        source = op.input("X")[0]
                        if source in persistable:
                            if self.weight_quantize_type == "abs_max":
                                scale = float(np.max(np.abs(load(source))))
                            else:
                                scale = float(load(op.output("OutScale")[0]).reshape(-1)[0])
                            scales[source] = scale
                            self._drop(block, op, input_of)
                            weights = load(source)
                            scope.find_var(source).get_tensor().set(
                                _quant(weights, scale, self.weight_bits).astype(weights.dtype), place
                            )
                        else:
                            scales[source] = block._var_recursive(op.output("OutScale")[0])
                    elif op.type == "fake_dequantize_max_abs":
                        self._drop(block, op, input_of)
                    elif op.type in _QUANTIZABLE_OP_TYPES:
                        self._dequantize_output(block, op, input_of, output_of, scales, persistable)
            self._remove_unused_vars(program)

    @staticmethod
    def _drop(block, op, input_of) -> None:
        out, source = op.output("Out")[0], op.input("X")[0]
        input_of[out] = input_of.get(source, source)
        block._remove_op(block.ops.index(op))

    def _dequantize_output(self, block, op, input_of, output_of, scales, persistable) -> None:
        max_range, scale_var = None, None
        for name in list(op.input_arg_names):
            if name in input_of:
                op._rename_input(name, input_of[name])
            original = _original_var_name(name)
            if original not in scales:
                raise ValueError(f"freeze_program: op {op.type} reads '{name}', which training_transpile left alone")
            if original in persistable:
                weight_range = (1 << (self.weight_bits - 1)) - 1
                act_range = (1 << (self.activation_bits - 1)) - 1
                max_range = weight_range * act_range / scales[original]
            else:
                scale_var = scales[original]
        if len(op.output_arg_names) != 1:
            raise ValueError(f"Only support one output, but op {op.type} has more than one output.")
        if max_range is None or scale_var is None:
            raise ValueError(f"freeze_program: op {op.type} needs one quantized weight and one quantized activation")
        out = block._var_recursive(op.output_arg_names[0])
        dequantized = self._like(block, out, out.name + ".dequantized")
        block._insert_op(
            block.ops.index(op) + 1, type="fake_dequantize_max_abs", inputs={"X": [out], "Scale": [scale_var]},
            outputs={"Out": [dequantized]}, attrs={"max_range": float(max_range)},
        )  # fmt: skip
        output_of[out.name] = dequantized.name

    def convert_to_int8(self, program, place, scope=None):
        """The frozen program's quantized weights as int8 parameters ``NAME.int8`` (their values
        from ``scope``), read by the quantized ops instead."""
        from fluidcompat.executor.scope import global_scope

        scope = global_scope() if scope is None else scope
        program = default_main_program() if program is None else program
        top = program.global_block()
        made: Dict[str, str] = {}
        with framework.program_transaction(program, deep=True):
            for block in program.blocks:
                for op in list(block.ops):
                    if op.type not in _QUANTIZABLE_OP_TYPES:
                        continue
                    for name in list(dict.fromkeys(op.input_arg_names)):
                        var = block._var_recursive(name)
                        if not var.persistable:
                            continue
                        if name not in made:
                            found = scope.find_var(name)
                            if found is None:
                                raise ValueError(f"convert_to_int8: the scope holds no value for '{name}'")
                            new = top.create_parameter(name=name + ".int8", shape=var.shape, dtype=VarType.INT8)
                            scope.var(new.name).get_tensor().set(np.array(found.get_tensor()).astype(np.int8), place)
                            made[name] = new.name
                        op._rename_input(name, made[name])
            self._remove_unused_vars(program)

    @staticmethod
    def _remove_unused_vars(program) -> None:
        for block in program.blocks:
            used = {n for op in block.ops for n in op.input_arg_names + op.output_arg_names}
            for name in [n for n in block.vars if n not in used]:
                block._remove_var(name)
