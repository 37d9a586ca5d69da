# Golden script: 3-D convolution, pooling and resizing with their padding forms ('SAME' with a dilation,
# 'VALID', per-dim pairs, asymmetric), ceil_mode and align modes: each output and the gradient of a
# weighted sum of it with respect to the input, summarised.
import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
rng = np.random.RandomState(0)
X4 = rng.uniform(-1, 1, (2, 4, 5, 5, 5)).astype("float32")
X4h = np.zeros((1,), "float32")
C = fluid.initializer.NumpyArrayInitializer


def W(shape, seed):
    return fluid.ParamAttr(initializer=C(np.random.RandomState(seed).uniform(-0.5, 0.5, shape).astype("float32")))


cases = {
    "conv3d_same_dil": lambda x, xh: L.conv3d(x, 3, 3, padding="SAME", dilation=2, param_attr=W((3, 4, 3, 3, 3), 1)),
    "conv3d_valid_stride": lambda x, xh: L.conv3d(x, 3, 3, stride=2, padding="VALID", param_attr=W((3, 4, 3, 3, 3), 2)),
    "conv3d_pairs": lambda x, xh: L.conv3d(
        x, 3, 2, padding=[[0, 0], [0, 0], [1, 1], [0, 0], [2, 2]], param_attr=W((3, 4, 2, 2, 2), 3)
    ),
    "conv3d_dil": lambda x, xh: L.conv3d(x, 3, 3, padding=[1, 2, 0], dilation=2, param_attr=W((3, 4, 3, 3, 3), 4)),
    "conv3d_t": lambda x, xh: L.conv3d_transpose(
        x, 3, filter_size=3, stride=2, padding=1, output_size=[10, 10, 10], param_attr=W((4, 3, 3, 3, 3), 5)
    ),
    "pool3d_avg_ceil": lambda x, xh: L.pool3d(x, 3, "avg", 2, pool_padding=1, ceil_mode=True, exclusive=False),
    "pool3d_avg_ceil_excl": lambda x, xh: L.pool3d(x, 3, "avg", 2, pool_padding=1, ceil_mode=True),
    "pool3d_max_ceil": lambda x, xh: L.pool3d(x, 2, "max", 2, pool_padding=[0, 1, 1], ceil_mode=True),
    "pool3d_max_same": lambda x, xh: L.pool3d(x, 3, "max", 2, pool_padding="SAME"),
    "pool3d_avg_valid": lambda x, xh: L.pool3d(x, 2, "avg", 2, pool_padding="VALID"),
    "trilinear_am1": lambda x, xh: L.resize_trilinear(x, out_shape=[7, 6, 4], align_corners=False, align_mode=1),
    "trilinear_am0": lambda x, xh: L.resize_trilinear(x, out_shape=[7, 6, 4], align_corners=False, align_mode=0),
    "trilinear_ac": lambda x, xh: L.resize_trilinear(x, scale=1.5),
}
res = {}


def summary(v):
    """Shape, sum, weighted sum and every 7th value: enough to tell two results apart."""
    flat = v.ravel().astype("float64")
    weights = np.cos(np.arange(flat.size))
    return [list(v.shape), float(flat.sum()), float((flat * weights).sum()), flat[::7].round(5).tolist()]


for name, fn in cases.items():
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        x = fluid.data("x", [2, 4, 5, 5, 5], "float32")
        x.stop_gradient = False
        xh = fluid.data("xh", [1], "float32")
        xh.stop_gradient = False
        try:
            out = fn(x, xh)
        except Exception as e:  # noqa: BLE001
            res[name] = "BUILD " + type(e).__name__
            continue
        wts = (
            L.assign(np.random.RandomState(99).uniform(-1, 1, [int(d) for d in out.shape]).astype("float32"))
            if -1 not in out.shape
            else None
        )
        loss = L.reduce_sum(out * wts)
        grads = fluid.gradients([loss], [x])
    exe = fluid.Executor(fluid.CPUPlace())
    sc = fluid.Scope()
    with fluid.scope_guard(sc):
        exe.run(start)
        try:
            fetch = [out] + [g for g in grads if g is not None]
            r = exe.run(main, feed={"x": X4, "xh": X4h}, fetch_list=fetch)
            res[name] = [list(out.shape)] + [summary(np.asarray(v)) for v in r]
        except Exception as e:  # noqa: BLE001
            res[name] = "RUN " + [l for l in str(e).splitlines() if l.strip()][-1][:200]
print(json.dumps(res))
