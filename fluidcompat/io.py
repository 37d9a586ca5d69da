"""``fluid.io`` saving and loading, in fluid 1.8's file formats.

Per-variable and combined parameter files use fluid's LoDTensor stream, ``__model__`` and
``.pdmodel`` the ProgramDesc protobuf, ``.pdparams``/``.pdopt`` pickled dicts, so checkpoints
written by fluid 1.8 load here and the other way round. A save's files become visible together and
a load refuses a checkpoint mixing two saves (NOTE: [Checkpoint manifest] in ``checkpoint_files``);
pickled files are read without running code (``safe_pickle``); every load reads and checks
everything before it changes the scope.
"""

from __future__ import annotations

import functools
import io as _io
import os
import pickle
import warnings
from typing import Dict, List

import numpy as np

from fluidcompat import checkpoint_files, proto, safe_pickle
from fluidcompat.dtypes import VarType, np_name, to_vartype
from fluidcompat.executor.placement import IO_OPS
from fluidcompat.executor.scope import global_scope
from fluidcompat.framework import (
    Parameter,
    Program,
    Variable,
    _program_from_records,
    default_main_program,
    program_guard,
    variables_of,
)
from fluidcompat.reader import (  # noqa: F401  (fluid.io re-exports the reader decorators)
    BatchSampler,
    ComposeNotAligned,
    DataLoader,
    Dataset,
    PyReader,
    batch,
    buffered,
    cache,
    chain,
    compose,
    default_collate_fn,
    firstn,
    map_readers,
    multiprocess_reader,
    shuffle,
    xmap_readers,
)

__all__ = [
    "save_vars",
    "save_params",
    "save_persistables",
    "load_vars",
    "load_params",
    "load_persistables",
    "save_inference_model",
    "load_inference_model",
    "save",
    "load",
    "load_program_state",
    "set_program_state",
    "is_parameter",
    "is_persistable",
    "is_belong_to_optimizer",
    "get_program_parameter",
    "get_program_persistable_vars",
    "get_parameter_value",
    "get_parameter_value_by_name",
    "DataLoader",
    "Dataset",
    "BatchSampler",
    "PyReader",
    "batch",
]


def get_parameter_value(para, executor) -> np.ndarray:
    """The value of parameter ``para`` in the global scope (where ``executor.run`` keeps it)."""
    if not is_parameter(para):
        raise TypeError(f"get_parameter_value: the input variable is not a parameter. Received: {para!r}")
    found = global_scope().find_var(para.name)
    if found is None or not found.is_initialized():
        raise ValueError(f"get_parameter_value: parameter '{para.name}' has no value in the global scope yet")
    return np.array(found.get_tensor())


def get_parameter_value_by_name(name, executor, program=None) -> np.ndarray:
    """The value of the parameter named ``name`` of ``program`` (the default main program)."""
    program = program if program is not None else default_main_program()
    return get_parameter_value(program.global_block().var(name), executor)


def get_program_parameter(program) -> List[Variable]:
    """The program's parameters."""
    return [v for v in program.list_vars() if is_parameter(v)]


def get_program_persistable_vars(program) -> List[Variable]:
    """The program's persistable variables (feed and fetch holders left out)."""
    return [v for v in program.list_vars() if is_persistable(v)]


_SKIPPED_TYPES = (VarType.FEED_MINIBATCH, VarType.FETCH_LIST, VarType.RAW, VarType.READER)


def is_parameter(var) -> bool:
    return isinstance(var, Parameter)


def is_persistable(var) -> bool:
    return bool(var.persistable) and var.type not in _SKIPPED_TYPES


def is_belong_to_optimizer(var) -> bool:
    return not (isinstance(var, Parameter) or var.need_check_feed) and is_persistable(var)


def _value(scope, var_name: str):
    """(the variable's array, its LoD) from ``scope``."""
    sv = scope.find_var(var_name)
    if sv is None or not sv.is_initialized():
        raise ValueError(
            f"Cannot save variable '{var_name}': it holds no value in the scope. Run the startup program "
            "(and the program that computes it) first."
        )
    tensor = sv.get_tensor()
    return np.asarray(tensor), tensor.lod()


