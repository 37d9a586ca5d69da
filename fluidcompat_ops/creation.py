"""Creation and random ops: fill_constant, fill_constant_batch_size_like, fill_any_like,
fill_zeros_like, range, linspace, eye, diag, diag_embed, tril_triu, meshgrid, one_hot(_v2) and
sequence_mask; and the random ops uniform_random, gaussian_random, truncated_gaussian_random, randint,
randperm, the batch-size-like random ops and sampling_id (seeded as fluid 1.8's, see fluid_random.py)."""

from __future__ import annotations

from fluidcompat.dtypes import INT_TYPES, VarType
from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.sequence import lod_of
from fluidcompat_ops.shapes import _x, first, norm_axis, out, same_as
from fluidcompat_ops.tensor import _tdtype, _to_dtype, half_as_fluid_cpu

torch = None  # NOTE: [Lazy torch] in registry.py
F = None
TORCH_DTYPES = None


# -- fill_constant ------------------------------------------------------------------------------
def _fill_constant_infer(ins, attrs):
    st = first(ins, "ShapeTensor")
    if st is not None:
        shape = [-1] * (st.shape[0] if st.shape and st.shape[0] > 0 else 1)
    elif ins.get("ShapeTensorList"):
        # the sizes given as numbers are known (the layer put -1 where a Variable gives the size)
        n = len(ins["ShapeTensorList"])
        shape = list(attrs["shape"]) if len(attrs["shape"]) == n else [-1] * n
    else:
        shape = attrs["shape"]
    return out("Out", shape, attrs["dtype"])


def _shape_from(ins, attrs, tensor_slot="ShapeTensor", list_slot="ShapeTensorList", attr="shape"):
    st = first(ins, tensor_slot)
    if st is not None:
        return [int(v) for v in st.tolist()]
    lst = ins.get(list_slot)
    if lst:
        return [int(t.reshape(-1)[0]) for t in lst]
    return list(attrs[attr])


def _fill_value(attrs):
    s = attrs.get("str_value", "")
    v = float(s) if s else attrs["value"]
    if VarType(attrs["dtype"]) in INT_TYPES:
        return int(v)
    if VarType(attrs["dtype"]) == VarType.BOOL:
        return bool(v)
    return v


def _fill_constant_specialize(attrs, slots):
    if slots:
        return None
    shape, dtype, device = list(attrs["shape"]), _tdtype(attrs["dtype"]), attrs["_device"]
    value = _fill_value_as(attrs, dtype, device)
    full = torch.full

    def fill_constant(ins, attrs):
        return {"Out": [full(shape, value, dtype=dtype, device=device)]}

    return fill_constant


def _fill_constant_kernel(ins, attrs):
    shape = _shape_from(ins, attrs)
    vt = first(ins, "ValueTensor")
    dtype = _tdtype(attrs["dtype"])
    if vt is not None:
        return {"Out": [_to_dtype(vt.reshape(()), dtype).expand(shape).clone()]}
    value = _fill_value_as(attrs, dtype, attrs["_device"])
    return {"Out": [torch.full(shape, value, dtype=dtype, device=attrs["_device"])]}


def _fill_value_as(attrs, dtype, device):
    """fill_constant's value, as a float16 on the CPU fluid's CPU kernel made it (half_as_fluid_cpu)."""
    value = _fill_value(attrs)
    if dtype == torch.float16 and torch.device(device).type == "cpu":
        return half_as_fluid_cpu(torch.tensor([value], dtype=torch.float64)).item()
    return value


register(
    OpDef(
        "fill_constant",
        ("ShapeTensor", "ShapeTensorList", "ValueTensor"),
        ("Out",),
        {"shape": [], "dtype": int(VarType.FP32), "value": 0.0, "str_value": "", "force_cpu": False},
        _fill_constant_infer,
        _fill_constant_kernel,
        specialize=_fill_constant_specialize,
        cpu_attr="force_cpu",
        # the shape is read on the host (a `shape` op's result stays there: no copies)
        host_inputs=frozenset({"ShapeTensor", "ShapeTensorList"}),
    )
)


def _fcbsl_infer(ins, attrs):
    x = first(ins, "Input")
    shape = list(attrs["shape"])
    shape[attrs["output_dim_idx"]] = x.shape[attrs["input_dim_idx"]]
    return out("Out", shape, attrs["dtype"])


