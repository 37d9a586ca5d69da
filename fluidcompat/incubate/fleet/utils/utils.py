"""``fleet.utils.utils``: tools for the programs a fleet job saves: load and save a program as bytes
or as protobuf text (fluid's framework.proto ``ProgramDesc``), convert one form into the other,
check a pruned (inference) program against the training one, run a saved inference model on given
or random inputs, list a program's variables and ops, and draw a block (Graphviz)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from collections import OrderedDict

import numpy as np

from fluidcompat.dtypes import VarType

__all__ = [
    "load_program", "save_program", "program_type_trans", "check_saved_vars_try_dump", "parse_program",
    "check_pruned_program_vars", "graphviz",
]  # fmt: skip

logger = logging.getLogger(__name__)

persistable_vars_out_fn = "vars_persistable.log"
all_vars_out_fn = "vars_all.log"
ops_out_fn = "ops.log"
feed_fetch_type_list = [VarType.FEED_MINIBATCH, VarType.FETCH_LIST]
not_expected_op_types = ["lookup_table"]


def _program_class():
    from fluidcompat.framework import Program

    return Program


def load_program(model_filename, is_text=False):
    """The program in ``model_filename`` (protobuf text when ``is_text``, else bytes)."""
    return load_program_text(model_filename) if is_text else load_program_binary(model_filename)


def load_program_binary(model_filename):
    with open(model_filename, "rb") as f:
        return _program_class().parse_from_string(f.read())


def load_program_text(model_filename):
    from google.protobuf import text_format

    from fluidcompat.proto import framework_pb2

    with open(model_filename) as f:
        desc = text_format.Parse(f.read(), framework_pb2.ProgramDesc())
    return _program_class().parse_from_string(desc.SerializeToString())


def program_text(program) -> str:
    """``program`` as protobuf text (what load_program_text reads)."""
    from google.protobuf import text_format

    from fluidcompat.proto import framework_pb2

    return text_format.MessageToString(framework_pb2.ProgramDesc.FromString(program.desc.serialize_to_string()))


def save_program(program, model_filename="__model__", is_text=False) -> None:
    if is_text:
        with open(model_filename, "w") as f:
            f.write(program_text(program))
    else:
        with open(model_filename, "wb") as f:
            f.write(program.desc.serialize_to_string())


def program_type_trans(prog_dir, prog_fn, is_text):
    """Save ``prog_dir/prog_fn`` in the other form, as ``prog_fn + '.bin'`` (from text) or
    ``prog_fn + '.pbtxt'`` (from bytes); that name."""
    program = load_program(os.path.join(prog_dir, prog_fn), is_text)
    out = prog_fn + (".bin" if is_text else ".pbtxt")
    save_program(program, os.path.join(prog_dir, out), not is_text)
    return out


def _persistables(program):
    from fluidcompat.io import is_persistable

    return [v for v in program.list_vars() if is_persistable(v)]


def check_pruned_program_vars(train_prog, pruned_prog) -> bool:
    """Whether every persistable of ``pruned_prog`` is in ``train_prog`` with the same shape and dtype
    (each difference logged)."""
    ok = True
    pruned = OrderedDict((v.name, v) for v in _persistables(pruned_prog))
    logger.info("persistable vars in pruned program: %s", list(pruned))
    train = train_prog.global_block()
    for name, var in pruned.items():
        if var.type in feed_fetch_type_list:  # feed / fetch: added by the pruning
            break
        if not train.has_var(name):
            logger.error("not find variable '%s' in train program. please check pruning.", name)
            continue
        other = train.var(name)
        if tuple(var.shape) != tuple(other.shape) or var.dtype != other.dtype:
            logger.error(
                "variable: %s not match. in pruned program shape: %s dtype:%s, in train program shape: %s dtype: %s",
                name, var.shape, var.dtype, other.shape, other.dtype,
            )  # fmt: skip
            ok = False
    return ok


def _dot(block) -> str:
    """A Graphviz graph of ``block``: its ops (boxes) and the variables they read and write."""
    lines = ["digraph G {", "  rankdir=TB;"]
    names = {}

    def node(name):
        if name not in names:
            names[name] = f"v{len(names)}"
            lines.append(f'  {names[name]} [label="{name}", shape=ellipse];')
        return names[name]

    for i, op in enumerate(block.ops):
        lines.append(f'  op{i} [label="{op.type}", shape=box, style=filled, fillcolor=lightgray];')
        for n in op.input_arg_names:
            lines.append(f"  {node(n)} -> op{i};")
        for n in op.output_arg_names:
            lines.append(f"  op{i} -> {node(n)};")
    return "\n".join(lines + ["}"]) + "\n"


def graphviz(block, output_dir="", filename="debug") -> None:
    """``block`` drawn into ``output_dir/filename.dot``, and ``.pdf`` with Graphviz's ``dot``."""
    dot_path = os.path.join(output_dir, filename + ".dot")
    with open(dot_path, "w") as f:
        f.write(_dot(block))
    if shutil.which("dot") is None:
        sys.stderr.write(f"graphviz: no `dot` command (Graphviz) on PATH: wrote {dot_path} only\n")
        return
    subprocess.run(["dot", "-Tpdf", dot_path, "-o", os.path.join(output_dir, filename + ".pdf")],
                   capture_output=True, check=False)  # fmt: skip


