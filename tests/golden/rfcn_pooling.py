"""R-FCN pooling: psroi_pool (two spatial scales) and deformable_roi_pooling (position-sensitive
with groups, not position-sensitive with parts and two classes of offsets, and no_trans), over rois
in two images (a LoDTensor), rois reaching outside the map and a one-pixel roi: the outputs and the
gradients of a weighted sum of squares for the input and the offsets. fluid 1.8.5's
deformable_roi_pooling failed with position_sensitive=True (it passed the channel count as a float:
"Cannot get attribute output_dim by type int", and the program was left unusable), so for that case
this script appends the op itself with an int output_dim. For that case only the output is recorded:
fluid 1.8.5's gradients there disagreed with finite differences of its own output (measured: by up
to 0.36 for the input and 1.75 for the offsets); tests/test_grads.py checks fluidcompat's by finite
differences. Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote rfcn_pooling.json."""

import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.layer_helper import LayerHelper

L = fluid.layers
place = fluid.CPUPlace()
ROIS = np.array([[0.4, 1.6, 5.5, 4.4], [2, 2, 2, 2], [-3, 1, 12, 9.6], [6.5, 5.5, 7.4, 6.2], [1, 1, 3, 8]], "float32")
results = {}


def weighted_loss(y):
    shape = [int(d) for d in y.shape[1:]]
    weights = np.linspace(-1, 1, int(np.prod(shape))).reshape(shape).astype("float32")
    return L.reduce_sum(y * y * L.assign(weights))


def run(main, feed, fetch):
    exe = fluid.Executor(place)
    feed = dict(feed, rois=fluid.create_lod_tensor(ROIS, [[3, 2]], place))
    return [
        [list(r.shape)] + np.round(r.reshape(-1).astype("float64"), 6).tolist()
        for r in exe.run(main, feed=feed, fetch_list=fetch)
    ]


rng = np.random.RandomState(5)
x = rng.uniform(-1, 1, (2, 12, 7, 8)).astype("float32")
for scale in (1.0, 0.6):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        xv = fluid.data("x", [2, 12, 7, 8], "float32")
        xv.stop_gradient = False
        rois = fluid.data("rois", [None, 4], "float32", lod_level=1)
        y = L.psroi_pool(xv, rois, 2, scale, 2, 3)
        fluid.backward.append_backward(weighted_loss(y))
    results["psroi_pool_%s" % scale] = run(main, {"x": x}, [y, "x@GRAD"])


def deformable_psroi(xv, rois, trans, no_trans, group, ph, pw, part, spp, ps):
    kw = dict(no_trans=no_trans, spatial_scale=0.8, group_size=group, pooled_height=ph, pooled_width=pw,
              part_size=part, sample_per_part=spp, trans_std=0.2)  # fmt: skip
    if not ps:
        return L.deformable_roi_pooling(xv, rois, trans, **kw)
    if True:  # the op as the layer should have appended it
        helper = LayerHelper("deformable_psroi_pooling")
        y = helper.create_variable_for_type_inference("float32")
        count = helper.create_variable_for_type_inference("float32")
        attrs = dict(kw, output_dim=int(xv.shape[1]) // (ph * pw), part_size=part or [ph, pw])
        helper.append_op(
            type="deformable_psroi_pooling",
            inputs={"Input": xv, "ROIs": rois, "Trans": trans},
            outputs={"Output": y, "TopCount": count},
            attrs=attrs,
        )
        return y


for name, c, ps, group, part, ph, pw, spp, no_trans, classes in (
    ("position_sensitive", 12, True, [2, 3], None, 2, 3, 2, False, 1),
    ("parts_two_classes", 4, False, [1, 1], [2, 2], 3, 3, 3, False, 2),
    ("no_trans", 4, False, [1, 1], None, 2, 2, 1, True, 1),
):
    shape = part or [ph, pw]
    feed = {
        "x": rng.uniform(-1, 1, (2, c, 7, 8)).astype("float32"),
        "trans": rng.uniform(-1, 1, (5, 2 * classes, shape[0], shape[1])).astype("float32"),
    }
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        xv = fluid.data("x", [2, c, 7, 8], "float32")
        rois = fluid.data("rois", [None, 4], "float32", lod_level=1)
        trans = fluid.data("trans", [None, 2 * classes] + shape, "float32")
        xv.stop_gradient = trans.stop_gradient = False
        y = deformable_psroi(xv, rois, trans, no_trans, group, ph, pw, part, spp, ps)
        fluid.backward.append_backward(weighted_loss(y))
    grads = [] if ps else ["x@GRAD"] + ([] if no_trans else ["trans@GRAD"])
    results["deformable_" + name] = run(main, feed, [y] + grads)
print(json.dumps(results, sort_keys=True))