def _fcbsl_kernel(ins, attrs):
    x = first(ins, "Input")
    shape = list(attrs["shape"])
    lod = lod_of(x)
    # a sequence batch's size is its number of sequences (of the LoD's last level), as in fluid 1.8
    batch = len(lod[-1]) - 1 if lod and attrs["input_dim_idx"] == 0 else x.shape[attrs["input_dim_idx"]]
    shape[attrs["output_dim_idx"]] = batch
    return {"Out": [torch.full(shape, _fill_value(attrs), dtype=_tdtype(attrs["dtype"]), device=attrs["_device"])]}


register(
    OpDef(
        "fill_constant_batch_size_like",
        ("Input",),
        ("Out",),
        {
            "shape": [],
            "dtype": int(VarType.FP32),
            "value": 0.0,
            "str_value": "",
            "input_dim_idx": 0,
            "output_dim_idx": 0,
            "force_cpu": False,
        },
        _fcbsl_infer,
        _fcbsl_kernel,
        no_buffer_inputs=frozenset({"Input"}),
        cpu_attr="force_cpu",
    )
)


def _fill_any_like_infer(ins, attrs):
    x = first(ins, "X")
    return out("Out", x.shape, x.dtype if attrs.get("dtype", -1) == -1 else attrs["dtype"])


def _fill_any_like_kernel(ins, attrs):
    x = first(ins, "X")
    dtype = x.dtype if attrs["dtype"] == -1 else _tdtype(attrs["dtype"])
    return {"Out": [torch.full_like(x, attrs["value"], dtype=dtype)]}


register(
    OpDef("fill_any_like", ("X",), ("Out",), {"value": 0.0, "dtype": -1}, _fill_any_like_infer, _fill_any_like_kernel)
)
register(
    OpDef(
        "fill_zeros_like",
        ("X",),
        ("Out",),
        {},
        same_as(),
        lambda ins, attrs: {"Out": [torch.zeros_like(ins["X"][0])]},
    )
)


# -- range, linspace -----------------------------------------------------------------------------------
def _scalar(t):
    return t.reshape(-1)[0].item()


def _range_kernel(ins, attrs):
    s, e, st = (ins[k][0] for k in ("Start", "End", "Step"))
    return {"Out": [torch.arange(_scalar(s), _scalar(e), _scalar(st), dtype=s.dtype, device=attrs["_device"])]}


register(
    OpDef(
        "range",
        ("Start", "End", "Step"),
        ("Out",),
        {},
        lambda ins, attrs: out("Out", (-1,), ins["Start"][0].dtype),
        _range_kernel,
        host_inputs=frozenset({"Start", "End", "Step"}),  # read as numbers on the host
    )
)


def _linspace_kernel(ins, attrs):
    s, e, n = (ins[k][0] for k in ("Start", "Stop", "Num"))
    n = int(_scalar(n))
    return {"Out": [torch.linspace(_scalar(s), _scalar(e), n, dtype=s.dtype, device=attrs["_device"])]}


register(
    OpDef(
        "linspace",
        ("Start", "Stop", "Num"),
        ("Out",),
        {},
        lambda ins, attrs: out("Out", (-1,), ins["Start"][0].dtype),
        _linspace_kernel,
        host_inputs=frozenset({"Start", "Stop", "Num"}),  # read as numbers on the host
    )
)


# -- tril_triu -------------------------------------------------------------------------------------
def _tril_triu(ins, a):
    x = _x(ins)
    return {"Out": [torch.tril(x, a["diagonal"]) if a["lower"] else torch.triu(x, a["diagonal"])]}


_op("tril_triu", ("X",), ("Out",), {"diagonal": 0, "lower": False}, same_as(), _tril_triu)


# -- eye, diag, diag_embed, meshgrid ---------------------------------------------------------------
def _eye_infer(ins, a):
    cols = a["num_columns"] if a["num_columns"] >= 0 else a["num_rows"]
    return out("Out", (a["num_rows"], cols), a["dtype"])


def _eye(ins, a):
    cols = a["num_columns"] if a["num_columns"] >= 0 else a["num_rows"]
    return {"Out": [torch.eye(a["num_rows"], cols, dtype=_tdtype(a["dtype"]), device=a["_device"])]}


_op("eye", (), ("Out",), {"num_rows": 0, "num_columns": -1, "dtype": 5}, _eye_infer, _eye, grad=False)


def _diag_infer(ins, a):
    d = first(ins, "Diagonal")
    n = d.shape[0] if d.shape else 1
    return out("Out", (n, n), d.dtype)