def reader(batch_size, fn, dim) -> list:
    """The batches in text file ``fn``: numbers separated by spaces, ``batch_size`` rows of shape
    ``dim`` at a time (what remains of a line is dropped)."""
    shape = list(dim) if isinstance(dim, (list, tuple)) else [dim]
    size = int(np.prod(shape)) * batch_size
    data = []
    with open(fn) as f:
        for line in f:
            fields = [float(d) for d in line.strip().split(" ") if d]
            while len(fields) >= size:
                data.append(np.array(fields[:size]).reshape([batch_size] + shape))
                fields = fields[size:]
    return data


def feed_gen(batch_size, feeded_vars_dims, feeded_vars_filelist) -> list:
    return [reader(batch_size, fn, feeded_vars_dims[i]) for i, fn in enumerate(feeded_vars_filelist)]


def _drop_ops(program, op_type: str) -> None:
    block = program.global_block()
    for i in reversed(range(len(block.ops))):
        if block.ops[i].type == op_type:
            block._remove_op(i)


def try_load_model_vars(dump_dir, dump_prog_fn, is_text_dump_program, batch_size, feed_config, fetch_config,
                        save_filename, saved_params):  # fmt: skip
    """Load the inference model of ``dump_dir`` and run it once on the config's feed (files, or
    random values): the fetched results. The saved parameters' shapes and the feed shapes are checked."""
    import fluidcompat as fluid

    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    with fluid.scope_guard(fluid.Scope()):
        if is_text_dump_program:
            dump_prog_fn = program_type_trans(dump_dir, dump_prog_fn, is_text_dump_program)
        program, feed_names, fetch_targets = fluid.io.load_inference_model(
            dump_dir, exe, model_filename=dump_prog_fn, params_filename=save_filename
        )
        for var in saved_params:
            found = fluid.global_scope().find_var(var.name)
            if found is None:
                raise RuntimeError(f"can't find var: {var.name} (a persistable of the program) among the saved ones")
            got = tuple(np.array(found.get_tensor()).shape)
            if got != tuple(var.shape):
                raise RuntimeError(
                    f"Shape not matching: the Program requires a parameter with a shape of ({tuple(var.shape)}), "
                    f"while the loaded parameter (namely [ {var.name} ]) has a shape of  ({got})."
                )
        fetch_list, feed_list = fetch_targets, feed_names
        if feed_config.feeded_vars_names is not None and feed_names != feed_config.feeded_vars_names:
            logger.warning(
                "feed vars in program and config are diff: %s vs %s", feed_names, feed_config.feeded_vars_names
            )
            feed_list = feed_config.feeded_vars_names
            _drop_ops(program, "feed")
        if (
            fetch_config.fetch_vars_names is not None
            and [v.name for v in fetch_targets] != fetch_config.fetch_vars_names
        ):
            logger.warning("fetch vars in program and config are diff: %s", fetch_config.fetch_vars_names)
            fetch_list = [program.global_block().var(n) for n in fetch_config.fetch_vars_names]
            _drop_ops(program, "fetch")
        return_numpy = all(v.lod_level == 0 for v in fetch_list)
        names, dims, types = feed_config.feeded_vars_names, feed_config.feeded_vars_dims, feed_config.feeded_vars_types
        if not len(names) == len(dims) == len(types):
            raise ValueError(f"feed config: {len(names)} names, {len(dims)} dims and {len(types)} types")
        block = program.global_block()
        for i, name in enumerate(names):
            want = tuple(dims[i]) if isinstance(dims[i], (list, tuple)) else (dims[i],)
            dims[i] = want
            have = tuple(block.var(name).shape[1:])
            if want != have:
                raise RuntimeError(
                    f"feed variable '{name}' shape not match. infer program  shape: {have}. feed tensor shape: {want}"
                )
        if not feed_config.feeded_vars_filelist:
            feed = {}
            for i, name in enumerate(names):
                var = block.var(name)
                value = np.random.random((batch_size,) + tuple(dims[i])).astype(types[i])
                if var.lod_level == 0:
                    feed[feed_list[i]] = value
                elif var.lod_level == 1:
                    feed[feed_list[i]] = fluid.create_lod_tensor(value, [[1] * batch_size], place)
                else:
                    raise RuntimeError(
                        "vars with lod_level >= 2 is not supported now in this infer program check tool."
                    )
            results = exe.run(program, feed=feed, fetch_list=fetch_list, return_numpy=return_numpy)
        else:
            feeder = fluid.DataFeeder(feed_list=[block.var(n) for n in names], place=place)
            batches = feed_gen(batch_size, dims, feed_config.feeded_vars_filelist)
            results = exe.run(program, feed=feeder.feed([batches]), fetch_list=fetch_list, return_numpy=return_numpy)
        for v, r in zip(fetch_list, results):
            logger.info("fetch_targets name: %s: %s", v.name, r)
        return results


