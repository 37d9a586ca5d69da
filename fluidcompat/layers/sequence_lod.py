"""``fluid.layers`` over LoD sequences, with fluid 1.8's signatures (ops in fluidcompat_ops/sequence.py):
sequence_pool, sequence_first_step/last_step, sequence_softmax, sequence_conv, sequence_reverse,
sequence_pad/unpad, sequence_reshape, sequence_concat, sequence_enumerate, sequence_slice,
sequence_expand/expand_as, sequence_mask. Their inputs are LoDTensors fed with sequence lengths."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat.framework import layer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable, refuse_false
from fluidcompat.layers._common import _one
from fluidcompat.layers.rnn import swap_batch_time
from fluidcompat_ops.sequence import POOL_TYPES

__all__: list = []


def _export(fn):
    __all__.append(fn.__name__)
    return layer(fn)


def _seq_op(op_type, inputs, attrs=None, out_slot="Out", name=None, lod_level=1, helper_name=None):
    """``_one``'s op of one output, the output declared with ``lod_level``."""
    out = _one(op_type, inputs, attrs, out_slot=out_slot, name=name, helper_name=helper_name)
    out._lod_level = lod_level
    return out


def _checked(x, arg: str, where: str):
    check_variable(x, arg, where)
    return x


@_export
def sequence_pool(input, pool_type, is_test=False, pad_value=0.0):
    """Pool each sequence of ``input`` (its last LoD level) to one row: 'sum', 'average', 'sqrt',
    'max', 'last' or 'first'; an empty sequence gives ``pad_value``."""
    _checked(input, "input", "sequence_pool")
    pooltype = str(pool_type).upper()
    if pooltype not in POOL_TYPES:
        raise ValueError(
            f"sequence_pool: pool_type must be one of {[t.lower() for t in POOL_TYPES]}. Received: {pool_type!r}"
        )
    helper = LayerHelper("sequence_pool")
    pool_out = helper.create_variable_for_type_inference(input.dtype)
    max_index = helper.create_variable_for_type_inference(VarType.INT32, stop_gradient=True)
    pool_out._lod_level = max(input.lod_level - 1, 0)
    helper.append_op(
        type="sequence_pool",
        inputs={"X": [input]},
        outputs={"Out": [pool_out], "MaxIndex": [max_index]},
        attrs={"pooltype": pooltype, "is_test": bool(is_test), "pad_value": float(pad_value)},
    )
    return pool_out


@_export
def sequence_first_step(input):
    """The first row of each sequence (``sequence_pool(input, 'first')``)."""
    return sequence_pool(input, "first")


@_export
def sequence_last_step(input):
    """The last row of each sequence (``sequence_pool(input, 'last')``)."""
    return sequence_pool(input, "last")


@_export
def sequence_softmax(input, use_cudnn=False, name=None):
    """Softmax over each sequence of a [rows, 1] or [rows] input."""
    _checked(input, "input", "sequence_softmax")
    return _seq_op("sequence_softmax", {"X": [input]}, {"use_cudnn": bool(use_cudnn)}, name=name)


