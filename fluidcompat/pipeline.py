"""``fluid.optimizer.PipelineOptimizer``: a training program cut into sections at given variables.

``minimize`` builds what fluid 1.8.5 built: the inner optimizer's program, then ``2k - 1`` section
programs for ``k`` cut points (the forward slices up to each cut, then the backward slices back
from each cut's gradients, each with the update ops of its parameters; the learning-rate ops in
the first section), recorded in ``program._pipeline_opt``. ``Executor.train_from_dataset`` runs the
sections one after another per batch, each on its place, handing on the variables later sections
read. fluid ran them as an asynchronous pipeline of scope queues, where a section could see
parameters a later section had not updated yet; here every batch sees the updates of the one before,
so the values are those of the same training without the pipeline. Torch-free.
"""

from __future__ import annotations

from typing import List

from fluidcompat import framework, places
from fluidcompat.framework import GRAD_VAR_SUFFIX, OpRole, Program, Variable


def _reads(ops) -> set:
    return {n for op in ops for n in op.input_arg_names}


def _writes(ops) -> set:
    return {n for op in ops for n in op.output_arg_names}


def _only_read(ops) -> set:
    """The names ``ops`` read and none of them writes: what a section takes in."""
    return _reads(ops) - _writes(ops)


def _only_written(ops) -> set:
    """The names ``ops`` write and none of them reads: what a section gives out."""
    return _writes(ops) - _reads(ops)


def _is_optimize(op) -> bool:
    return bool(op.attrs.get("op_role", 0) & OpRole.Optimize)


def _producers(ops, targets, with_optimize: bool) -> list:
    """The ops (in order) that lead to ``targets``: walking from the last op, an op writing a wanted
    name is kept and its inputs become wanted. Without ``with_optimize``, update ops are passed over,
    and a ``print`` of a wanted variable is kept without wanting its inputs."""
    wanted = set(targets)
    kept = []
    for op in reversed(ops):
        if (with_optimize or not _is_optimize(op)) and wanted.intersection(op.output_arg_names):
            kept.append(op)
            wanted.update(op.input_arg_names)
        elif not with_optimize and op.type == "print" and op.input_arg_names[:1] and op.input_arg_names[0] in wanted:
            kept.append(op)
    return kept[::-1]


def _section_program(main: Program, ops) -> Program:
    """A program of copies of ``ops`` and of the variables they use (in order of first use)."""
    prog = Program()
    src, block = main.global_block(), prog.global_block()
    for op in ops:
        for name in op.input_arg_names + op.output_arg_names:
            if name not in block.vars and (var := src._find_var_recursive(name)) is not None:
                block.vars[name] = var._copy_to(block)
    block.ops = [op._copy_to(block) for op in ops]
    for op in block.ops:
        block._link_outputs(op)
    return prog


def _split(main: Program, cuts: List[List[Variable]]) -> List[dict]:
    """The section list of ``main`` cut at ``cuts`` (``k`` lists of variables, the last the loss)."""
    block = main.global_block()
    params = {p.name for p in block.all_parameters()}
    k = len(cuts)
    targets = [[v.name for v in c] for c in cuts[:-1]]
    targets += [[v.name + GRAD_VAR_SUFFIX for v in c] for c in reversed(cuts[:-1])]
    targets[-1] += [v.name for v in cuts[-1]]
    left = list(block.ops)
    sections, section_params = [], []
    for i, names in enumerate(targets):
        ops = _producers(left, names, with_optimize=False)
        if i == 0:  # the learning-rate schedule goes with the first section
            ops += [op for op in left if op.attrs.get("op_role", 0) == OpRole.LRSched and op not in ops]
        taken = set(map(id, ops))
        left = [op for op in left if id(op) not in taken]
        inputs = _only_read(ops)
        if i < k:
            section_params.append(params & _reads(ops))
        if i >= k - 1:  # a backward section also updates the parameters of its forward mirror
            updates = _producers(left, section_params[2 * k - 2 - i], with_optimize=True)
            taken = set(map(id, updates))
            left = [op for op in left if id(op) not in taken]
            ops += updates
        inputs |= _only_read(ops) | section_params[min(i, 2 * k - 2 - i)]
        sections.append({"ops": ops, "input_set": inputs, "output_set": _only_written(ops)})
    first_grads = {v.name + GRAD_VAR_SUFFIX for v in cuts[0]}
    sections.append({"ops": left, "input_set": first_grads | _only_read(left) | section_params[0], "output_set": set()})
    later_reads: set = set()
    for sec in reversed(sections):  # a section gives out only what a later one reads
        sec["output_set"] &= later_reads
        later_reads |= sec["input_set"]
    return [
        {"program": _section_program(main, s["ops"]), "input_set": s["input_set"], "output_set": s["output_set"]}
        for s in sections
    ]


