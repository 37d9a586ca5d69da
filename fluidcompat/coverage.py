"""fluid 1.8.5's public static-graph API, name by name: what fluidcompat supports.

``fluid18_api.json`` (beside this file) holds the public names of fluid 1.8.5 per module. This
module answers, for each name of the static-graph core, whether fluidcompat has it (supported),
has it with a difference (partial, see ``PARTIAL``), or not (missing); writes
``docs/compatibility.md`` from that (``python -m fluidcompat.coverage --write``); and gives the
modules a ``__getattr__`` that turns a missing fluid name into ``UnsupportedAPIError`` naming the
API and the nearest supported alternative.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Dict, List, Tuple

from fluidcompat.fluid18_names import (  # noqa: F401  (coverage.fluid_names, coverage.unsupported ...)
    ALTERNATIVES,
    NAMES_FILE,
    UnsupportedAPIError,
    fluid_names,
    unsupported,
)

_HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(os.path.dirname(_HERE), "docs", "compatibility.md")

# The static-graph core: the modules a fluid 1.8 training or inference script uses.
CORE_MODULES = (
    "paddle.fluid",
    "paddle.fluid.layers.nn",
    "paddle.fluid.layers.tensor",
    "paddle.fluid.layers.control_flow",
    "paddle.fluid.layers.loss",
    "paddle.fluid.layers.io",
    "paddle.fluid.layers.ops",
    "paddle.fluid.layers.learning_rate_scheduler",
    "paddle.fluid.layers.rnn",
    "paddle.fluid.layers.sequence_lod",
    "paddle.fluid.layers.metric_op",
    "paddle.fluid.layers.math_op_patch",
    "paddle.fluid.layers.detection",
    "paddle.fluid.layers.distributions",
    "paddle.fluid.optimizer",
    "paddle.fluid.initializer",
    "paddle.fluid.io",
    "paddle.fluid.profiler",
    "paddle.fluid.backward",
    "paddle.fluid.clip",
    "paddle.fluid.regularizer",
    "paddle.fluid.metrics",
    "paddle.fluid.nets",
    "paddle.fluid.unique_name",
    "paddle.fluid.param_attr",
    "paddle.fluid.compiler",
    "paddle.fluid.executor",
    "paddle.fluid.framework",
    "paddle.fluid.data_feeder",
    "paddle.fluid.contrib.mixed_precision",
    "paddle.fluid.dygraph",
)
# Modules of fluid 1.8 that come later.
LATER_MODULES = (
    "paddle.fluid.dygraph (translating for loops and loops that return; dygraph-mode declarative calls "
    "saved with their control flow)",
    "paddle.fluid.contrib (search_pyramid_hash, slim, the HDFS and distributed lookup-table utilities)",
    "paddle.dataset (voc2012, sentiment, mq2007: fluid read them with PIL, nltk, rarfile)",
    "paddle.fluid.debugger, net_drawer and graphviz (program drawings)",
)

_NO_RECURRENT = (
    "no recurrent op: unrolled when the number of time steps is known when built, else a while op; "
    "no control flow inside a step"
)
# Names fluidcompat has, but not quite as fluid 1.8 had them: what differs.
PARTIAL: Dict[str, str] = {
    "paddle.fluid.compiler.CompiledProgram": "with_data_parallel: the places of one process (CPU_NUM, places=) run "
    "one after the other on the executor's device, the optimizer once; across processes: fluidcompat launch",
    "paddle.fluid.ParallelExecutor": "the places of one process (CPU_NUM) run one after the other; num_trainers > 1: "
    "the workers of fluidcompat launch",
    "paddle.fluid.contrib": (
        "mixed_precision, basic_lstm, basic_gru, BasicLSTMUnit, BasicGRUUnit, "
        "extend_with_decoupled_weight_decay, memory_usage, op_freq_statistic, model_stat.summary, "
        "fused_elemwise_activation, fused_embedding_seq_pool, partial_concat, partial_sum, shuffle_batch, "
        "multiclass_nms2, ctr_metric_bundle, tree_conv, match_matrix_tensor, sequence_topk_avg_pooling, "
        "var_conv_2d, tdm_child, tdm_sampler, rank_attention, "
        "decoder (InitState, StateCell, TrainingDecoder, BeamSearchDecoder), "
        "reader.distributed_batch_reader, QuantizeTranspiler (the rest of contrib later)"
    ),
    "paddle.fluid.dygraph.declarative": (
        "in dygraph mode runs the function as written (the same values); built into a static program its if / "
        "while on Variables become cond / while_loop (early returns, break, continue), not a loop that returns"
    ),
    "paddle.fluid.dygraph.dygraph_to_static_func": (
        "if / while on Variables become cond / while_loop (early returns, break, continue), not a loop that returns"
    ),
    "paddle.fluid.dygraph.ProgramTranslator": (
        "get_code gives the translated source; save_inference_model refuses a dygraph call whose Python read a value"
    ),
    "paddle.fluid.layers.roi_pool": "image of each region from rois_lod; without it all regions are in image 0",
    "paddle.fluid.layers.roi_align": "image of each region from rois_lod; without it all regions are in image 0",
    "paddle.fluid.optimizer.PipelineOptimizer": (
        "the sections run in turn, one batch at a time: the values of training without the pipeline "
        "(fluid's asynchronous sections could read parameters not yet updated)"
    ),
    "paddle.fluid.DistributeTranspiler": (
        "pserver mode (sync and async; is_sparse embeddings looked up on the servers; runtime_split_send_recv "
        "programs for fluid.communicator) and nccl2 mode (workers of fluidcompat launch); GEO-SGD through "
        "GeoSgdTranspiler; not collective mode, other sparse gradients, distributed lookup tables, DC-ASGD or "
        "learning-rate decay schedules with asynchronous servers; an optimizer's grad_clip stays with the trainers"
    ),
    "paddle.fluid.transpiler": "DistributeTranspiler in pserver mode (see DistributeTranspiler)",
    "paddle.fluid.layers.StaticRNN": _NO_RECURRENT,
    "paddle.fluid.layers.rnn": _NO_RECURRENT,
    "paddle.fluid.layers.rnn.rnn": _NO_RECURRENT,
}

# Names in fluid 1.8.5's public lists that fluid 1.8.5 itself cannot resolve (AttributeError there).
NOT_IN_FLUID_185 = (
    "DistMultiTrainer",
    "HashName",
    "MultiTrainer",
    "PipelineTrainer",
    "RoundRobin",
    "TrainerDesc",
    "VarBase",
    "learning_rate_decay",
)


def _module_for(fluid_module: str):
    """The fluidcompat module a fluid module's names are looked up in."""
    real = "fluidcompat" + fluid_module[len("paddle.fluid") :]
    try:
        return importlib.import_module(real)
    except ImportError:
        return None