def _valid_program(main_program, stacklevel: int = 3) -> Program:
    """The program to save or load: the default main program for None, a CompiledProgram's own program
    (with fluid's warning; fluid 1.8's save_persistables / load_persistables failed on one)."""
    from fluidcompat.executor.executor import CompiledProgram

    if main_program is None:
        return default_main_program()
    if isinstance(main_program, CompiledProgram):
        warnings.warn("The input is a CompiledProgram, this is not recommended.", stacklevel=stacklevel)
        main_program = main_program._program
    if not isinstance(main_program, Program):
        raise TypeError(
            "The type of input main_program is invalid, expected type is fluid.Program, but received "
            f"{type(main_program)}"
        )
    return main_program


def _select(main_program, vars, predicate) -> List[Variable]:
    program = _valid_program(main_program, stacklevel=4)  # save_vars / load_vars' caller
    if vars is None:
        vars = [v for v in program.list_vars() if predicate is None or predicate(v)]
    found = variables_of(  # names too (fluid 1.8.5 failed on them: "'str' object has no attribute 'type'")
        program,
        vars,
        lambda name: f"vars names '{name}', which is not a variable of the program",
        lambda v: f"vars should hold Variables or their names. Received: {type(v).__name__}",
    )
    return [v for v in found if v.type not in _SKIPPED_TYPES]


def _var_files(main_program, vars, predicate, filename) -> Dict[str, bytes]:
    """The files ``save_vars`` writes: name -> contents."""
    chosen = _select(main_program, vars, predicate)
    scope = global_scope()
    values = {v.name: _value(scope, v.name) for v in chosen}
    if filename is None:
        return {name: proto.tensor_to_bytes(*value) for name, value in values.items()}
    return {filename: b"".join(proto.tensor_to_bytes(*values[n]) for n in sorted(values))}


def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None) -> None:
    """Save variables: one file each under ``dirname``, or all in ``dirname/filename`` (sorted by name).
    The files become visible together (NOTE: [Checkpoint manifest])."""
    checkpoint_files.commit(dirname, _var_files(main_program, vars, predicate, filename))


def save_params(executor, dirname, main_program=None, filename=None) -> None:
    """Save the parameters of ``main_program`` to ``dirname`` (one file each, or ``filename``), in fluid's format."""
    save_vars(executor, dirname, _valid_program(main_program), None, is_parameter, filename)


def save_persistables(executor, dirname, main_program=None, filename=None) -> None:
    """Save the persistable variables of ``main_program`` to ``dirname``, in fluid's format.

    A trainer program of ``DistributeTranspiler`` saves as fluid's did: its own persistables, and
    from the first trainer (``trainer_id`` 0) what only the parameter servers hold (sparse tables,
    optimizer state), each slice fetched from its server and the slices joined: one file a variable.
    """
    program = _valid_program(main_program)
    remote = _distributed_vars(program)
    if remote is None:
        save_vars(executor, dirname, program, None, is_persistable, filename)
        return
    if filename is not None:
        warnings.warn(
            f"save_persistables of a distributed trainer program writes one file per variable (filename "
            f"'{filename}' is not used), as fluid 1.8 did",
            stacklevel=2,
        )
    fetched = {}
    if program._is_chief:  # everything is fetched before any file is written
        from fluidcompat.transpiler import rpc

        c = rpc.client()
        for e in remote:
            if e["vtype"] == "Param":
                continue
            parts = [c.call(ep, "get_no_barrier", name) for ep, name, _, _ in e["slices"]]
            value = np.concatenate(parts, axis=0) if e["is_slice"] else parts[0]
            if list(value.shape) != list(e["shape"]):
                raise ValueError(
                    f"'{e['name']}' from the parameter servers has shape {list(value.shape)}, not {e['shape']}"
                )
            fetched[e["name"]] = value
    files = _var_files(program, None, _held_here(remote), None)
    files.update({name: proto.tensor_to_bytes(value, []) for name, value in fetched.items()})
    checkpoint_files.commit(dirname, files)


def _held_here(remote):
    """The predicate of a trainer's own persistables: not the servers' sparse tables and state."""
    on_servers = {e["name"] for e in remote if e["vtype"] != "Param"}
    return lambda v: is_persistable(v) and v.name not in on_servers


def _distributed_vars(program):
    """The server-side variables of a DistributeTranspiler program (None for other programs); a
    ``VarsDistributed`` set there by hand (fluid's record) is read as the transpiler's own list."""
    if not getattr(program, "_is_distributed", False):
        return None
    remote = getattr(program, "_parameters_on_pservers", None)
    if hasattr(remote, "get_distributed_vars_by_vtypes"):
        return _entries_of(remote)
    return remote