_op(
    "diag",
    ("Diagonal",),
    ("Out",),
    {},
    _diag_infer,
    lambda ins, a: {"Out": [torch.diag(ins["Diagonal"][0].reshape(-1))]},
)


def _diag_embed_infer(ins, a):
    x = first(ins, "Input")
    n = x.shape[-1] + abs(a["offset"]) if x.shape[-1] >= 0 else -1
    shape = list(x.shape[:-1])
    rank = len(shape) + 2
    d1, d2 = sorted((norm_axis(a["dim1"], rank), norm_axis(a["dim2"], rank)))
    shape.insert(d1, n)
    shape.insert(d2, n)
    return out("Out", shape, x.dtype)


def _diag_embed(ins, a):
    x = ins["Input"][0]
    return {"Out": [torch.diag_embed(x, a["offset"], a["dim1"], a["dim2"])]}


_op("diag_embed", ("Input",), ("Out",), {"offset": 0, "dim1": -2, "dim2": -1}, _diag_embed_infer, _diag_embed)


def _meshgrid_infer(ins, a):
    xs = ins["X"]
    shape = [x.shape[0] for x in xs]
    return {"Out": [(shape, x.dtype) for x in xs]}


register(
    OpDef(
        "meshgrid",
        ("X",),
        ("Out",),
        {},
        _meshgrid_infer,
        lambda ins, a: {"Out": list(torch.meshgrid(*ins["X"], indexing="ij"))},
        grad=GradDef(),
    )
)


# -- one_hot, one_hot_v2 ---------------------------------------------------------------------------
def _one_hot_kernel(v2):
    def kernel(ins, attrs):
        x = ins["X"][0]
        dt = first(ins, "depth_tensor")
        depth = int(dt.reshape(-1)[0]) if dt is not None else attrs["depth"]
        ids = x.long() if v2 else x.long().squeeze(-1)
        bad = (ids < 0) | (ids >= depth)
        if bool(bad.any()):
            if not attrs["allow_out_of_range"]:  # the first id out of range, in fluid's words
                v = int(ids.reshape(-1)[bad.reshape(-1).nonzero()[0, 0]])
                raise ValueError(
                    "Illegal index value, Input(input) value should be at least 0, but received input "
                    f"({v}) less than 0"
                    if v < 0
                    else "Illegal index value, Input(input) value should be less than Input(depth), but received "
                    f"input ({v}) not less than depth ({depth})"
                )
            r = F.one_hot(torch.where(bad, torch.zeros_like(ids), ids), depth)
            r[bad] = 0
        else:
            r = F.one_hot(ids, depth)
        return {"Out": [r.to(TORCH_DTYPES[VarType(attrs["dtype"])])]}

    return kernel


def _one_hot_infer(v2):
    def infer(ins, attrs):
        x = first(ins, "X")
        depth = -1 if ins.get("depth_tensor") else attrs["depth"]
        if v2:
            shape = tuple(x.shape) + (depth,)
        else:
            if x.shape[-1] != 1 and x.shape[-1] >= 0:
                raise ValueError(f"the last dimension of Input(X) of one_hot must be 1. Received: X.shape={x.shape}")
            shape = tuple(x.shape[:-1]) + (depth,)
        return out("Out", shape, attrs["dtype"])

    return infer


_ONE_HOT_ATTRS = {"depth": -1, "dtype": int(VarType.FP32), "allow_out_of_range": False}
register(
    OpDef(
        "one_hot",
        ("X", "depth_tensor"),
        ("Out",),
        _ONE_HOT_ATTRS,
        _one_hot_infer(False),
        _one_hot_kernel(False),
        host_inputs=frozenset({"depth_tensor"}),
    )
)
register(
    OpDef(
        "one_hot_v2",
        ("X", "depth_tensor"),
        ("Out",),
        _ONE_HOT_ATTRS,
        _one_hot_infer(True),
        _one_hot_kernel(True),
        host_inputs=frozenset({"depth_tensor"}),
    )
)


# -- uniform_random, gaussian_random, truncated_gaussian_random: seeded as fluid 1.8 ---------------
def _generator(attrs, device):
    seed = attrs.get("seed", 0)
    if not seed:
        return None
    return torch.Generator(device=device).manual_seed(int(seed))


def _random_infer(ins, attrs):
    return _fill_constant_infer(ins, attrs)