def status(fluid_module: str, name: str) -> Tuple[str, str]:
    """("supported" | "partial" | "missing", note) for one fluid 1.8 name."""
    module = _module_for(fluid_module)
    qualified = f"{fluid_module}.{name}"
    if fluid_module.startswith("paddle.fluid.layers."):
        qualified = f"paddle.fluid.layers.{name}"
    if module is None or not hasattr(module, name):
        if fluid_module == "paddle.fluid" and name in NOT_IN_FLUID_185:
            return "missing", "fluid 1.8.5 itself has no such attribute"
        return "missing", ALTERNATIVES.get(name, "")
    if qualified in PARTIAL:
        return "partial", PARTIAL[qualified]
    return "supported", ""


def table() -> Dict[str, List[Tuple[str, str, str]]]:
    names = fluid_names()
    return {m: [(n, *status(m, n)) for n in names[m]] for m in CORE_MODULES}


def figures(rows=None) -> Tuple[int, int, int]:
    """(supported, partial, total) over the static-graph core."""
    rows = rows or table()
    flat = [r for m in rows.values() for r in m]
    return (
        sum(1 for r in flat if r[1] == "supported"),
        sum(1 for r in flat if r[1] == "partial"),
        len(flat),
    )


def render() -> str:
    rows = table()
    sup, part, total = figures(rows)
    out = [
        "# Compatibility with the fluid 1.8.5 static-graph API",
        "",
        "Generated by `python -m fluidcompat.coverage --write` from fluid 1.8.5's public names",
        "(`fluidcompat/fluid18_api.json`) and what fluidcompat provides; `make test` fails when this",
        "file is stale. A missing name raises `NotImplementedError` naming the nearest alternative.",
        "",
        f"**{sup} of {total} names supported ({100.0 * sup / total:.1f}%), {part} partial, "
        f"{total - sup - part} missing.** {len(NOT_IN_FLUID_185)} of the missing names are in fluid 1.8.5's "
        "public lists but fluid 1.8.5 itself cannot resolve them.",
        "",
        "Later: " + ", ".join(f"`{m}`" for m in LATER_MODULES) + ".",
        "",
        "| module | names | supported | partial | missing |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for m, rs in rows.items():
        s = sum(1 for r in rs if r[1] == "supported")
        p = sum(1 for r in rs if r[1] == "partial")
        out.append(f"| `{m}` | {len(rs)} | {s} | {p} | {len(rs) - s - p} |")
    for m, rs in rows.items():
        if not rs:
            continue
        out += ["", f"## `{m}`", "", "| name | status | notes |", "| --- | --- | --- |"]
        out += [f"| `{n}` | {st} | {note} |" for n, st, note in rs]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if "--write" in argv:
        os.makedirs(os.path.dirname(DOC), exist_ok=True)
        with open(DOC, "w") as f:
            f.write(text)
        sup, part, total = figures()
        print(f"wrote {DOC}: {sup} of {total} supported, {part} partial")
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