def _entries_of(record) -> List[dict]:
    """A ``VarsDistributed``'s Optimizer and RemotePrefetch variables (what fluid's distributed save
    fetched) as the transpiler's entries: each original variable's pieces in order (by block id when
    sliced, else as recorded), each piece's server, name there, shape and first row."""
    entries = []
    for name, pieces in record.get_distributed_vars_by_vtypes(["Optimizer", "RemotePrefetch"], groupby=True).items():
        origin, is_slice = pieces[0].origin, pieces[0].is_slice
        if is_slice:
            pieces = sorted(pieces, key=lambda p: p.block_id)
        width = int(np.prod(origin.shape[1:])) if len(origin.shape) > 1 else 1
        slices = [(p.endpoint, p.slice.name, list(p.slice.shape), int(p.offset) // max(width, 1)) for p in pieces]
        entries.append({"name": name, "shape": list(origin.shape), "dtype": to_vartype(origin.dtype),
                        "vtype": pieces[0].vtype, "is_slice": is_slice, "slices": slices})  # fmt: skip
    return entries


def _check(var: Variable, value: np.ndarray, where: str) -> np.ndarray:
    want = tuple(var.shape)
    if len(want) != value.ndim or any(w >= 0 and w != g for w, g in zip(want, value.shape)):
        raise ValueError(
            f"Shape of variable '{var.name}' in {where} is {list(value.shape)}, but the program declares {list(want)}"
        )
    if to_vartype(value.dtype) != var.dtype:
        raise ValueError(
            f"Data type of variable '{var.name}' in {where} is {value.dtype.name}, but the program declares "
            f"{np_name(var.dtype)}"
        )
    return value


def _set_all(values: Dict[str, np.ndarray], place, lods=None) -> None:
    scope = global_scope()
    for name, value in values.items():
        tensor = scope.var(name).get_tensor()
        tensor.set(value, place)
        tensor.set_lod((lods or {}).get(name, []))


def _place(executor):
    from fluidcompat.places import CPUPlace

    return getattr(executor, "place", None) or CPUPlace()


def load_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None) -> None:
    """Load variables saved by ``save_vars`` (or by fluid 1.8); checks names, shapes and dtypes first."""
    chosen = _select(main_program, vars, predicate)
    values: Dict[str, np.ndarray] = {}
    lods: Dict[str, list] = {}  # the LoD each file holds, kept in the scope as fluid kept it
    reader = checkpoint_files.Reader(dirname)
    if filename is None:
        for v in chosen:
            path = os.path.join(dirname, v.name)
            if not os.path.isfile(path):
                raise ValueError(f"Cannot load variable '{v.name}': there is no file {path}")
            values[v.name], lods[v.name] = reader.load(v.name, lambda data: _one_tensor(data, v, path))
    else:
        path = os.path.join(dirname, filename)
        if not os.path.isfile(path):
            raise ValueError(f"Cannot load variables: there is no file {path}")
        ordered = sorted(chosen, key=lambda var: var.name)
        found = reader.load(filename, lambda data: _tensors(data, ordered, path))
        for v, (value, lod) in zip(ordered, found):
            values[v.name], lods[v.name] = value, lod
    _set_all(values, _place(executor), lods)


def _one_tensor(data: bytes, var: Variable, path: str):
    """(value, LoD) of ``var`` from its file's contents, checked against the program."""
    what = f"variable '{var.name}' ({path})"
    with _io.BytesIO(data) as f:
        value, lod = proto.read_tensor(f, what)
        if f.read(1):
            raise proto.FormatError(f"{what}: the file holds more than one tensor")
    return _check(var, value, path), lod


def _tensors(data: bytes, ordered: List[Variable], path: str):
    """(value, LoD) of each of ``ordered`` from a combined file's contents, checked against the program."""
    found = []
    with _io.BytesIO(data) as f:
        for v in ordered:
            value, lod = proto.read_tensor(f, f"variable '{v.name}' in {path}")
            found.append((_check(v, value, path), lod))
        if f.read(1):
            raise proto.FormatError(f"{path} holds more tensors than the {len(ordered)} variables the program asks for")
    return found


def load_params(executor, dirname, main_program=None, filename=None) -> None:
    """Load the parameters of ``main_program`` from ``dirname`` as ``save_params`` wrote them."""
    load_vars(executor, dirname, _valid_program(main_program), None, is_parameter, filename)


def load_persistables(executor, dirname, main_program=None, filename=None) -> None:
    """Load the persistable variables of ``main_program`` from ``dirname``.

    A parameter server's program (``DistributeTranspiler.get_pserver_program``) loads, as fluid's
    did, the slices it holds of what a distributed ``save_persistables`` wrote; a trainer program
    loads its own persistables (the servers hold the rest)."""
    main_program = _valid_program(main_program)
    remote = _distributed_vars(main_program)
    if remote is None:
        load_vars(executor, dirname, main_program, None, is_persistable, filename)
        return
    if not any(op.type == "listen_and_serv" for op in main_program.global_block().ops):
        load_vars(executor, dirname, main_program, None, _held_here(remote))
        return
    values = {}
    reader = checkpoint_files.Reader(dirname)
    for e in remote:
        mine = [s for s in e["slices"] if s[0] == main_program._ps_endpoint]
        if not mine:
            continue
        path = os.path.join(dirname, e["name"])
        if not os.path.isfile(path):
            raise ValueError(f"Cannot load variable '{e['name']}': there is no file {path}")
        value, _ = reader.load(
            e["name"], lambda data: proto.read_tensor(_io.BytesIO(data), f"variable '{e['name']}' ({path})")
        )
        if list(value.shape) != list(e["shape"]):
            raise ValueError(
                f"Shape of variable '{e['name']}' in {path} is {list(value.shape)}, but the job declares {e['shape']}"
            )
        for _, name, shape, row in mine:
            values[name] = value[row : row + shape[0]] if e["is_slice"] else value
    _set_all(values, _place(executor))


# -- inference models -----------------------------------------------------------------------------------
def _prune(program: Program, feed_names, target_names) -> Program:
    """The ops of ``program`` needed to compute ``target_names`` from ``feed_names``, in test mode."""
    return program.clone(for_test=True)._prune_with_input(list(feed_names), list(target_names))


def save_inference_model(
    dirname,
    feeded_var_names,
    target_vars,
    executor,
    main_program=None,
    model_filename=None,
    params_filename=None,
    export_for_deployment=True,
    program_only=False,
):
    """Save the program pruned to ``target_vars`` (with feed and fetch ops) and its parameters.

    Compat: the ``scale`` ops fluid appends to name the targets go into the saved copy only; the
    caller's program is left as it was.
    """
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    if not all(isinstance(n, str) for n in feeded_var_names):
        raise ValueError("'feed_var_names' should be a list of str.")
    if isinstance(target_vars, Variable):
        target_vars = [target_vars]
    if not target_vars or not all(isinstance(v, Variable) for v in target_vars):
        raise ValueError("'target_vars' should be a list of Variable.")
    program = _valid_program(main_program).clone()
    block = program.global_block()
    io_ops = [k for k, op in enumerate(block.ops) if op.type in IO_OPS]
    for k in reversed(io_ops):  # a loaded model's own feed and fetch ops: the new ones replace them
        block._remove_op(k)
    with program_guard(program):
        from fluidcompat.layers.nn import scale

        targets = [
            scale(program.global_block().var(v.name), 1.0, name=f"save_infer_model/scale_{i}")
            for i, v in enumerate(target_vars)
        ]
    for n in feeded_var_names:
        if not program.global_block().has_var(n):
            raise ValueError(f"Cannot save the inference model: feed variable '{n}' is not in the program")
    pruned = _prune(program, feeded_var_names, [t.name for t in targets])
    for b in pruned.blocks:  # fluid copied the pruned program once more (NOTE: [Variable order])
        b._set_desc_order(b._desc_order())
    block = pruned.global_block()
    feed_var = block.create_var(name="feed", type=VarType.FEED_MINIBATCH, persistable=True)
    fetch_var = block.create_var(name="fetch", type=VarType.FETCH_LIST, persistable=True)
    for i, name in reversed(list(enumerate(feeded_var_names))):
        block._insert_op(0, type="feed", inputs={"X": [feed_var]}, outputs={"Out": [name]}, attrs={"col": i})
    for i, t in enumerate(targets):
        block.append_op(type="fetch", inputs={"X": [t.name]}, outputs={"Out": [fetch_var]}, attrs={"col": i})
    files = {model_filename or "__model__": proto.program_to_bytes(pruned)}
    if not program_only:
        params = [v for v in block.vars.values() if is_persistable(v)]
        files.update(_var_files(pruned, params, None, params_filename))
    checkpoint_files.commit(dirname, files)
    return [t.name for t in targets]


def load_inference_model(dirname, executor, model_filename=None, params_filename=None, pserver_endpoints=None):
    """Load a model saved by ``save_inference_model`` (here or by fluid 1.8).

    Returns ``[program, feed_target_names, fetch_targets]``. The program holds the saved feed and fetch
    ops, as fluid's did; the executor leaves them to the feed dict and fetch list (so, unlike fluid's,
    it also runs with other fetch lists, strings included).
    """
    path = os.path.join(dirname, model_filename or "__model__")
    if not os.path.isfile(path):
        raise ValueError(f"Cannot find the inference model file {path}")
    try:
        records = checkpoint_files.Reader(dirname).load(model_filename or "__model__", proto.parse_program)
    except checkpoint_files.CheckpointError:
        raise
    except proto.FormatError as e:
        raise _model_format_error(path, e) from None
    try:
        program = _program_from_records(records)
    except ValueError as e:  # an op type fluidcompat does not know (or a damaged one): name the file
        if type(e) is not ValueError:
            raise
        raise ValueError(f"{path}: {e}") from None
    block = program.global_block()
    feeds = sorted((op.attrs["col"], op.output("Out")[0]) for op in block.ops if op.type == "feed")
    fetches = sorted((op.attrs["col"], op.input("X")[0]) for op in block.ops if op.type == "fetch")
    try:
        fetch_vars = [block.var(n) for _, n in fetches]
    except ValueError as e:  # a fetch op of a variable the file does not declare
        raise _model_format_error(path, e) from None
    params = [v for v in block.vars.values() if is_persistable(v)]
    load_vars(executor, dirname, program, params, None, params_filename)
    return [program, [n for _, n in feeds], fetch_vars]


@functools.lru_cache(maxsize=None)
def _model_format_error_type():
    from fluidcompat.executor.errors import EnforceNotMet  # torch: imported only when a load fails

    class ModelFormatError(proto.FormatError, EnforceNotMet):
        """A model file that does not parse: fluid's EnforceNotMet, and a ``proto.FormatError``."""

    return ModelFormatError


def _model_format_error(path: str, e: Exception) -> Exception:
    """fluid's error for a model file that does not parse (EnforceNotMet, InvalidArgumentError), naming
    the file."""
    return _model_format_error_type()(
        f"InvalidArgumentError: Failed to parse program_desc from binary string: {path} is not a fluid program "
        f"file (truncated or damaged: {e})"
    )


# -- fluid.save / fluid.load ---------------------------------------------------------------------------------
def save(program, model_path) -> None:
    """Write ``model_path`` + ``.pdparams`` (parameters), ``.pdopt`` (other persistables), ``.pdmodel``."""
    base = os.path.basename(model_path)
    if base == "":
        raise ValueError(
            "The input model_path MUST be format of dirname/filename [dirname\\filename in Windows system], but "
            "received model_path is empty string."
        )
    scope = global_scope()
    params = {v.name: _value(scope, v.name)[0] for v in program.list_vars() if is_parameter(v)}
    opt = {v.name: _value(scope, v.name)[0] for v in program.list_vars() if is_belong_to_optimizer(v)}
    files = {  # written together (NOTE: [Checkpoint manifest]); a .pdopt of an earlier save is left out
        base + ".pdparams": _pickle_state(params),
        base + ".pdopt": _pickle_state(opt) if opt else None,
        base + ".pdmodel": proto.program_to_bytes(program),
    }
    checkpoint_files.commit(os.path.dirname(model_path), files)


class _FlatArray:
    """Pickles as ``numpy.frombuffer(data, dtype)``, which every numpy version can call."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = np.ascontiguousarray(array)

    def __reduce__(self):
        return (np.frombuffer, (self.array.tobytes(), self.array.dtype.str))


class _PortablePickler(pickle.Pickler):
    # numpy 2 pickles arrays by the path numpy._core, which numpy 1.x (fluid 1.8's) cannot import
    def reducer_override(self, obj):
        if type(obj) is np.ndarray:
            return (np.reshape, (_FlatArray(obj), obj.shape))
        return NotImplemented


def _pickle_state(values: Dict[str, np.ndarray]) -> bytes:
    buf = _io.BytesIO()
    _PortablePickler(buf, protocol=2).dump(values)
    return buf.getvalue()


def _read_pickle(path: str) -> Dict[str, np.ndarray]:
    try:
        data = checkpoint_files.load_file(path, lambda blob: safe_pickle.loads(blob, path))
    except (safe_pickle.UnsafePickleError, checkpoint_files.CheckpointError):
        raise
    except (pickle.UnpicklingError, EOFError, ValueError) as e:
        raise proto.FormatError(f"{path} is not a complete fluid state file ({type(e).__name__}: {e})") from None
    if not isinstance(data, dict):
        raise proto.FormatError(f"{path} does not hold a dict of variable values")
    return {k: np.asarray(v) for k, v in data.items()}


def load(program, model_path, executor=None, var_list=None) -> None:
    """Load what ``save`` wrote into the global scope; every parameter must be there with its shape."""
    params_path = model_path + ".pdparams"
    if not os.path.isfile(params_path):
        if os.path.isdir(model_path):
            load_persistables(executor, model_path, program)
            return
        raise ValueError(f"Parameter file [{params_path}] not exits")
    state = _read_pickle(params_path)
    values = {}
    for v in program.list_vars():
        if not is_parameter(v):
            continue
        if v.name not in state:
            raise ValueError(f"Can not find [{v.name}] in model file [{params_path}]")
        values[v.name] = _check(v, state[v.name], params_path)
    opt_vars = [v for v in program.list_vars() if is_belong_to_optimizer(v)]
    if opt_vars:
        opt_path = model_path + ".pdopt"
        if not os.path.isfile(opt_path):
            raise ValueError(f"Optimizer file [{opt_path}] not exits")
        if checkpoint_files.Reader(os.path.dirname(opt_path)).excluded(os.path.basename(opt_path)):
            raise ValueError(
                f"Optimizer file [{opt_path}] is not part of the checkpoint: it was saved by an earlier fluid.save "
                "(the last one saved a program without optimizer state)"
            )
        opt = _read_pickle(opt_path)
        for v in opt_vars:
            if v.name not in opt:
                raise ValueError(f"Can not find [{v.name}] in model file [{opt_path}]")
            values[v.name] = _check(v, opt[v.name], opt_path)
    _set_all(values, _place(executor))


def load_program_state(model_path, var_list=None) -> Dict[str, np.ndarray]:
    """The saved values as a dict (from ``save``'s files, or a directory of per-variable files)."""
    if os.path.isdir(model_path):
        reader = checkpoint_files.Reader(model_path)
        if var_list is None:
            names = [n for n in sorted(os.listdir(model_path)) if not n.startswith(".") and n != "__model__"]
            if reader.missing():
                raise checkpoint_files.CheckpointError(
                    f"The checkpoint in {model_path} is incomplete (a save was interrupted): its manifest "
                    f"{reader.manifest_path} lists {', '.join(reader.missing())}, which is not there"
                )
        else:
            names = [v.name for v in var_list]
        state = {}
        for n in names:
            what = f"variable '{n}' ({os.path.join(model_path, n)})"
            state[n] = reader.load(n, lambda data, what=what: proto.read_tensor(_io.BytesIO(data), what))[0]
        return state
    params_path = model_path + ".pdparams"
    if not os.path.isfile(params_path):
        raise ValueError(f"Parameter file [{params_path}] not exits")
    state = _read_pickle(params_path)
    opt_path = model_path + ".pdopt"
    if os.path.isfile(opt_path) and not checkpoint_files.Reader(os.path.dirname(opt_path)).excluded(
        os.path.basename(opt_path)
    ):
        state.update(_read_pickle(opt_path))
    return state


def set_program_state(program, state_dict) -> None:
    """Set the program's persistable variables from ``state_dict``; checks shapes and dtypes first."""
    values = {}
    for v in program.list_vars():
        if is_persistable(v) and v.name in state_dict:
            values[v.name] = _check(v, np.asarray(state_dict[v.name]), "the state dict")
    unused = sorted(set(state_dict) - set(values))
    if unused:
        warnings.warn(
            f"This list is not set, Because of Paramerter not found in program. There are: {unused}", stacklevel=2
        )
    from fluidcompat.places import CPUPlace

    _set_all(values, CPUPlace())


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.io")(name)
