"""SSD training and inference as fluid 1.8 scripts wrote them: multi_box_head over three feature maps
(sizes from min_ratio/max_ratio) and over two (given sizes, steps), ssd_loss on its outputs (the loss
and the gradients of the head's convolution weights after mining hard negatives, normalized and not,
prior variances as a tensor and as a list), detection_output on the same head, and mine_hard_examples alone
in both mining modes. Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote ssd_layers.json."""
# ruff: noqa: E501  (each case on a line or two, as the layer calls read)

import json

import numpy as np
import paddle.fluid as fluid
from _golden import flat
from paddle.fluid.layer_helper import LayerHelper

L = fluid.layers
place = fluid.CPUPlace()
results = {}


def head(feats, img, **kw):
    return L.multi_box_head(feats, img, base_size=32, num_classes=3, **kw)


GT_BOX = np.array([[0.1, 0.1, 0.5, 0.6], [0.5, 0.4, 0.9, 0.95], [0.2, 0.3, 0.7, 0.7]], "float32")
GT_LABEL = np.array([[1], [2], [1]], "int32")
CASES = (
    (
        "three_maps",
        [(8, 4), (8, 2), (8, 1)],
        dict(aspect_ratios=[[2.0], [2.0, 3.0], [2.0]], min_ratio=20, max_ratio=90),
        {},
    ),
    (
        "two_maps_steps",
        [(8, 4), (8, 2)],
        dict(
            aspect_ratios=[[2.0], [2.0]],
            min_sizes=[6.0, 14.0],
            max_sizes=[12.0, 24.0],
            steps=[8.0, 16.0],
            flip=False,
            clip=True,
            kernel_size=3,
            pad=1,
        ),
        dict(normalize=False, neg_pos_ratio=2.0),
    ),
    (
        "variance_list",
        [(8, 4), (8, 2)],
        dict(aspect_ratios=[[2.0], [3.0]], min_sizes=[8.0, 12.0], max_sizes=[16.0, 20.0]),
        dict(prior_box_var=[0.1, 0.1, 0.2, 0.2], background_label=0, overlap_threshold=0.3),
    ),
)
for name, maps, head_kw, loss_kw in CASES:
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup):
        img = fluid.data("img", [None, 3, 32, 32], "float32")
        feats = [fluid.data("f%d" % i, [None, c, s, s], "float32") for i, (c, s) in enumerate(maps)]
        loc, conf, box, var = head(feats, img, **head_kw)
        gt_box = fluid.data("gt_box", [None, 4], "float32", lod_level=1)
        gt_label = fluid.data("gt_label", [None, 1], "int32", lod_level=1)
        kw = dict(loss_kw)
        prior_var = var if "prior_box_var" not in kw else kw.pop("prior_box_var")
        loss = L.ssd_loss(loc, conf, gt_box, gt_label, box, prior_var, **kw)
        total = L.reduce_sum(loss)
        fluid.backward.append_backward(total)
        nmsed = L.detection_output(loc, conf, box, var, score_threshold=0.2, nms_top_k=5, keep_top_k=6)
    exe = fluid.Executor(place)
    exe.run(startup)
    params = sorted(p.name for p in main.global_block().all_parameters())
    for p in params:
        t = fluid.global_scope().find_var(p).get_tensor()
        shape = np.array(t).shape
        t.set(np.random.RandomState(len(p) + shape[0]).uniform(-0.3, 0.3, shape).astype("float32"), place)
    rng = np.random.RandomState(3)
    feed = {
        "img": np.zeros((2, 3, 32, 32), "float32"),
        "gt_box": fluid.create_lod_tensor(GT_BOX, [[2, 1]], place),
        "gt_label": fluid.create_lod_tensor(GT_LABEL, [[2, 1]], place),
    }
    for i, (c, s) in enumerate(maps):
        feed["f%d" % i] = rng.uniform(-1, 1, (2, c, s, s)).astype("float32")
    fetch = [loc, conf, box, var, loss, nmsed] + [p + "@GRAD" for p in params if p.endswith("w_0")]
    results[name] = [flat(r) for r in exe.run(main, feed=feed, fetch_list=fetch, return_numpy=False)]

# mine_hard_examples alone
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    cls = fluid.data("cls", [2, 6], "float32")
    loc_loss = fluid.data("loc_loss", [2, 6], "float32")
    mi = fluid.data("mi", [2, 6], "int32")
    md = fluid.data("md", [2, 6], "float32")
    outs = []
    for mining, extra in (("max_negative", {}), ("hard_example", {"LocLoss": loc_loss})):
        helper = LayerHelper("mine_hard_examples")
        neg = helper.create_variable_for_type_inference("int32")
        upd = helper.create_variable_for_type_inference("int32")
        helper.append_op(
            type="mine_hard_examples",
            inputs=dict({"ClsLoss": cls, "MatchIndices": mi, "MatchDist": md}, **extra),
            outputs={"NegIndices": neg, "UpdatedMatchIndices": upd},
            attrs={"neg_pos_ratio": 1.5, "neg_dist_threshold": 0.4, "mining_type": mining, "sample_size": 4},
        )
        outs += [neg, upd]
feed = {
    "cls": np.array([[0.9, 0.1, 0.5, 0.7, 0.3, 0.8], [0.2, 0.6, 0.4, 0.95, 0.15, 0.05]], "float32"),
    "loc_loss": np.array([[0.0, 0.5, 0.1, 0.0, 0.2, 0.05], [0.3, 0.0, 0.2, 0.0, 0.0, 0.9]], "float32"),
    "mi": np.array([[-1, 0, -1, -1, 1, -1], [2, -1, -1, -1, 0, -1]], "int32"),
    "md": np.array([[0.1, 0.7, 0.45, 0.2, 0.6, 0.3], [0.8, 0.1, 0.3, 0.39, 0.9, 0.2]], "float32"),
}
results["mine_hard_examples"] = [
    flat(r) for r in fluid.Executor(place).run(main, feed=feed, fetch_list=outs, return_numpy=False)
]
print(json.dumps(results, sort_keys=True))
