"""``fluid.evaluator``: fluid 1.x's in-program evaluators (deprecated in fluid 1.8 for
``fluid.metrics``, still used by older scripts): ``ChunkEvaluator``, ``EditDistance`` and
``DetectionMAP``. Each adds ops to the program that accumulate into persistable state variables;
``reset(exe)`` zeroes them (call it before the first batch, as in fluid), ``eval(exe)`` reads the
metric of everything since."""

from __future__ import annotations

import warnings

import numpy as np

from fluidcompat import framework, unique_name
from fluidcompat.layer_helper import LayerHelper
from fluidcompat.metrics import DetectionMAP as _MetricsDetectionMAP
from fluidcompat.metrics import state_in, zero_states

__all__ = ["ChunkEvaluator", "EditDistance", "DetectionMAP"]


class Evaluator:
    """States (persistable variables) that ops of the main program accumulate into."""

    def __init__(self, name, **kwargs) -> None:
        warnings.warn(
            f"The {type(self).__name__} is deprecated, because maintain a modified program inside evaluator cause "
            f"bug easily, please use fluid.metrics.{type(self).__name__} instead.",
            Warning,
            stacklevel=3,
        )
        self.states = []
        self.metrics = []
        self.helper = LayerHelper(name, **kwargs)
        if self.helper.main_program.current_block().idx != 0:
            raise ValueError("You can only invoke Evaluator in root block")

    def reset(self, executor, reset_program=None) -> None:
        """Zero the states (runs ``reset_program``, a new program when None)."""
        zero_states(executor, reset_program, self.states)

    def eval(self, executor, eval_program=None):
        raise NotImplementedError()

    def _create_state(self, suffix, dtype, shape):
        state = self.helper.create_variable(
            name="_".join([unique_name.generate(self.helper.name), suffix]), persistable=True, dtype=dtype, shape=shape
        )
        self.states.append(state)
        return state

    def _accumulate(self, state, value) -> None:
        from fluidcompat import layers

        layers.sums(input=[state, value], out=state)


class ChunkEvaluator(Evaluator):
    """Precision, recall and F1 of the chunks ``input`` finds against ``label`` (``chunk_eval``),
    accumulated over batches."""

    def __init__(self, input, label, chunk_scheme, num_chunk_types, excluded_chunk_types=None) -> None:
        from fluidcompat import layers

        super().__init__("chunk_eval")
        self.num_infer_chunks = self._create_state(dtype="int64", shape=[1], suffix="num_infer_chunks")
        self.num_label_chunks = self._create_state(dtype="int64", shape=[1], suffix="num_label_chunks")
        self.num_correct_chunks = self._create_state(dtype="int64", shape=[1], suffix="num_correct_chunks")
        precision, recall, f1, infer, labelled, correct = layers.chunk_eval(
            input=input,
            label=label,
            chunk_scheme=chunk_scheme,
            num_chunk_types=num_chunk_types,
            excluded_chunk_types=excluded_chunk_types,
        )
        for state, value in zip(self.states, (infer, labelled, correct)):
            self._accumulate(state, value)
        self.metrics.extend([precision, recall, f1])

    def eval(self, executor, eval_program=None):
        """(precision, recall, F1) since the last reset, each a float32 array of one value."""
        eval_program = eval_program if eval_program is not None else framework.Program()
        block = eval_program.current_block()
        infer, labelled, correct = (
            int(np.array(v).reshape(-1)[0])
            for v in executor.run(eval_program, fetch_list=[state_in(block, s) for s in self.states])
        )
        precision = correct / infer if infer else 0.0
        recall = correct / labelled if labelled else 0.0
        f1 = 2 * precision * recall / (precision + recall) if correct else 0.0
        return tuple(np.array([v], dtype="float32") for v in (precision, recall, f1))


class EditDistance(Evaluator):
    """The mean edit distance of ``input``'s sequences to ``label``'s and the share of sequences
    not matched exactly, accumulated over batches."""

    def __init__(self, input, label, ignored_tokens=None, **kwargs) -> None:
        from fluidcompat import layers

        super().__init__("edit_distance", **kwargs)
        self.total_distance = self._create_state(dtype="float32", shape=[1], suffix="total_distance")
        self.seq_num = self._create_state(dtype="int64", shape=[1], suffix="seq_num")
        self.instance_error = self._create_state(dtype="int64", shape=[1], suffix="instance_error")
        distances, seq_num = layers.edit_distance(input=input, label=label, ignored_tokens=ignored_tokens)
        zero = layers.fill_constant(shape=[1], value=0.0, dtype="float32")
        right = layers.reduce_sum(layers.cast(x=layers.equal(distances, zero), dtype="int64"))
        errors = layers.elementwise_sub(x=seq_num, y=right)
        total = layers.reduce_sum(distances)
        for state, value in zip(self.states, (total, seq_num, errors)):
            self._accumulate(state, value)
        self.metrics.extend([total, errors])

    def eval(self, executor, eval_program=None):
        """(mean distance, share of sequences with errors) since the last reset."""
        from fluidcompat import layers

        eval_program = eval_program if eval_program is not None else framework.Program()
        block = eval_program.current_block()
        with framework.program_guard(main_program=eval_program):
            total, count, errors = (state_in(block, s) for s in self.states)
            count = layers.cast(x=count, dtype="float32")
            errors = layers.cast(x=errors, dtype="float32")
            result = executor.run(
                eval_program,
                fetch_list=[layers.elementwise_div(x=total, y=count), layers.elementwise_div(x=errors, y=count)],
            )
        return np.array(result[0]), np.array(result[1])


class DetectionMAP(_MetricsDetectionMAP):
    """``fluid.metrics.DetectionMAP`` under its older name (with fluid 1.8's deprecation warning)."""

    def __init__(self, *args, **kwargs) -> None:
        warnings.warn(
            "The DetectionMAP is deprecated, because maintain a modified program inside evaluator cause bug "
            "easily, please use fluid.metrics.DetectionMAP instead.",
            Warning,
            stacklevel=2,
        )
        super().__init__(*args, **kwargs)