def seeded_uniform(attrs, shape, device):
    """uniform_random's values: fluid's own for a seed (NOTE: [Seeded draws]), else torch's."""
    dtype = _tdtype(attrs["dtype"])
    if attrs.get("seed"):
        from fluidcompat_ops import fluid_random

        return fluid_random.uniform(attrs["seed"], shape, attrs["min"], attrs["max"], dtype, device)
    return torch.empty(shape, dtype=dtype, device=device).uniform_(attrs["min"], attrs["max"])


def seeded_normal(attrs, shape, device):
    """gaussian_random's values: fluid's own for a seed (NOTE: [Seeded draws]), else torch's."""
    dtype = _tdtype(attrs["dtype"])
    if attrs.get("seed"):
        from fluidcompat_ops import fluid_random

        return fluid_random.normal(attrs["seed"], shape, attrs["mean"], attrs["std"], dtype, device)
    return torch.empty(shape, dtype=dtype, device=device).normal_(attrs["mean"], attrs["std"])


def _uniform_kernel(ins, attrs):
    t = seeded_uniform(attrs, _shape_from(ins, attrs), attrs["_device"])
    if attrs.get("diag_num"):
        flat = t.reshape(-1)
        for i in range(attrs["diag_num"]):
            flat[i * attrs["diag_step"] + i] = attrs["diag_val"]
    return {"Out": [t]}


def _gaussian_kernel(ins, attrs):
    return {"Out": [seeded_normal(attrs, _shape_from(ins, attrs), attrs["_device"])]}


def _truncated_kernel(ins, attrs):
    dev = attrs["_device"]
    mean, std = attrs["mean"], attrs["std"]
    if attrs.get("seed"):  # fluid's own values (NOTE: [Seeded draws])
        from fluidcompat_ops import fluid_random

        return {
            "Out": [
                fluid_random.truncated_normal(attrs["seed"], attrs["shape"], mean, std, _tdtype(attrs["dtype"]), dev)
            ]
        }
    t = torch.empty(list(attrs["shape"]), dtype=_tdtype(attrs["dtype"]), device=dev)
    # fluid truncates at two standard deviations
    torch.nn.init.trunc_normal_(t, mean, std, mean - 2 * std, mean + 2 * std)
    return {"Out": [t]}


_RANDOM_SLOTS = ("ShapeTensor", "ShapeTensorList")
register(
    OpDef(
        "uniform_random",
        _RANDOM_SLOTS,
        ("Out",),
        {
            "shape": [],
            "dtype": int(VarType.FP32),
            "min": -1.0,
            "max": 1.0,
            "seed": 0,
            "diag_num": 0,
            "diag_step": 0,
            "diag_val": 1.0,
        },
        _random_infer,
        _uniform_kernel,
        host_inputs=frozenset(_RANDOM_SLOTS),
    )
)
register(
    OpDef(
        "gaussian_random",
        _RANDOM_SLOTS,
        ("Out",),
        {"shape": [], "dtype": int(VarType.FP32), "mean": 0.0, "std": 1.0, "seed": 0},
        _random_infer,
        _gaussian_kernel,
        host_inputs=frozenset(_RANDOM_SLOTS),
    )
)
register(
    OpDef(
        "truncated_gaussian_random",
        (),
        ("Out",),
        {"shape": [], "dtype": int(VarType.FP32), "mean": 0.0, "std": 1.0, "seed": 0},
        lambda ins, attrs: out("Out", attrs["shape"], attrs["dtype"]),
        _truncated_kernel,
    )
)


# -- randint, randperm, the batch-size-like random ops, sampling_id --------------------------------
def _randint(ins, a):
    shape = _shape_from(ins, a)
    if a["seed"]:  # fluid's own numbers (NOTE: [Seeded draws])
        from fluidcompat_ops import fluid_random

        got = fluid_random.randint(a["seed"], shape, a["low"], a["high"], _tdtype(a["dtype"]), a["_device"])
        if got is not None:
            return {"Out": [got]}
    return {
        "Out": [
            torch.randint(
                a["low"],
                a["high"],
                shape,
                generator=_generator(a, a["_device"]),
                dtype=_tdtype(a["dtype"]),
                device=a["_device"],
            )
        ]
    }


_op(
    "randint",
    ("ShapeTensor", "ShapeTensorList"),
    ("Out",),
    {"shape": [], "low": 0, "high": 0, "seed": 0, "dtype": 3},
    lambda ins, a: _fill_constant_infer(ins, a),
    _randint,
    grad=False,
    host_inputs=frozenset({"ShapeTensor", "ShapeTensorList"}),
)


