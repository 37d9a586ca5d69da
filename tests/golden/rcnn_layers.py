"""Faster/Cascade R-CNN with FPN, as fluid 1.8 scripts built them: generate_proposals (pre- and
post-NMS top-N, min_size filtering with the image scale, eta, rois per image), distribute_fpn_proposals
(levels and the restore index), collect_fpn_proposals (top-N over levels) and box_decoder_and_assign
(the best class's box, or the prior where only the background scores). Prints JSON; run under
fluid 1.8.5 (tools/fluid18) it wrote rcnn_layers.json."""
# ruff: noqa: E501  (each case on a line or two, as the layer calls read)

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
place = fluid.CPUPlace()
rng = np.random.RandomState(11)
results = {}


def flat(r):
    a = np.array(r)
    return [r.lod(), list(a.shape)] + np.round(a.reshape(-1).astype("float64"), 4).tolist()


def run(name, build, feed, lods=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        outs = build()
    feed = {k: fluid.create_lod_tensor(v, lods[k], place) if lods and k in lods else v for k, v in feed.items()}
    results[name] = [flat(r) for r in fluid.Executor(place).run(main, feed=feed, fetch_list=outs, return_numpy=False)]


def data(name, shape, dtype="float32", lod_level=0):
    return fluid.data(name, shape, dtype, lod_level=lod_level)


# anchors of a 4x5 map, stride 8, 3 per cell
A, H, W = 3, 4, 5
cells = np.stack(np.meshgrid(np.arange(W) * 8.0, np.arange(H) * 8.0), -1)  # [H, W, 2] (x, y)
sizes = np.array([[8, 8], [16, 12], [12, 20]], "float32")
ANCHORS = np.concatenate([cells[:, :, None, :] - sizes / 2 + 4, cells[:, :, None, :] + sizes / 2 + 3], -1).astype(
    "float32"
)
VARS = np.tile(np.array([0.1, 0.1, 0.2, 0.2], "float32"), (H, W, A, 1))
SCORES = rng.uniform(0, 1, (2, A, H, W)).astype("float32")
DELTAS = rng.uniform(-1, 1, (2, 4 * A, H, W)).astype("float32")
IM_INFO = np.array([[32, 40, 1.0], [30, 36, 1.5]], "float32")
gp_in = lambda: (
    data("s", [None, A, H, W]),
    data("d", [None, 4 * A, H, W]),
    data("im", [None, 3]),
    data("a", [H, W, A, 4]),
    data("v", [H, W, A, 4]),
)  # noqa: E731
feed = {"s": SCORES, "d": DELTAS, "im": IM_INFO, "a": ANCHORS, "v": VARS}
run(
    "generate_proposals",
    lambda: list(
        L.generate_proposals(
            *gp_in(), pre_nms_top_n=30, post_nms_top_n=12, nms_thresh=0.5, min_size=2.0, return_rois_num=True
        )
    ),
    feed,
)
run(
    "generate_proposals_all_eta",
    lambda: list(
        L.generate_proposals(*gp_in(), pre_nms_top_n=-1, post_nms_top_n=-1, nms_thresh=0.7, min_size=0.1, eta=0.9)
    ),
    feed,
)
run(
    "generate_proposals_big_min",
    lambda: list(L.generate_proposals(*gp_in(), pre_nms_top_n=20, post_nms_top_n=5, nms_thresh=0.4, min_size=14.0)),
    feed,
)

xy = rng.uniform(0, 150, (9, 2))
wh = np.array([[4, 5], [20, 30], [60, 40], [120, 150], [200, 260], [10, 9], [35, 70], [300, 400], [80, 90]], "float64")
FPN_ROIS = np.concatenate([xy, xy + wh], 1).astype("float32")


def distribute():
    multi, restore = L.distribute_fpn_proposals(data("r", [None, 4], lod_level=1), 2, 5, 4, 224)
    return multi + [restore]


run("distribute_fpn_proposals", distribute, {"r": FPN_ROIS}, {"r": [[5, 4]]})


def collect(top):
    rois = [data("r%d" % i, [None, 4], lod_level=1) for i in range(3)]
    scores = [data("s%d" % i, [None, 1], lod_level=1) for i in range(3)]
    return [L.collect_fpn_proposals(rois, scores, 2, 4, top)]


COLLECT = {"r%d" % i: FPN_ROIS[3 * i : 3 * i + 3] for i in range(3)}
COLLECT.update({"s%d" % i: rng.uniform(0, 1, (3, 1)).astype("float32") for i in range(3)})
lods = {k: [[2, 1]] if k.endswith("0") else [[1, 2]] for k in COLLECT}
run("collect_fpn_proposals", lambda: collect(5), COLLECT, lods)
run("collect_fpn_proposals_all", lambda: collect(20), COLLECT, lods)

PRIOR = FPN_ROIS[:4]
BOX_SCORE = np.array([[0.9, 0.05, 0.05], [0.1, 0.3, 0.6], [0.2, 0.5, 0.3], [0.4, 0.4, 0.2]], "float32")
run(
    "box_decoder_and_assign",
    lambda: list(
        L.box_decoder_and_assign(
            data("p", [None, 4], lod_level=1),
            data("pv", [4]),
            data("t", [None, 12], lod_level=1),
            data("sc", [None, 3], lod_level=1),
            1.5,
        )
    ),
    {
        "p": PRIOR,
        "pv": np.array([0.1, 0.1, 0.2, 0.2], "float32"),
        "t": rng.uniform(-2, 2, (4, 12)).astype("float32"),
        "sc": BOX_SCORE,
    },
    {"p": [[3, 1]], "t": [[3, 1]], "sc": [[3, 1]]},
)
print(json.dumps(results, sort_keys=True))