class PipelineOptimizer:
    """Pipeline training (fluid 1.8.5's cut-list form): ``cut_list`` holds ``k`` lists of variables,
    the last one the loss; ``place_list`` and ``concurrency_list`` one entry per section (``2k - 1``,
    or 1 for an empty ``cut_list``). ``queue_size``, ``sync_steps``, ``start_cpu_core_id`` and the
    concurrency are kept in ``_pipeline_opt`` but change nothing: the sections run in turn."""

    def __init__(
        self, optimizer, cut_list=None, place_list=None, concurrency_list=None, queue_size=30, sync_steps=1,
        start_cpu_core_id=0,
    ):  # fmt: skip
        if framework.in_dygraph_mode():
            raise Exception("In dygraph, don't support PipelineOptimizer.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"PipelineOptimizer: optimizer must be a fluid.optimizer Optimizer. Received: {optimizer!r}"
            )
        cut_list = _list_of("cut_list", cut_list)
        for i, cut in enumerate(cut_list):
            cut = _list_of(f"cut_list[{i}]", cut)
            for v in cut:
                if not isinstance(v, Variable):
                    raise TypeError(f"PipelineOptimizer: cut_list[{i}] must hold Variables. Received: {v!r}")
        sections = 2 * len(cut_list) - 1 if cut_list else 1
        place_list = _list_of("place_list", place_list)
        concurrency_list = _list_of("concurrency_list", concurrency_list)
        for name, got in (("place_list", place_list), ("concurrency_list", concurrency_list)):
            if len(got) != sections:
                raise ValueError(
                    f"PipelineOptimizer: {len(cut_list)} cut points make {sections} sections, so {name} needs "
                    f"{sections} entries. Received {len(got)}"
                )
        for place in place_list:
            if not isinstance(place, places.Place):
                raise TypeError(
                    f"PipelineOptimizer: place_list must hold places (fluid.CPUPlace() ...). Received: {place!r}"
                )
        for c in concurrency_list:
            if not isinstance(c, int) or isinstance(c, bool) or c < 1:
                raise ValueError(f"PipelineOptimizer: concurrency_list must hold positive ints. Received: {c!r}")
        self._optimizer = optimizer
        self._cut_list = [list(c) for c in cut_list]
        self._place_list = place_list
        self._concurrency_list = concurrency_list
        self._queue_size = queue_size
        self._sync_steps = sync_steps
        self._start_cpu_core_id = start_cpu_core_id

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """The inner optimizer's ``minimize``, then the sections into ``program._pipeline_opt``.
        Returns None, as fluid 1.8.5 did."""
        if not isinstance(loss, Variable):
            raise TypeError(f"The loss should be an Variable. Received: {type(loss)}")
        main = loss.block.program
        for i, cut in enumerate(self._cut_list):
            for v in cut:
                if v.block.program is not main:
                    raise ValueError(
                        f"PipelineOptimizer: cut_list[{i}] variable '{v.name}' is not in the loss's program"
                    )
        startup = startup_program or framework.default_startup_program()
        with framework.program_transaction(main, startup):
            self._optimizer.minimize(loss, startup_program, parameter_list, no_grad_set)
            if self._cut_list:
                section_list = _split(main, self._cut_list)
            else:
                section_list = [{"program": main, "input_set": set(), "output_set": set()}]
            params = {p.name for p in main.global_block().all_parameters()}
            need_sync = [
                name
                for sec, place in zip(section_list, self._place_list)
                if isinstance(place, places.CUDAPlace)
                for name in sec["program"].global_block().vars
                if name in params
            ]
            main._pipeline_opt = {
                "trainer": "PipelineTrainer",
                "device_worker": "Section",
                "section_program_list": section_list,
                "place_list": self._place_list,
                "concurrency_list": self._concurrency_list,
                "queue_size": self._queue_size,
                "start_cpu_core_id": self._start_cpu_core_id,
                "sync_steps": self._sync_steps,
                "param_need_sync": need_sync,
            }


# fluid's Optimizer, the class PipelineOptimizer wraps: optimizer.py, which imports this module (its
# PipelineOptimizer), sets it
Optimizer = None


def _list_of(name: str, value) -> list:
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"PipelineOptimizer: {name} must be a list. Received: {value!r}")
    return list(value)
