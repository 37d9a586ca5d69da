"""``fluid.dygraph.jit``: a dygraph Layer traced into a static-graph program (``TracedLayer``).

# NOTE: [Program tracing]
# While ``TracedLayer.trace`` runs the layer, the Tracer hands every op it runs to a
# ``_ProgramRecorder`` along with the VarBases of its slots. Afterwards the recorder writes the ops
# into a fresh Program, naming the variables as fluid 1.8 does: the inputs ``feed_0, feed_1, ...``,
# the outputs ``fetch_0, ...``, parameters and other persistables by their own names, and every
# other variable ``t_0, t_1, ...`` in the order the ops produced them (an op's outputs by slot
# name). Shapes are the traced ones, batch size included. A variable that no op produced and that
# is neither an input nor persistable (a VarBase made from data inside ``forward``) would be
# missing when the program runs: tracing stops with an error naming it.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from typing import Dict, List

import numpy as np

from fluidcompat import framework
from fluidcompat.dygraph import base
from fluidcompat.dygraph.layers import Layer
from fluidcompat.dygraph.varbase import VarBase

__all__ = ["TracedLayer", "declarative", "dygraph_to_static_func"]


def _extract_vars(inputs, found: list, kind=VarBase) -> list:
    """The ``kind`` values in ``inputs``, nested lists and tuples walked in order, appended to ``found``."""
    if isinstance(inputs, kind):
        found.append(inputs)
    elif isinstance(inputs, (list, tuple)):
        for v in inputs:
            _extract_vars(v, found, kind)
    return found


@contextlib.contextmanager
def _recording(tracer):
    """``tracer`` handing the ops it runs to a new _ProgramRecorder inside the block."""
    recorder = tracer._recorder = _ProgramRecorder()
    try:
        yield recorder
    finally:
        tracer._recorder = None


class _ProgramRecorder:
    """The ops a Tracer runs, with their VarBases, for ``_build`` (NOTE: [Program tracing])."""

    def __init__(self) -> None:
        self.ops: list = []
        self._aliases: Dict[int, tuple] = {}  # id(detached copy) -> (copy, its source)
        self.reads: List[str] = []  # values Python read while tracing ("'name' (how)")

    def note_read(self, v: VarBase, how: str) -> None:
        if len(self.reads) < 3:
            self.reads.append(f"'{v.name}' ({how})")

    def alias(self, copy: VarBase, source: VarBase) -> None:
        self._aliases[id(copy)] = (copy, self._resolve(source))

    def _resolve(self, v: VarBase) -> VarBase:
        found = self._aliases.get(id(v))
        return v if found is None else found[1]

    def record(self, type: str, inputs, outputs, attrs) -> None:
        def slots(groups):  # by slot name, as fluid writes them
            found = {}
            for slot in sorted(groups or {}):
                vs = [self._resolve(v) for v in base._as_list(groups[slot]) if isinstance(v, VarBase)]
                if vs:
                    found[slot] = vs
            return found

        self.ops.append((type, slots(inputs), slots(outputs), dict(attrs or {})))

    def freeze(self, feeds: List[VarBase], fetches: List[VarBase], what: str) -> "_Trace":
        """The recorded ops with their variables named (NOTE: [Program tracing]); ``what`` names the
        traced thing in errors. Only the persistable VarBases stay referenced."""
        names: Dict[int, str] = {}
        specs: Dict[str, tuple] = {}  # name -> (shape, dtype, persistable)
        persistables: List[VarBase] = []

        def name(v: VarBase, as_name: str) -> None:
            names[id(v)] = as_name
            # an output the op left unset (dropout's Mask in eval mode): shape [0], as in fluid
            specs[as_name] = ([0] if v._value is None else list(v._value.shape), v.dtype, bool(v.persistable))
            if v.persistable:
                persistables.append(v)

        for i, v in enumerate(feeds):
            if id(v) not in names:
                name(v, f"feed_{i}")
        for i, v in enumerate(fetches):
            if id(v) not in names:
                name(v, f"fetch_{i}")
        produced = {id(v) for v in feeds}
        count = 0
        ops = []
        for type, ins, outs, attrs in self.ops:
            for slot, vs in ins.items():
                for v in vs:
                    if id(v) in names:
                        continue
                    if not v.persistable:
                        raise ValueError(
                            f"{what}: op '{type}' reads variable '{v.name}' (slot {slot}), which no traced op "
                            "produced and which is neither an input nor a parameter; the static program would "
                            "run without its value. Pass it in as an input, or make it with an op "
                            "(fluid.layers.assign, fill_constant) inside the traced code."
                        )
                    name(v, v.name)
            for slot in outs:
                for v in outs[slot]:
                    produced.add(id(v))
                    if id(v) not in names:
                        if v.persistable:
                            name(v, v.name)
                        else:
                            name(v, f"t_{count}")
                            count += 1
            ops.append(
                (
                    type,
                    {s: [names[id(v)] for v in vs] for s, vs in ins.items()},
                    {s: [names[id(v)] for v in vs] for s, vs in outs.items()},
                    attrs,
                )
            )
        for i, v in enumerate(fetches):
            if id(v) not in produced:
                raise ValueError(
                    f"{what}: output {i} ('{v.name}') was not made by any traced op, so the static program "
                    "cannot compute it; return values computed from the inputs by fluid ops."
                )
        return _Trace(
            specs, ops, [names[id(v)] for v in feeds], [names[id(v)] for v in fetches], persistables, self.reads
        )


class _Trace:
    """One traced call: its ops over named variables, ready to become a Program."""

    def __init__(self, specs, ops, feed_names, fetch_names, params, reads) -> None:
        self.specs, self.ops = specs, ops
        self.feed_names, self.fetch_names = feed_names, fetch_names
        self.params, self.reads = params, list(reads)

    def program(self):
        program = framework.Program()
        block = program.global_block()
        with base._tracer_guard(None), framework.program_guard(program, framework.Program()):
            for n, (shape, dtype, persistable) in self.specs.items():
                block.create_var(name=n, shape=shape, dtype=dtype, persistable=persistable, stop_gradient=False)
            for type, ins, outs, attrs in self.ops:
                block.append_op(
                    type=type,
                    inputs={s: [block.var(n) for n in ns] for s, ns in ins.items()},
                    outputs={s: [block.var(n) for n in ns] for s, ns in outs.items()},
                    attrs=attrs,
                )
        return program


def _share_parameters(scope, params) -> None:
    # the layer's current values: a dygraph optimizer step may have replaced a parameter's tensor
    for p in params:
        scope.var(p.name).tensor._t = p._value.detach()


def _pick(names, indices, what: str, api: str):
    if indices is None:
        return list(names)
    for i in indices:
        if not isinstance(i, int) or not -len(names) <= i < len(names):
            raise IndexError(
                f"{api}: {what} index {i!r} is out of range; the traced program has {len(names)} {what} "
                f"variables ({', '.join(names)})"
            )
    return [names[i] for i in indices]


def _save_traced(program, params, feed_names, fetch_names, dirname, feed, fetch, place, api: str) -> None:
    """``fluid.io.save_inference_model`` of a traced program: ``feed``/``fetch`` pick inputs and
    outputs by index (all when None); parameters at their current values."""
    from fluidcompat.executor.executor import Executor
    from fluidcompat.executor.scope import Scope, scope_guard
    from fluidcompat.io import save_inference_model

    feed_names = _pick(feed_names, feed, "feed", api)
    fetch_names = _pick(fetch_names, fetch, "fetch", api)
    scope = Scope()
    with base._tracer_guard(None), scope_guard(scope):
        _share_parameters(scope, params)
        block = program.global_block()
        save_inference_model(
            dirname=dirname,
            feeded_var_names=feed_names,
            target_vars=[block.var(n) for n in fetch_names],
            executor=Executor(place),
            main_program=program.clone(),
        )


class TracedLayer:
    """A dygraph Layer's forward as a static-graph program, run with an Executor on the layer's
    parameters; made by ``TracedLayer.trace(layer, inputs)`` only.

    The program is what one call did: shapes, the branches Python took and the train/eval mode of
    that call are fixed in it.
    """

    def __init__(self, program, parameters, feed_names, fetch_names) -> None:
        from fluidcompat.executor.executor import Executor
        from fluidcompat.executor.scope import Scope

        self._program = program
        self._params = list(parameters)
        self._feed_names = list(feed_names)
        self._fetch_names = list(fetch_names)
        tracer = base.current_tracer()
        self._place = tracer.place if tracer is not None else base._default_place()
        self._scope = Scope()
        self._exe = Executor(self._place)
        self._compiled_program = None
        self._build_strategy = None
        self._exec_strategy = None

    @property
    def program(self):
        return self._program

    def _switch(self, is_test: bool = True) -> None:
        for block in self._program.blocks:
            for op in block.ops:
                if op.has_attr("is_test"):
                    op._set_attr("is_test", is_test)

    @staticmethod
    def trace(layer, inputs):
        """Run ``layer(*inputs)`` in dygraph mode and trace it: ``(outputs, TracedLayer)``."""
        tracer = base.current_tracer()
        if tracer is None:
            raise AssertionError(
                "We Only support trace in imperative mode, please use fluid.dygraph.guard() as context to run it "
                "in imperative Mode"
            )
        if not isinstance(layer, Layer):
            raise TypeError(f"TracedLayer.trace: layer must be a fluid.dygraph.Layer. Received: {type(layer).__name__}")
        if not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        if tracer._recorder is not None:
            raise RuntimeError("TracedLayer.trace: a trace is already running (trace called inside forward)")
        with _recording(tracer) as recorder:
            original = layer(*inputs)
        if recorder.reads:
            warnings.warn(
                f"TracedLayer.trace: forward read the value of {', '.join(recorder.reads)}; the traced program "
                "keeps whatever Python decided from it (a branch taken, a loop count, a size) and will not decide "
                "again for other inputs",
                stacklevel=2,
            )
        outputs = list(original) if isinstance(original, (list, tuple)) else [original]
        for i, v in enumerate(outputs):
            if not isinstance(v, VarBase):
                raise TypeError(
                    f"TracedLayer.trace: output {i} of the layer is a {type(v).__name__}; each output must be a "
                    "Variable made by the layer's ops"
                )
        trace = recorder.freeze(_extract_vars(inputs, []), [recorder._resolve(v) for v in outputs], "TracedLayer.trace")
        return original, TracedLayer(trace.program(), trace.params, trace.feed_names, trace.fetch_names)

    def set_strategy(self, build_strategy=None, exec_strategy=None) -> None:
        """The BuildStrategy and ExecutionStrategy of the CompiledProgram the calls run."""
        assert self._compiled_program is None, "Cannot set strategy after run"
        self._build_strategy = build_strategy
        self._exec_strategy = exec_strategy

    def _compile(self) -> None:
        from fluidcompat.executor.executor import CompiledProgram

        self._compiled_program = CompiledProgram(self._program).with_data_parallel(
            build_strategy=self._build_strategy, exec_strategy=self._exec_strategy, places=self._place
        )

    def _build_feed(self, inputs) -> dict:
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(f"Inputs should be a list or tuple of variables. Received: {type(inputs).__name__}")
        if len(inputs) != len(self._feed_names):
            raise ValueError(
                f"TracedLayer: the traced program takes {len(self._feed_names)} inputs "
                f"({', '.join(self._feed_names)}); received {len(inputs)}"
            )
        return {name: x.numpy() if isinstance(x, VarBase) else x for x, name in zip(inputs, self._feed_names)}

    def __call__(self, inputs):
        """Run the traced program on ``inputs`` (VarBases, or numpy arrays): a list of numpy arrays."""
        from fluidcompat.executor.scope import scope_guard

        feed = self._build_feed(inputs)
        with base._tracer_guard(None), scope_guard(self._scope):
            if self._compiled_program is None:
                self._compile()
            _share_parameters(self._scope, self._params)
            return self._exe.run(self._compiled_program, feed=feed, fetch_list=self._fetch_names)

    def save_inference_model(self, dirname, feed=None, fetch=None) -> None:
        """``fluid.io.save_inference_model`` of the traced program: ``feed``/``fetch`` pick inputs and
        outputs by index (all when None)."""
        _save_traced(
            self._program,
            self._params,
            self._feed_names,
            self._fetch_names,
            dirname,
            feed,
            fetch,
            self._place,
            "TracedLayer.save_inference_model",
        )


# -- declarative functions ------------------------------------------------------------------------
# NOTE: [Declarative]
# fluid 1.8 translated a ``@declarative`` function's Python (its ``if``/``while`` on Variables) into a
# static program and ran that. In dygraph mode fluidcompat runs the function as written, op by op,
# which gives the values and gradients the translated program gives, whatever the control flow; each
# call is traced (NOTE: [Program tracing]) so that ``ProgramTranslator.save_inference_model`` can save
# it, and refuses where the call's Python read a value (its branch would be fixed in the program).
# Built in static-graph mode (``get_func``, ``get_program``, ``dygraph_to_static_func``) the function
# runs translated (dygraph_to_static/translator.py, runtime.py): an ``if`` / ``while`` / conditional
# expression / ``for ... in range(...)`` on a Variable builds cond / while_loop, ``x.numpy()`` of a
# Variable is ``x``, a list appended to under a Variable condition is a tensor array, dygraph layers
# make static parameters and learning-rate schedules fluid's static ones; a Variable condition it
# leaves alone is an error naming it. fluid 1.8's own analysis modules of that package (utils,
# static_analysis, ...) are there under their fluid names for the code that imports them.


def _original(func):
    while hasattr(func, "__fluid_declarative__"):
        func = func.__fluid_declarative__
    return func


def _run_dygraph(func, args, kwargs, translator: "ProgramTranslator"):
    """``func`` called in dygraph mode, its numpy arguments as VarBases (fluid fed them), traced."""
    from fluidcompat.dygraph.base import to_variable

    args = [to_variable(a) if isinstance(a, np.ndarray) else a for a in args]
    kwargs = {k: to_variable(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    tracer = base.current_tracer()
    if tracer._recorder is not None:  # inside another trace: that one records these ops
        return func(*args, **kwargs)
    with _recording(tracer) as recorder:
        result = func(*args, **kwargs)
    if isinstance(result, tuple):
        result = list(result)  # fluid's translated program returned its outputs as a list
    feeds = _extract_vars([a for a in args if not isinstance(a, Layer)] + list(kwargs.values()), [])
    outputs = [recorder._resolve(v) for v in _extract_vars(result, [])]
    name = getattr(func, "__qualname__", repr(func))
    try:
        translator._last = (name, recorder.freeze(feeds, outputs, f"declarative function '{name}'"), tracer.place)
    except ValueError as e:
        translator._last = (name, e, tracer.place)
    return result


in_declarative_build = base.in_declarative_build


def _run_static(func, args, kwargs):
    """``func`` building its ops into the current programs; a call that raises leaves them as they were."""
    base._static_depth += 1
    try:
        from fluidcompat.dygraph.dygraph_to_static import convert

        with framework.program_transaction():
            return convert(func)(*args, **kwargs)
    finally:
        base._static_depth -= 1


class ProgramTranslator:
    """fluid 1.8's switch and tools for declarative functions (NOTE: [Declarative]); one instance."""

    _instance = None

    def __new__(cls, *args, **kwargs):
        if cls._instance is None:
            cls._instance = object.__new__(cls)
            cls._instance._initialized = False
        return cls._instance

    def __init__(self) -> None:
        if self._initialized:
            return
        self._initialized = True
        self.enable_declarative = True
        self._last = None  # (function name, its _Trace or the ValueError tracing it raised, place)

    @classmethod
    def get_instance(cls) -> "ProgramTranslator":
        return cls()

    @classmethod
    def reset(cls) -> None:
        if cls._instance is not None:
            cls._instance._initialized = False
            cls._instance.__init__()

    def enable(self, enable_declarative) -> None:
        """Whether ``@declarative`` functions are traced (True) or plainly called (False)."""
        if not isinstance(enable_declarative, bool):
            raise TypeError(
                "The type of 'enable_declarative' in ProgramTranslator.enable must be <class 'bool'>, but "
                f"received {type(enable_declarative)}. "
            )
        self.enable_declarative = enable_declarative

    def get_output(self, dygraph_func, *args, **kwargs):
        """``dygraph_func(*args, **kwargs)``: VarBases in dygraph mode, ops built in static mode."""
        if not callable(dygraph_func):
            raise TypeError("Input dygraph_func is not a callable in ProgramTranslator.get_output")
        func = _original(dygraph_func)
        if not self.enable_declarative:
            return func(*args, **kwargs)
        if base.current_tracer() is not None:
            return _run_dygraph(func, args, kwargs, self)
        return _run_static(func, args, kwargs)

    def get_func(self, dygraph_func):
        """A function that builds ``dygraph_func``'s ops into the current static program."""
        if not callable(dygraph_func):
            raise TypeError("Input dygraph_func is not a callable in ProgramTranslator.get_func")
        func = _original(dygraph_func)
        if not self.enable_declarative:
            return func

        @functools.wraps(func)
        def static_func(*args, **kwargs):
            return _run_static(func, args, kwargs)

        return static_func

    def get_program(self, dygraph_func, *args, **kwargs):
        """``(main_program, startup_program, inputs, outputs)``: ``dygraph_func`` built into new
        programs, its numpy and VarBase arguments as ``fluid.data`` inputs ``feed_0, feed_1, ...``."""
        from fluidcompat.layers.io import fluid_data as data

        if not callable(dygraph_func):
            raise TypeError("Input dygraph_func is not a callable in ProgramTranslator.get_program")
        func = _original(dygraph_func)
        main, startup = framework.Program(), framework.Program()
        inputs = []

        def as_input(a):
            if isinstance(a, (np.ndarray, VarBase)):
                value = a if isinstance(a, np.ndarray) else a.numpy()
                v = data(f"feed_{len(inputs)}", list(value.shape), str(value.dtype))
                inputs.append(v)
                return v
            return a

        with base._tracer_guard(None), framework.program_guard(main, startup):
            args = [as_input(a) for a in args]
            kwargs = {k: as_input(v) for k, v in kwargs.items()}
            result = _run_static(func, args, kwargs)
        return main, startup, inputs, _extract_vars(result, [], framework.Variable)

    def get_code(self, dygraph_func) -> str:
        """The code a declarative function runs when built into a static program: its source with
        each ``if`` / ``while`` translated (as written where nothing is translated)."""
        from fluidcompat.dygraph.dygraph_to_static import converted_source

        if not callable(dygraph_func):
            raise TypeError("Input dygraph_func is not a callable in ProgramTranslator.get_code")
        return converted_source(_original(dygraph_func))[1]

    def save_inference_model(self, dirname, feed=None, fetch=None) -> None:
        """The last declarative call made in dygraph mode as an inference model: ``feed``/``fetch``
        pick its inputs and outputs by index (all when None)."""
        api = "ProgramTranslator.save_inference_model"
        if self._last is None:
            raise ValueError(f"{api}: no declarative function has run in dygraph mode yet; call it once first")
        name, trace, place = self._last
        if isinstance(trace, ValueError):
            raise ValueError(f"{api}: {trace}")
        if trace.reads:
            raise ValueError(
                f"{api}: the last call of '{name}' read the value of {', '.join(trace.reads)}; fluidcompat runs "
                "declarative functions as written, so the saved program would keep that call's decision (a "
                "branch taken, a loop count) for every input. Write the decision with fluid.layers.cond / "
                "while_loop, or save a static-graph program built for inference."
            )
        _save_traced(
            trace.program(), trace.params, trace.feed_names, trace.fetch_names, dirname, feed, fetch, place, api
        )


def declarative(dygraph_func):
    """Decorator: the function (or a Layer's ``forward``) as fluid 1.8's declarative function
    (NOTE: [Declarative])."""

    @functools.wraps(dygraph_func)
    def __impl__(*args, **kwargs):  # get_output calls it plainly when the translator is off
        return ProgramTranslator().get_output(dygraph_func, *args, **kwargs)

    __impl__.__fluid_declarative__ = dygraph_func
    return __impl__


def dygraph_to_static_func(dygraph_func):
    """Decorator: the function builds its ops into the current static program when called outside
    dygraph mode, and runs plainly in dygraph mode (NOTE: [Declarative])."""

    @functools.wraps(dygraph_func)
    def __impl__(*args, **kwargs):
        translator = ProgramTranslator()
        if base.current_tracer() is not None or not translator.enable_declarative:
            return dygraph_func(*args, **kwargs)
        return _run_static(dygraph_func, args, kwargs)

    __impl__.__fluid_declarative__ = dygraph_func
    return __impl__
