"""deformable_conv (modulated, DCN v2) and deformable_conv_v1 (offsets only): outputs and the
gradients of a loss for the input, offsets, mask, filter and bias, with groups, deformable_groups,
stride, dilation and padding, offsets that move taps outside the image. im2col_step=1 throughout:
with fluid 1.8.5's default (64) and a batch of 2 its CPU kernel gave wrong outputs (measured: zeros
and values off by up to 2.4; fluidcompat gives the same with any im2col_step). Prints JSON; run under
fluid 1.8.5 (tools/fluid18) it wrote deformable_conv.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
results = {}
CASES = (
    # name, N, C, H, W, filters, kernel, stride, padding, dilation, groups, deformable_groups, modulated
    ("v2_groups", 2, 4, 5, 6, 4, 3, 1, 1, 1, 2, 2, True),
    ("v2_stride_dilation", 1, 2, 7, 6, 3, [3, 2], 2, [2, 1], 2, 1, 1, True),
    ("v1_deformable_groups", 2, 4, 5, 5, 2, 3, 1, 1, 1, 1, 2, False),
)
for name, n, c, h, w, filters, k, stride, pad, dil, groups, dg, modulated in CASES:
    kh, kw = (k, k) if isinstance(k, int) else k
    sh = stride if isinstance(stride, int) else stride[0]
    ph, pw = (pad, pad) if isinstance(pad, int) else pad
    oh = (h + 2 * ph - (dil * (kh - 1) + 1)) // sh + 1
    ow = (w + 2 * pw - (dil * (kw - 1) + 1)) // sh + 1
    rng = np.random.RandomState(len(name))
    feed = {
        "x": rng.uniform(-1, 1, (n, c, h, w)).astype("float32"),
        "off": rng.uniform(-2.5, 2.5, (n, 2 * dg * kh * kw, oh, ow)).astype("float32"),
        "mask": rng.uniform(0, 1, (n, dg * kh * kw, oh, ow)).astype("float32"),
    }
    weight = rng.uniform(-1, 1, (filters, c // groups, kh, kw)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [n, c, h, w], "float32")
        off = fluid.data("off", [n, 2 * dg * kh * kw, oh, ow], "float32")
        mask = fluid.data("mask", [n, dg * kh * kw, oh, ow], "float32") if modulated else None
        for v in (x, off, mask):
            if v is not None:
                v.stop_gradient = False
        y = L.deformable_conv(
            x, off, mask, filters, k, stride=stride, padding=pad, dilation=dil, groups=groups,
            deformable_groups=dg, im2col_step=1, modulated=modulated,
            param_attr=fluid.ParamAttr(name="dc_w", initializer=fluid.initializer.NumpyArrayInitializer(weight)),
            bias_attr=fluid.ParamAttr(name="dc_b", initializer=fluid.initializer.Constant(0.25)),
        )  # fmt: skip
        loss = L.reduce_sum(
            y * y * L.assign(np.linspace(-1, 1, y.shape[1] * oh * ow).reshape(y.shape[1:]).astype("float32"))
        )
        fluid.backward.append_backward(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    if not modulated:
        feed.pop("mask")
    names = ["x@GRAD", "off@GRAD"] + (["mask@GRAD"] if modulated else []) + ["dc_w@GRAD", "dc_b@GRAD"]
    rs = exe.run(main, feed=feed, fetch_list=[y] + names)
    results[name] = [[list(r.shape)] + np.round(r.reshape(-1).astype("float64"), 6).tolist() for r in rs]
print(json.dumps(results, sort_keys=True))
