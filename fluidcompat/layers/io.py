"""Data layers: ``fluid.data`` and ``fluid.layers.data``."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat.framework import Variable, default_main_program, layer
from fluidcompat.layers.distributed import BlockGuardServ, ListenAndServ, Recv, Send  # noqa: F401  (not exported, as in fluid)

__all__ = ["data", "py_reader", "create_py_reader_by_data", "double_buffer", "read_file", "load"]


def _check_name_shape(name, shape, api):
    if not isinstance(name, (bytes, str)):
        raise TypeError(
            f"The type of 'name' in {api} must be (<class 'bytes'>, <class 'str'>), but received {type(name)}. "
        )
    if not isinstance(shape, (list, tuple)):
        raise TypeError(
            f"The type of 'shape' in {api} must be (<class 'list'>, <class 'tuple'>), but received {type(shape)}. "
        )


def data(
    name, shape, append_batch_size=True, dtype="float32", lod_level=0, type=VarType.LOD_TENSOR, stop_gradient=True
) -> Variable:
    """``fluid.layers.data``: prepends a -1 batch dim unless a dim is None or negative.

    Its feeds are not checked against the declared shape (as in fluid 1.8).
    """
    _check_name_shape(name, shape, "data")
    shape = list(shape)
    for i, d in enumerate(shape):
        if d is None:
            shape[i] = -1
            append_batch_size = False
        elif d < 0:
            append_batch_size = False
    if append_batch_size:
        shape = [-1] + shape
    return (
        default_main_program()
        .global_block()
        .create_var(
            name=name,
            shape=shape,
            dtype=dtype,
            type=type,
            stop_gradient=stop_gradient,
            lod_level=lod_level,
            is_data=True,
            need_check_feed=False,
        )
    )


def fluid_data(name, shape, dtype="float32", lod_level=0) -> Variable:
    """``fluid.data``: the shape as given (None means -1); feeds are checked against it."""
    _check_name_shape(name, shape, "data")
    return feed_var(name, shape, dtype, lod_level, check_feed=True)


def feed_var(name, shape, dtype, lod_level=0, check_feed=True) -> Variable:
    """A feed variable of the main program's global block (None in ``shape`` means -1, stop_gradient
    True); ``check_feed``: its feeds are checked against its shape and dtype."""
    return (
        default_main_program()
        .global_block()
        .create_var(
            name=name,
            shape=[-1 if d is None else d for d in shape],
            dtype=dtype,
            type=VarType.LOD_TENSOR,
            stop_gradient=True,
            lod_level=lod_level,
            is_data=True,
            need_check_feed=check_feed,
        )
    )


# -- py_reader: batches pulled from Python by a read op at each Executor.run -------------------------
def _attach_reader(var: Variable, state) -> Variable:
    """The methods fluid 1.8 put on a py_reader variable."""
    from fluidcompat.reader import array_batches, collated_batches
    from fluidcompat.reader import batch as batch_reader

    def decorate_sample_list_generator(reader, places=None):
        state.source = collated_batches(reader)

    def decorate_batch_generator(reader, places=None):
        state.source = array_batches(reader)

    def decorate_sample_generator(sample_generator, batch_size, drop_last=True, places=None):
        decorate_sample_list_generator(batch_reader(sample_generator, batch_size, drop_last))

    var._reader_state = state
    var.start = state.start
    var.reset = state.reset
    var.decorate_paddle_reader = decorate_sample_list_generator
    var.decorate_sample_list_generator = decorate_sample_list_generator
    var.decorate_batch_generator = decorate_batch_generator
    var.decorate_tensor_provider = decorate_batch_generator
    var.decorate_sample_generator = decorate_sample_generator
    return var


def _new_reader(name, use_double_buffer, shapes, dtypes, feed_list=None):
    from fluidcompat import unique_name
    from fluidcompat_ops.python import ReaderState

    block = default_main_program().global_block()
    name = name or unique_name.generate("double_buffer" if use_double_buffer else "create_py_reader")
    var = block.create_var(name=name, type=VarType.READER, persistable=True)
    var._reader_shapes = [list(s) for s in shapes]
    var._reader_dtypes = list(dtypes)
    var._reader_feed_list = feed_list
    return _attach_reader(var, ReaderState(name))


@layer
def py_reader(capacity, shapes, dtypes, lod_levels=None, name=None, use_double_buffer=True):
    """A reader of batches fed from Python: ``decorate_paddle_reader`` / ``decorate_batch_generator``
    set its source, ``read_file`` gives its outputs, ``start()`` / ``reset()`` bound each pass, and
    ``Executor.run`` raises ``fluid.core.EOFException`` at the end of one."""
    if len(shapes) != len(dtypes):
        raise ValueError(f"py_reader: {len(shapes)} shapes but {len(dtypes)} dtypes")
    var = _new_reader(name, use_double_buffer, shapes, dtypes)
    var._reader_lod_levels = list(lod_levels) if lod_levels is not None else [0] * len(shapes)
    return _with_queue(var, capacity)


def _with_queue(var: Variable, capacity) -> Variable:
    """``reader.queue``: batches pushed from Python, read when the reader is not started."""
    from fluidcompat.reader import LoDTensorBlockingQueue

    var.queue = var._reader_state.queue = LoDTensorBlockingQueue(capacity, var.name)
    return var


@layer
def create_py_reader_by_data(capacity, feed_list, name=None, use_double_buffer=True):
    """``py_reader`` whose outputs are the variables of ``feed_list``."""
    shapes = [list(v.shape) for v in feed_list]
    var = _new_reader(name, use_double_buffer, shapes, [v.dtype for v in feed_list], list(feed_list))
    return _with_queue(var, capacity)


@layer
def double_buffer(reader, place=None, name=None):
    """The reader itself: fluidcompat's read op hands batches over without a prefetch buffer."""
    return reader


@layer
def read_file(reader):
    """The next batch of ``reader`` (a read op): one Variable per field, or the feed_list's."""
    from fluidcompat.layer_helper import LayerHelper
    from fluidcompat_ops.python import register_callable

    state = getattr(reader, "_reader_state", None)
    if state is None:
        raise TypeError(f"read_file needs a reader made by py_reader or create_py_reader_by_data. Received: {reader!r}")
    helper = LayerHelper("read_file")
    outs = reader._reader_feed_list
    if outs is None:
        outs = []
        lod_levels = getattr(reader, "_reader_lod_levels", None) or [0] * len(reader._reader_shapes)
        for shape, dtype, lod_level in zip(reader._reader_shapes, reader._reader_dtypes, lod_levels):
            v = helper.create_variable_for_type_inference(dtype=dtype)
            v._set_shape(shape)
            v._lod_level = int(lod_level)  # py_reader's lod_levels, as fluid's read op shared them
            v.stop_gradient = True
            outs.append(v)
    helper.append_op(type="read", outputs={"Out": outs}, attrs={"reader_id": register_callable(state)})
    return outs[0] if len(outs) == 1 else outs


@layer
def load(out, file_path, load_as_fp16=None):
    """Load ``out`` from a file written by fluid's save op (a LoDTensor stream), with a ``load`` op."""
    from fluidcompat.layer_helper import LayerHelper

    helper = LayerHelper("load")
    attrs = {"file_path": file_path}
    if load_as_fp16 is not None:
        attrs["load_as_fp16"] = load_as_fp16
    helper.append_op(type="load", outputs={"Out": [out]}, attrs=attrs)