def _randperm(ins, a):
    if a["seed"]:  # fluid's own permutation (NOTE: [Seeded draws])
        from fluidcompat_ops import fluid_random

        p = torch.tensor(fluid_random.randperm(a["seed"], a["n"]), device=a["_device"])
    else:
        p = torch.randperm(a["n"], device=a["_device"])
    return {"Out": [p.to(_tdtype(a["dtype"]))]}


_op(
    "randperm",
    (),
    ("Out",),
    {"n": 1, "seed": 0, "dtype": 3},
    lambda ins, a: out("Out", (a["n"],), a["dtype"]),
    _randperm,
    grad=False,
)


def _bsl_shape(ins, a):
    x = ins["Input"][0]
    shape = list(a["shape"])
    shape[a["output_dim_idx"]] = x.shape[a["input_dim_idx"]]
    return shape


def _bsl_infer(ins, a):
    x = first(ins, "Input")
    shape = list(a["shape"])
    shape[a["output_dim_idx"]] = x.shape[a["input_dim_idx"]]
    return out("Out", shape, a["dtype"])


def _uniform_bsl(ins, a):
    shape = _bsl_shape(ins, a)
    return {"Out": [seeded_uniform(a, shape, a["_device"])]}


def _gaussian_bsl(ins, a):
    shape = _bsl_shape(ins, a)
    return {"Out": [seeded_normal(a, shape, a["_device"])]}


_BSL = {"shape": [], "input_dim_idx": 0, "output_dim_idx": 0, "seed": 0, "dtype": 5}
_op(
    "uniform_random_batch_size_like",
    ("Input",),
    ("Out",),
    dict(_BSL, min=-1.0, max=1.0),
    _bsl_infer,
    _uniform_bsl,
    grad=False,
    no_buffer_inputs=frozenset({"Input"}),
)
_op(
    "gaussian_random_batch_size_like",
    ("Input",),
    ("Out",),
    dict(_BSL, mean=0.0, std=1.0),
    _bsl_infer,
    _gaussian_bsl,
    grad=False,
    no_buffer_inputs=frozenset({"Input"}),
)


def _sampling_id(ins, a):
    x = _x(ins)
    if a["seed"]:  # fluid's own draws (NOTE: [Seeded draws])
        from fluidcompat_ops import fluid_random

        r = fluid_random.uniform(a["seed"], [x.shape[0]], a["min"], a["max"], x.dtype, x.device)
    else:
        r = torch.empty(x.shape[0], dtype=x.dtype, device=x.device).uniform_(a["min"], a["max"])
    # fluid took the first id whose probabilities so far exceed the draw (else the last)
    cdf = torch.cumsum(x, 1)
    idx = torch.sum(cdf <= r[:, None], 1).clamp(max=x.shape[1] - 1)
    return {"Out": [idx.to(torch.int64)]}


_op(
    "sampling_id",
    ("X",),
    ("Out",),
    {"min": 0.0, "max": 1.0, "seed": 0},
    # the declared dtype stays (fluid's shape function set none): float32 by default, int64 ids when run
    lambda ins, a: {"Out": [((first(ins, "X").shape[0],), None)]},
    _sampling_id,
    grad=False,
)


# -- sequence_mask ---------------------------------------------------------------------------------
def _sequence_mask(ins, a):
    """Y[..., j] = j < X[...], for j below maxlen (MaxLenTensor, the attribute, or X's largest value)."""
    x = _x(ins)
    limit = first(ins, "MaxLenTensor")
    maxlen = int(limit.reshape(-1)[0]) if limit is not None else a["maxlen"]
    if maxlen < 0:
        maxlen = int(x.max()) if x.numel() else 0
    steps = torch.arange(maxlen, device=x.device, dtype=x.dtype)
    return {"Y": [(steps < x.unsqueeze(-1)).to(_tdtype(a["out_dtype"]))]}


def _sequence_mask_infer(ins, a):
    x = first(ins, "X")
    maxlen = -1 if first(ins, "MaxLenTensor") is not None else a["maxlen"]
    return {"Y": [(tuple(x.shape) + (maxlen,), a["out_dtype"])]}


_op(
    "sequence_mask",
    ("X", "MaxLenTensor"),
    ("Y",),
    {"maxlen": -1, "out_dtype": 3},
    _sequence_mask_infer,
    _sequence_mask,
    grad=False,
    host_inputs=frozenset({"MaxLenTensor"}),
)
