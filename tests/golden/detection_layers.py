"""fluid.layers.detection: iou_similarity, box_coder (encode with a variance list and a LoD target,
decode with a variance tensor, axis 0 and 1, unnormalized), prior_box (flip, clip, max sizes, both
orders), density_prior_box, anchor_generator, box_clip (LoD boxes: fluid 1.8.5
crashed on a [N, M, 4] tensor), yolo_box (clip, scale_x_y), sigmoid_focal_loss
(and its gradient), polygon_box_transform, multiclass_nms (top-k, keep-top-k, eta, an image with no
detection, all images without), detection_output, bipartite_match (bipartite and per_prediction) and
target_assign (with negatives). Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote
detection_layers.json."""
# ruff: noqa: E501  (each case on a line or two, as the layer calls read)

import json

import numpy as np
import paddle.fluid as fluid
from _golden import flat

L = fluid.layers
place = fluid.CPUPlace()
rng = np.random.RandomState(7)
results = {}


def run(name, build, feed, lods=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        outs = build()
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    exe = fluid.Executor(place)
    exe.run(startup)
    feed = {k: fluid.create_lod_tensor(v, lods[k], place) if lods and k in lods else v for k, v in feed.items()}
    results[name] = [flat(r) for r in exe.run(main, feed=feed, fetch_list=outs, return_numpy=False)]


def data(name, shape, dtype="float32", lod_level=0):
    return fluid.data(name, shape, dtype, lod_level=lod_level)


def boxes(n, size=10.0):
    xy = rng.uniform(0, size * 0.7, (n, 2))
    wh = rng.uniform(size * 0.05, size * 0.4, (n, 2))
    return np.concatenate([xy, xy + wh], 1).astype("float32")


X4, Y4 = boxes(5) / 10, boxes(3) / 10
run(
    "iou",
    lambda: L.iou_similarity(data("x", [None, 4], lod_level=1), data("y", [3, 4])),
    {"x": X4, "y": Y4},
    {"x": [[2, 3]]},
)
run("iou_unnormalized", lambda: L.iou_similarity(data("x", [None, 4]), data("y", [3, 4]), box_normalized=False),
    {"x": X4 * 10, "y": Y4 * 10})  # fmt: skip

PRIOR, PRIOR_VAR = boxes(4) / 10, rng.uniform(0.1, 0.3, (4, 4)).astype("float32")
run("box_coder_encode", lambda: L.box_coder(data("p", [4, 4]), [0.1, 0.1, 0.2, 0.2], data("t", [None, 4], lod_level=1)),
    {"p": PRIOR, "t": X4}, {"t": [[2, 3]]})  # fmt: skip
run("box_coder_encode_var_unnorm",
    lambda: L.box_coder(data("p", [4, 4]), data("pv", [4, 4]), data("t", [None, 4]), box_normalized=False),
    {"p": PRIOR * 10, "pv": PRIOR_VAR, "t": X4 * 10})  # fmt: skip
DELTA = rng.uniform(-1, 1, (3, 4, 4)).astype("float32")
run("box_coder_decode", lambda: L.box_coder(data("p", [4, 4]), data("pv", [4, 4]), data("t", [3, 4, 4]), code_type="decode_center_size"),
    {"p": PRIOR, "pv": PRIOR_VAR, "t": DELTA})  # fmt: skip
run("box_coder_decode_axis1",
    lambda: L.box_coder(data("p", [3, 4]), [0.1, 0.1, 0.2, 0.2], data("t", [3, 4, 4]), code_type="decode_center_size", axis=1, box_normalized=False),
    {"p": PRIOR[:3] * 10, "t": DELTA})  # fmt: skip

FEAT, IMG = np.zeros((1, 2, 3, 4), "float32"), np.zeros((1, 3, 30, 44), "float32")
fi = lambda: (data("f", [None, 2, 3, 4]), data("img", [None, 3, 30, 44]))  # noqa: E731
run("prior_box", lambda: L.prior_box(*fi(), [4.0, 9.0], [12.0, 15.0], [2.0, 3.0], flip=True, clip=True),
    {"f": FEAT, "img": IMG})  # fmt: skip
run("prior_box_order_steps",
    lambda: L.prior_box(*fi(), [6.0], [10.0], [2.0], flip=False, steps=[8.0, 12.0], offset=0.3, min_max_aspect_ratios_order=True,
                        variance=[0.1, 0.2, 0.3, 0.4]),
    {"f": FEAT, "img": IMG})  # fmt: skip
run("density_prior_box", lambda: L.density_prior_box(*fi(), [3, 2], [8.0, 16.0], [1.0, 2.0], clip=True),
    {"f": FEAT, "img": IMG})  # fmt: skip
run("density_prior_box_flat", lambda: L.density_prior_box(*fi(), [2], [20.0], [0.5], steps=[9.0, 11.0], flatten_to_2d=True),
    {"f": FEAT, "img": IMG})  # fmt: skip
run("anchor_generator", lambda: L.anchor_generator(data("f", [None, 2, 3, 4]), [32.0, 64.0], [0.5, 1.0, 2.0], stride=[16.0, 12.0]),
    {"f": FEAT})  # fmt: skip
run("anchor_generator_offset", lambda: L.anchor_generator(data("f", [None, 2, 3, 4]), [20.0], [1.5], stride=[8.0, 8.0], offset=0.2,
                                                          variance=[1.0, 1.0, 1.0, 1.0]),
    {"f": FEAT})  # fmt: skip

IM_INFO = np.array([[30, 40, 2.0], [25, 26, 1.0]], "float32")
run("box_clip", lambda: L.box_clip(data("b", [None, 4], lod_level=1), data("im", [2, 3])),
    {"b": boxes(5, 40) - 5, "im": IM_INFO}, {"b": [[3, 2]]})  # fmt: skip

YX = rng.uniform(-2, 2, (2, 2 * 7, 3, 4)).astype("float32")
SIZES = np.array([[96, 128], [64, 90]], "int32")
run("yolo_box", lambda: L.yolo_box(data("x", [None, 14, 3, 4]), data("sz", [None, 2], "int32"), [10, 13, 30, 20], 2, 0.3, 32),
    {"x": YX, "sz": SIZES})  # fmt: skip
run("yolo_box_noclip_scale", lambda: L.yolo_box(data("x", [None, 14, 3, 4]), data("sz", [None, 2], "int32"), [10, 13, 30, 20], 2, 0.01, 16,
                                                clip_bbox=False, scale_x_y=1.2),
    {"x": YX, "sz": SIZES})  # fmt: skip


def focal():
    x = data("x", [None, 3])
    x.stop_gradient = False
    out = L.sigmoid_focal_loss(x, data("l", [None, 1], "int32"), data("fg", [1], "int32"), gamma=1.5, alpha=0.3)
    fluid.backward.append_backward(L.reduce_sum(out))
    return out, "x@GRAD"


run("sigmoid_focal_loss", focal, {"x": rng.uniform(-3, 3, (5, 3)).astype("float32"), "l": np.array([[0], [2], [3], [1], [-1]], "int32"),
                                  "fg": np.array([3], "int32")})  # fmt: skip
run("polygon_box_transform", lambda: L.polygon_box_transform(data("x", [None, 4, 2, 3])),
    {"x": rng.uniform(-1, 1, (2, 4, 2, 3)).astype("float32")})  # fmt: skip

NB = np.concatenate([boxes(6), boxes(6)]).reshape(2, 6, 4) / 10
NB[0, 1] = NB[0, 0] + 0.01  # overlaps box 0
NS = rng.uniform(0, 1, (2, 3, 6)).astype("float32")
NS[1, :, :] = np.minimum(NS[1], 0.2)
nms_in = lambda: (data("b", [None, 6, 4]), data("s", [None, 3, 6]))  # noqa: E731
run("multiclass_nms", lambda: L.multiclass_nms(*nms_in(), 0.25, 4, 5, nms_threshold=0.3), {"b": NB, "s": NS})
run("multiclass_nms_eta_bg", lambda: L.multiclass_nms(*nms_in(), 0.1, -1, -1, nms_threshold=0.6, nms_eta=0.9, background_label=-1,
                                                      normalized=False), {"b": NB * 10, "s": NS})  # fmt: skip
run("multiclass_nms_none", lambda: L.multiclass_nms(*nms_in(), 0.99, 4, 5), {"b": NB, "s": NS})
run("detection_output",
    lambda: L.detection_output(data("loc", [None, 4, 4]), data("sc", [None, 4, 3]), data("pb", [4, 4]), data("pbv", [4, 4]),
                               score_threshold=0.05, nms_top_k=3, keep_top_k=4),
    {"loc": rng.uniform(-1, 1, (2, 4, 4)).astype("float32"), "sc": rng.uniform(-2, 2, (2, 4, 3)).astype("float32"),
     "pb": PRIOR, "pbv": PRIOR_VAR})  # fmt: skip

DM = rng.uniform(0, 1, (5, 6)).astype("float32")
DM[1, 2] = 0.0
run(
    "bipartite_match",
    lambda: L.detection.bipartite_match(data("dm", [None, 6], lod_level=1)),
    {"dm": DM},
    {"dm": [[2, 3]]},
)
run("bipartite_match_per_prediction", lambda: L.detection.bipartite_match(data("dm", [None, 6], lod_level=1), "per_prediction", 0.3),
    {"dm": DM}, {"dm": [[2, 3]]})  # fmt: skip
MI = np.array([[1, -1, 0, -1, 1, -1], [-1, 2, -1, 0, -1, -1]], "int32")
run("target_assign", lambda: L.detection.target_assign(data("x", [None, 6, 4], lod_level=1), data("mi", [2, 6], "int32"), mismatch_value=-1),
    {"x": rng.uniform(-1, 1, (5, 6, 4)).astype("float32"), "mi": MI}, {"x": [[2, 3]]})  # fmt: skip
run("target_assign_labels_neg",
    lambda: L.detection.target_assign(data("x", [None, 1, 1], "int32", lod_level=1), data("mi", [2, 6], "int32"),
                                      data("neg", [None, 1], "int32", lod_level=1), mismatch_value=7),
    {"x": np.array([3, 4, 5, 6, 8], "int32").reshape(5, 1, 1), "mi": MI, "neg": np.array([[1], [3], [5], [0]], "int32")},
    {"x": [[2, 3]], "neg": [[3, 1]]})  # fmt: skip
print(json.dumps(results, sort_keys=True))