def check_not_expected_ops(prog) -> None:
    for op_type in dict.fromkeys(op.type for op in prog.global_block().ops if op.type in not_expected_op_types):
        logger.warning("find op type '%s' in program, please check if your program is pruned correctly !", op_type)


def check_saved_vars_try_dump(dump_dir, dump_prog_fn, is_text_dump_program, feed_config, fetch_config, batch_size=1,
                              save_filename=None):  # fmt: skip
    program = load_program(os.path.join(dump_dir, dump_prog_fn), is_text_dump_program)
    saved = _persistables(program)
    logger.info("persistable vars in dump program: %s", [v.name for v in saved])
    check_not_expected_ops(program)
    return try_load_model_vars(dump_dir, dump_prog_fn, is_text_dump_program, batch_size, feed_config, fetch_config,
                               save_filename, saved)  # fmt: skip


def parse_program(program, output_dir) -> None:
    """``program``'s persistables, all its variables and its ops, one dict a line, into
    ``vars_persistable.log``, ``vars_all.log`` and ``ops.log`` of ``output_dir``."""

    def describe(v, with_type=True):
        d = {"name": str(v.name), "shape": str(v.shape), "lod_level": int(v.lod_level), "dtype": str(v.dtype)}
        if with_type:
            d["type"] = str(v.type)
        return d

    persistables = [describe(v) for v in _persistables(program)]
    every = [describe(v, False) if v.type not in feed_fetch_type_list else {"name": str(v.name), "type": str(v.type)}
             for v in program.list_vars()]  # fmt: skip
    ops = [{"type": op.type, "input_arg_names": str(op.input_arg_names), "output_arg_names": str(op.output_arg_names)}
           for op in program.global_block().ops]  # fmt: skip
    for fn, title, rows in ((persistable_vars_out_fn, "persistable vars", persistables),
                            (all_vars_out_fn, "all vars", every), (ops_out_fn, "ops", ops)):  # fmt: skip
        with open(os.path.join(output_dir, fn), "w") as f:
            f.write(f"{title}:\n")
            f.writelines(f"{row}\n" for row in rows)