@_export
def sequence_conv(
    input,
    num_filters,
    filter_size=3,
    filter_stride=1,
    padding=True,
    padding_start=None,
    bias_attr=None,
    param_attr=None,
    act=None,
    name=None,
):
    """A 1-D convolution over each sequence: row t sees rows ``t + padding_start`` ...
    ``t + padding_start + filter_size - 1`` of its own sequence (zeros outside it)."""
    _checked(input, "input", "sequence_conv")
    helper = LayerHelper("sequence_conv", bias_attr=bias_attr, param_attr=param_attr, act=act, name=name)
    width = input.shape[1]
    if width is None or width < 0:
        raise ValueError(f"sequence_conv: the width of input '{input.name}' must be known. Received: {input.shape}")
    filter_param = helper.create_parameter(
        attr=helper.kwargs.get("param_attr"), shape=[filter_size * width, num_filters], dtype=input.dtype
    )
    pre_bias = helper.create_variable_for_type_inference(input.dtype)
    pre_bias._lod_level = input.lod_level
    if padding_start is None:
        padding_start = -int(filter_size // 2)
    helper.append_op(
        type="sequence_conv",
        inputs={"X": [input], "Filter": [filter_param]},
        outputs={"Out": [pre_bias]},
        attrs={
            "contextStride": int(filter_stride),
            "contextStart": int(padding_start),
            "contextLength": int(filter_size),
        },
    )
    return helper.append_activation(helper.append_bias_op(pre_bias))


@_export
def sequence_reverse(x, name=None):
    """Each sequence's rows in reverse order."""
    _checked(x, "x", "sequence_reverse")
    return _seq_op("sequence_reverse", {"X": [x]}, out_slot="Y", name=name)


@_export
def sequence_pad(x, pad_value, maxlen=None, name=None):
    """(padded [sequences, maxlen, ...], lengths [sequences] int64): each sequence padded with
    ``pad_value`` (a Variable of one value or one row) to ``maxlen`` (None: the longest)."""
    _checked(x, "x", "sequence_pad")
    _checked(pad_value, "pad_value", "sequence_pad")
    helper = LayerHelper("sequence_pad", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    length = helper.create_variable_for_type_inference(VarType.INT64, stop_gradient=True)
    pad_value.stop_gradient = True
    helper.append_op(
        type="sequence_pad",
        inputs={"X": [x], "PadValue": [pad_value]},
        outputs={"Out": [out], "Length": [length]},
        attrs={"padded_length": -1 if maxlen is None else int(maxlen)},
    )
    return out, length


@_export
def sequence_unpad(x, length, name=None):
    """The rows of padded ``x`` [sequences, maxlen, ...] up to each sequence's ``length``, as a LoDTensor."""
    _checked(x, "x", "sequence_unpad")
    _checked(length, "length", "sequence_unpad")
    length.stop_gradient = True
    return _seq_op("sequence_unpad", {"X": [x], "Length": [length]}, name=name)


@_export
def sequence_reshape(input, new_dim):
    """Each sequence's rows re-cut to width ``new_dim`` (its length * width must divide by it)."""
    _checked(input, "input", "sequence_reshape")
    return _seq_op("sequence_reshape", {"X": [input]}, {"new_dim": int(new_dim)})


@_export
def sequence_concat(input, name=None):
    """Sequence i of the output is sequence i of each input, one after another."""
    if not isinstance(input, (list, tuple)) or not input:
        raise TypeError(f"sequence_concat: input must be a non-empty list of Variables. Received: {input!r}")
    for i, v in enumerate(input):
        _checked(v, f"input[{i}]", "fluid.layers.sequence_concat")
        check_dtype(v.dtype, f"input[{i}]", ["int64", "float32", "float64"], "fluid.layers.sequence_concat")
    return _seq_op("sequence_concat", {"X": list(input)}, name=name)


@_export
def sequence_enumerate(input, win_size, pad_value=0, name=None):
    """[rows, win_size]: per row, it and the next ``win_size - 1`` ids of its sequence (``pad_value`` past the end)."""
    _checked(input, "input", "sequence_enumerate")
    out = _seq_op(
        "sequence_enumerate", {"X": [input]}, {"win_size": int(win_size), "pad_value": int(pad_value)}, name=name
    )
    out.stop_gradient = True
    return out


@_export
def sequence_slice(input, offset, length, name=None):
    """Per sequence i, its rows ``offset[i]`` ... ``offset[i] + length[i] - 1`` ([sequences, 1] int64 Variables)."""
    _checked(input, "input", "sequence_slice")
    offset.stop_gradient = True
    length.stop_gradient = True
    return _seq_op("sequence_slice", {"X": [input], "Offset": [offset], "Length": [length]}, name=name)


@_export
def sequence_expand(x, y, ref_level=-1, name=None):
    """Row i of ``x`` (or its sequence i, when it has a LoD) repeated as many times as sequence i of
    ``y``'s LoD level ``ref_level`` (-1: the last) has rows."""
    _checked(x, "x", "sequence_expand")
    _checked(y, "y", "sequence_expand")
    return _seq_op("sequence_expand", {"X": [x], "Y": [y]}, {"ref_level": int(ref_level)}, name=name)


@_export
def sequence_expand_as(x, y, name=None):
    """Row i of ``x`` repeated as many times as sequence i of ``y`` has rows; the output takes ``y``'s LoD."""
    _checked(x, "x", "sequence_expand_as")
    _checked(y, "y", "sequence_expand_as")
    return _seq_op("sequence_expand_as", {"X": [x], "Y": [y]}, name=name)


@_export
def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """``Y[..., j] = j < x[...]`` for ``j < maxlen`` (an int, a Variable, or None: x's largest value)."""
    from fluidcompat.dtypes import to_vartype  # (here: the module's names stay those fluid 1.8 had)
    from fluidcompat.framework import Variable

    inputs, attrs = {"X": [x]}, {"out_dtype": int(to_vartype(dtype))}
    if isinstance(maxlen, Variable):
        inputs["MaxLenTensor"] = [maxlen]
    else:
        attrs["maxlen"] = -1 if maxlen is None else int(maxlen)
    return _one("sequence_mask", inputs, attrs, dtype=dtype, out_slot="Y", name=name, stop_gradient=True)


def _initial_state(v, size: int, what: str):
    if v is not None and (len(v.shape) != 2 or v.shape[1] != size):
        raise ValueError(
            f"The shape of {what} should be (batch_size, {size}). Received: '{v.name}' of shape {list(v.shape)}"
        )
    return [v] if v is not None else []


@_export
def dynamic_lstm(
    input,
    size,
    h_0=None,
    c_0=None,
    param_attr=None,
    bias_attr=None,
    use_peepholes=True,
    is_reverse=False,
    gate_activation="sigmoid",
    cell_activation="tanh",
    candidate_activation="tanh",
    dtype="float32",
    name=None,
):
    """An LSTM over each sequence of ``input`` ([rows, size], the projected gates: ``size`` is 4x
    the hidden size). Returns (hidden, cell), both [rows, size / 4] with ``input``'s LoD."""
    acts = {"gate_activation": gate_activation, "cell_activation": cell_activation}
    acts["candidate_activation"] = candidate_activation
    return _lstm_layer("lstm", input, size, None, param_attr, bias_attr, use_peepholes, is_reverse, acts, dtype,
                       name, h_0, c_0)  # fmt: skip


def _lstm_layer(op_type, input, size, proj_size, param_attr, bias_attr, use_peepholes, is_reverse, attrs, dtype,
                name, h_0, c_0):  # fmt: skip
    """dynamic_lstm (op lstm) and, with ``proj_size``, dynamic_lstmp (op lstmp): the parameters, the
    temporaries fluid made (lstmp's six, the third unused) and the op."""
    layer = "dynamic_lstmp" if proj_size else "dynamic_lstm"
    _checked(input, "input", layer)
    refuse_false(bias_attr, "bias_attr", f"in {layer}")
    helper = LayerHelper(op_type, param_attr=param_attr, bias_attr=bias_attr, name=name)
    size = size // 4
    if size <= 0:
        raise ValueError(f"{layer}: size must be at least 4 (4 x the hidden size). Received: {size * 4}")
    state = proj_size or size
    h0, c0 = _initial_state(h_0, state, "h0"), _initial_state(c_0, size, "c0")
    weight = helper.create_parameter(attr=helper.kwargs.get("param_attr"), shape=[state, 4 * size], dtype=dtype)
    inputs = {"Input": [input], "Weight": [weight]}
    if proj_size:
        inputs["ProjWeight"] = [
            helper.create_parameter(attr=helper.kwargs.get("param_attr"), shape=[size, proj_size], dtype=dtype)
        ]
    bias_size = [1, 7 * size if use_peepholes else 4 * size]
    bias = helper.create_parameter(attr=helper.kwargs.get("bias_attr"), shape=bias_size, dtype=dtype, is_bias=True)
    inputs.update({"Bias": [bias], "H0": h0, "C0": c0})
    temps = [helper.create_variable_for_type_inference(dtype) for _ in range(6 if proj_size else 4)]
    slots = ("Projection", "Cell", None, "BatchHidden") if proj_size else ("Hidden", "Cell")
    slots += ("BatchGate", "BatchCellPreAct")
    outputs = {slot: [v] for slot, v in zip(slots, temps) if slot}
    temps[0]._lod_level = temps[1]._lod_level = input.lod_level
    attrs = dict(attrs, use_peepholes=bool(use_peepholes), is_reverse=bool(is_reverse))
    helper.append_op(type=op_type, inputs=inputs, outputs=outputs, attrs=attrs)
    return temps[0], temps[1]


@_export
def dynamic_gru(
    input,
    size,
    param_attr=None,
    bias_attr=None,
    is_reverse=False,
    gate_activation="sigmoid",
    candidate_activation="tanh",
    h_0=None,
    origin_mode=False,
):
    """A GRU over each sequence of ``input`` ([rows, 3 * size], the projected gates). Returns the
    hidden states, [rows, size] with ``input``'s LoD."""
    _checked(input, "input", "dynamic_gru")
    helper = LayerHelper("gru", input=input, param_attr=param_attr, bias_attr=bias_attr)
    dtype = helper.input_dtype()
    weight = helper.create_parameter(attr=helper.kwargs.get("param_attr"), shape=[size, 3 * size], dtype=dtype)
    bias = helper.create_parameter(attr=helper.kwargs.get("bias_attr"), shape=[1, 3 * size], dtype=dtype, is_bias=True)
    inputs = {"Input": [input], "Weight": [weight], "Bias": [bias] if bias is not None else []}
    inputs["H0"] = _initial_state(h_0, size, "h0")
    hidden, batch_gate, batch_reset_hidden_prev, batch_hidden = (
        helper.create_variable_for_type_inference(dtype) for _ in range(4)
    )
    hidden._lod_level = input.lod_level
    helper.append_op(
        type="gru",
        inputs=inputs,
        outputs={
            "Hidden": [hidden],
            "BatchGate": [batch_gate],
            "BatchResetHiddenPrev": [batch_reset_hidden_prev],
            "BatchHidden": [batch_hidden],
        },
        attrs={
            "is_reverse": bool(is_reverse),
            "gate_activation": gate_activation,
            "activation": candidate_activation,
            "origin_mode": bool(origin_mode),
        },
    )
    return hidden


@_export
def sequence_scatter(input, index, updates, name=None):
    """``input`` with ``updates`` added: sequence i of ``index`` (a LoDTensor of column ids) and of
    ``updates`` goes to row i."""
    _checked(input, "input", "sequence_scatter")
    _checked(index, "index", "sequence_scatter")
    _checked(updates, "updates", "sequence_scatter")
    return _seq_op("sequence_scatter", {"X": [input], "Ids": [index], "Updates": [updates]}, name=name, lod_level=0)


@_export
def lod_reset(x, y=None, target_lod=None):
    """``x`` with a new LoD: ``y``'s LoD (or, when ``y`` has none, its values as offsets), or
    ``target_lod`` (offsets of one level)."""
    _checked(x, "x", "lod_reset")
    if y is not None:
        _checked(y, "y", "lod_reset")
        return _seq_op("lod_reset", {"X": [x], "Y": [y]}, {"append": False}, lod_level=max(y.lod_level, 1))
    if target_lod is not None:
        if not isinstance(target_lod, (list, tuple)):
            raise TypeError(f"lod_reset: target_lod must be a list or tuple of ints. Received: {target_lod!r}")
        return _seq_op("lod_reset", {"X": [x]}, {"target_lod": [int(v) for v in target_lod], "append": False})
    raise ValueError("y and target_lod should not be both none.")


@_export
def lod_append(x, level):
    """``x`` with one more LoD level below its own: ``level`` (offsets, a list or a Variable)."""
    _checked(x, "x", "lod_append")
    if level is None:
        raise ValueError("Input(level) of lod_append should not be None.")
    if isinstance(level, (list, tuple)):
        attrs = {"target_lod": [int(v) for v in level], "append": True}
        return _seq_op("lod_reset", {"X": [x]}, attrs, lod_level=x.lod_level + 1, helper_name="lod_append")
    _checked(level, "level", "lod_append")
    inputs = {"X": [x], "Y": [level]}
    return _seq_op("lod_reset", inputs, {"append": True}, lod_level=x.lod_level + 1, helper_name="lod_append")


@_export
def dynamic_lstmp(
    input,
    size,
    proj_size,
    param_attr=None,
    bias_attr=None,
    use_peepholes=True,
    is_reverse=False,
    gate_activation="sigmoid",
    cell_activation="tanh",
    candidate_activation="tanh",
    proj_activation="tanh",
    dtype="float32",
    name=None,
    h_0=None,
    c_0=None,
    cell_clip=None,
    proj_clip=None,
):
    """An LSTM with a projection: the recurrent state is ``proj_activation(hidden @ proj_weight)``
    of ``proj_size``. Returns (projection [rows, proj_size], cell [rows, size / 4]), with ``input``'s LoD."""
    for clip, what in ((cell_clip, "cell_clip"), (proj_clip, "proj_clip")):
        if clip is not None and clip < 0:
            raise ValueError(f"{what} should not be negative. Received: {clip}")
    attrs = {"cell_clip": float(cell_clip or 0.0), "proj_clip": float(proj_clip or 0.0)}
    attrs.update(gate_activation=gate_activation, cell_activation=cell_activation)
    attrs.update(candidate_activation=candidate_activation, proj_activation=proj_activation)
    return _lstm_layer("lstmp", input, size, proj_size, param_attr, bias_attr, use_peepholes, is_reverse, attrs,
                       dtype, name, h_0, c_0)  # fmt: skip


class DynamicRNN:
    """fluid's DynamicRNN over LoD sequences: ``with rnn.block():`` takes ``step_input`` (one row per
    sequence per time step), ``memory`` / ``update_memory`` and ``output``; ``rnn()`` gives the
    outputs as LoD sequences shaped as the step input's.

    Built as a While loop over the padded sequences (fluid shrank the batch to the sequences still
    running, in length order): each step sees every sequence in its original order, and a sequence
    that has ended keeps its memories; outputs past a sequence's end are dropped. Values and
    gradients are fluid's for ops that treat rows independently (everything fluid's docs put in a
    DynamicRNN step); ``static_input`` gives the whole tensor, in its original order."""

    BEFORE_RNN, IN_RNN, AFTER_RNN = 0, 1, 2

    def __init__(self, name=None):
        self.helper = LayerHelper("dynamic_rnn", name=name)
        self.status = DynamicRNN.BEFORE_RNN
        self.step_idx = self.cond = self.lengths = self.max_len = self.mask = self.mask_all = None
        self.mem_links = []
        self.output_arrays = []

    def _parent(self):
        """Append to the block around the loop (ops before the while op) while inside it."""
        from fluidcompat.layers.control_flow import in_parent_block

        return in_parent_block(self.helper.main_program)

    def _assert_in_rnn_block(self, method):
        if self.status != DynamicRNN.IN_RNN:
            raise ValueError(f"{method} can only be invoked inside rnn block.")

    def block(self):
        import contextlib

        from fluidcompat.layers import control_flow as cf
        from fluidcompat.layers import tensor as t

        if self.status != DynamicRNN.BEFORE_RNN:
            raise ValueError("rnn.block() can only be invoke once")

        @contextlib.contextmanager
        def guard():
            self.step_idx = t.fill_constant([1], "int64", 0)
            self.cond = self.helper.create_variable_for_type_inference("bool", stop_gradient=True)
            loop = cf.While(self.cond)
            self.status = DynamicRNN.IN_RNN
            with loop.block():
                yield
                if self.max_len is None:
                    raise ValueError("DynamicRNN: call step_input inside rnn.block() before anything else")
                for mem, new in self.mem_links:  # a sequence that has ended keeps its memory
                    change = _nn().elementwise_mul(_nn().elementwise_sub(new, mem), self.mask, axis=0)
                    t.assign(_nn().elementwise_add(mem, change), mem)
                cf.increment(self.step_idx, 1.0, in_place=True)
                cf.less_than(self.step_idx, self.max_len, cond=self.cond)
            self.status = DynamicRNN.AFTER_RNN
            self.outputs = []
            for arr in self.output_arrays:
                stacked = cf.tensor_array_to_tensor(arr, axis=0, use_stack=True)[0]
                self.outputs.append(sequence_unpad(swap_batch_time(stacked), self.lengths))

        return guard()

    def step_input(self, x, level=0):
        """This step's row of every sequence of ``x`` (a LoDTensor)."""
        from fluidcompat.layers import control_flow as cf
        from fluidcompat.layers import tensor as t

        self._assert_in_rnn_block("step_input")
        _checked(x, "x", "DynamicRNN.step_input")
        nn = _nn()
        with self._parent():
            padded, lengths = sequence_pad(x, t.fill_constant([1], x.dtype, 0.0))
            time_major = swap_batch_time(padded)
            if self.lengths is None:
                self.lengths = lengths
                self.max_len = nn.reduce_max(lengths, dim=[0], keep_dim=True)
                cf.less_than(self.step_idx, self.max_len, cond=self.cond)

                self.mask_all = nn.transpose(sequence_mask(lengths, dtype=x.dtype), [1, 0])
        if self.mask is None:
            self.mask = nn.squeeze(nn.gather(self.mask_all, self.step_idx), [0])
        return nn.squeeze(nn.gather(time_major, self.step_idx), [0])

    def static_input(self, x):
        """``x`` as it is in every step (fluid gave the rows of the sequences still running)."""
        self._assert_in_rnn_block("static_input")
        _checked(x, "x", "DynamicRNN.static_input")
        return x

    def memory(self, init=None, shape=None, value=0.0, need_reorder=False, dtype="float32"):
        """A memory of every sequence: ``init`` ([sequences, ...]), or ``value`` in ``shape``. As in
        fluid, ``init``'s rows are taken in the sequences' length order (longest first, ties in
        order) unless ``need_reorder``, which takes row i for sequence i."""
        from fluidcompat.layers import tensor as t

        self._assert_in_rnn_block("memory")
        if self.lengths is None:
            raise ValueError("DynamicRNN: call step_input before memory (the memory's batch is the sequences')")
        with self._parent():
            if init is None:
                if shape is None:
                    raise ValueError("DynamicRNN.memory needs init or shape")
                init = t.fill_constant_batch_size_like(self.lengths, [-1] + list(shape), dtype, value)
            elif not need_reorder:  # row k of init is for the k-th longest sequence
                _, by_length = _nn().argsort(self.lengths, descending=True)
                _, rank = _nn().argsort(by_length)
                init = _nn().gather(init, rank)
            mem = t.assign(init)
        mem.stop_gradient = False
        return mem

    def update_memory(self, ex_mem, new_mem):
        """At the end of each step, ``ex_mem`` (from ``memory``) takes ``new_mem``."""
        self._assert_in_rnn_block("update_memory")
        _checked(ex_mem, "ex_mem", "DynamicRNN.update_memory")
        _checked(new_mem, "new_mem", "DynamicRNN.update_memory")
        self.mem_links.append((ex_mem, new_mem))

    def output(self, *outputs):
        """Each step's values of ``outputs``, gathered into LoD sequences by ``rnn()``."""
        from fluidcompat.layers import control_flow as cf

        self._assert_in_rnn_block("output")
        for each in outputs:
            _checked(each, "output", "DynamicRNN.output")
            with self._parent():
                arr = cf.create_array(each.dtype)
            cf.array_write(each, self.step_idx, array=arr)
            self.output_arrays.append(arr)

    def __call__(self, *args, **kwargs):
        if self.status != DynamicRNN.AFTER_RNN:
            raise ValueError("Output of the dynamic RNN can only be visited outside the rnn block.")
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs


__all__.append("DynamicRNN")


def _nn():
    """fluid.layers (imported when a DynamicRNN is built: this module is part of it)."""
    from fluidcompat.layer_helper import layers

    return layers
