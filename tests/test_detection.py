"""Detection layers' arguments and refusals (values against numpy: tests/ops_extra_cases.py; against
fluid 1.8.5: tests/test_goldens.py, goldens deformable_conv and rfcn_pooling)."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid
from tests.ops_extra_cases import _deformable_ref

L = fluid.layers
PLACE = fluid.CPUPlace()


def _program(build):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        return main, build()


def test_position_sensitive_deformable_roi_pooling_gets_an_int_channel_count():
    """fluid 1.8.5 passed input channels / (pooled_height * pooled_width) as a float and failed."""

    def build():
        x = fluid.data("x", [1, 12, 5, 5], "float32")
        rois = fluid.data("rois", [None, 4], "float32", lod_level=1)
        trans = fluid.data("trans", [None, 2, 2, 3], "float32")
        return L.deformable_roi_pooling(x, rois, trans, group_size=[2, 3], pooled_height=2, pooled_width=3,
                                        position_sensitive=True)  # fmt: skip

    main, y = _program(build)
    op = main.global_block().ops[-1]
    assert op.type == "deformable_psroi_pooling" and op.attr("output_dim") == 2 and op.attr("part_size") == [2, 3]
    assert y.shape == (-1, 2, 2, 3)


def test_rois_of_several_images_need_a_lod():
    main, y = _program(
        lambda: L.psroi_pool(
            fluid.data("x", [2, 4, 5, 5], "float32"), fluid.data("rois", [None, 4], "float32"), 1, 1.0, 2, 2
        )
    )
    feed = {"x": np.ones((2, 4, 5, 5), "float32"), "rois": np.array([[0, 0, 2, 2]], "float32")}
    with pytest.raises(fluid.core.EnforceNotMet, match="psroi_pool: ROIs carries no LoD.*Input has 2 images"):
        fluid.Executor(PLACE).run(main, feed=feed, fetch_list=[y])
    feed["rois"] = fluid.create_lod_tensor(feed["rois"], [[1]], PLACE)
    with pytest.raises(fluid.core.EnforceNotMet, match=r"give each of Input's 2 images its rois \(1 in all\)"):
        fluid.Executor(PLACE).run(main, feed=feed, fetch_list=[y])


@pytest.mark.parametrize(
    "shapes, message",
    [
        (([1, 2, 5, 5], [1, 16, 5, 5], [1, 9, 5, 5]), r"Offset must be \[N, 18, 5, 5\].*Offset.shape=\(1, 16, 5, 5\)"),
        (([1, 2, 5, 5], [1, 18, 5, 5], [1, 9, 4, 5]), r"Mask must be \[N, 9, 5, 5\]"),
    ],
)
def test_deformable_conv_checks_offset_and_mask_shapes_when_built(shapes, message):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x, off, mask = (fluid.data(n, s, "float32") for n, s in zip(("x", "off", "mask"), shapes))
        before = len(main.global_block().ops), sorted(main.global_block().vars)
        with pytest.raises(ValueError, match=message):
            L.deformable_conv(x, off, mask, 2, 3, padding=1)
        assert (len(main.global_block().ops), sorted(main.global_block().vars)) == before


def test_deformable_conv_gives_the_same_for_any_im2col_step():
    """fluid 1.8.5's CPU kernel went wrong when the batch was not a multiple of im2col_step (default 64)."""
    rng = np.random.RandomState(0)
    feed = {
        "x": rng.uniform(-1, 1, (3, 2, 5, 5)).astype("float32"),
        "off": rng.uniform(-1, 1, (3, 18, 5, 5)).astype("float32"),
        "mask": rng.uniform(0, 1, (3, 9, 5, 5)).astype("float32"),
    }
    outs = []
    for step in (None, 1, 2):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x, off, mask = (fluid.data(k, list(v.shape), "float32") for k, v in feed.items())
            y = L.deformable_conv(x, off, mask, 2, 3, padding=1, im2col_step=step,
                                  param_attr=fluid.initializer.Constant(0.2), bias_attr=False)  # fmt: skip
        exe = fluid.Executor(PLACE)
        with fluid.scope_guard(fluid.Scope()):
            exe.run(startup)
            outs.append(exe.run(main, feed=feed, fetch_list=[y])[0])
    want = _deformable_ref(feed["x"], feed["off"], feed["mask"], np.full((2, 2, 3, 3), 0.2, "float32"), 1, 1, 1, 1)
    for got in outs:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_box_clip_takes_boxes_per_image_as_a_3d_tensor():
    """fluid 1.8.5 crashed (segmentation fault) on [N, M, 4] boxes; each image's boxes are clipped
    to its own size here."""
    rng = np.random.RandomState(1)
    boxes = rng.uniform(-10, 60, (2, 3, 4)).astype("float32")
    info = np.array([[30, 40, 2.0], [25, 26, 1.0]], "float32")
    main, y = _program(lambda: L.box_clip(fluid.data("b", [2, 3, 4], "float32"), fluid.data("im", [2, 3], "float32")))
    got = fluid.Executor(PLACE).run(main, feed={"b": boxes, "im": info}, fetch_list=[y])[0]
    limits = [[19, 14, 19, 14], [25, 24, 25, 24]]  # (width / scale - 1, height / scale - 1) per image
    want = np.stack([np.clip(boxes[i], 0, limits[i]) for i in range(2)])
    np.testing.assert_array_equal(got, want)


def test_multiclass_nms_names_mismatched_lod_form_shapes():
    main, y = _program(
        lambda: L.multiclass_nms(
            fluid.data("b", [None, 4], "float32"), fluid.data("s", [None, 3], "float32"), 0.1, 5, 5
        )
    )
    feed = {"b": np.zeros((2, 4), "float32"), "s": np.zeros((2, 3), "float32")}
    with pytest.raises(fluid.core.EnforceNotMet, match=r"with Scores \[R, C\] \(LoD form\) BBoxes must be \[R, C, 4\]"):
        fluid.Executor(PLACE).run(main, feed=feed, fetch_list=[y])


def test_ssd_loss_refuses_hard_example_mining_before_adding_ops():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        loc, conf = fluid.data("loc", [None, 4, 4], "float32"), fluid.data("conf", [None, 4, 3], "float32")
        gt_box = fluid.data("gt_box", [None, 4], "float32", lod_level=1)
        gt_label = fluid.data("gt_label", [None, 1], "int32", lod_level=1)
        prior = fluid.data("prior", [4, 4], "float32")
        with pytest.raises(ValueError, match="Only support mining_type == max_negative now"):
            L.ssd_loss(loc, conf, gt_box, gt_label, prior, [0.1, 0.1, 0.2, 0.2], mining_type="hard_example")
    assert not main.global_block().ops


def test_rpn_target_assign_samples_at_random_within_the_budget():
    """use_random=True: of the candidates numpy finds, a random foreground of at most fg_fraction *
    batch anchors and background filling the batch; labels, targets and weights follow the sample."""
    from tests.ops_extra_cases import _TA_ANCHORS, _TA_GT, _anchor_labels_np, _deltas_np

    fg_all, bg_all, best = _anchor_labels_np(_TA_ANCHORS, _TA_GT, 0.3, 0.3)
    n = len(_TA_ANCHORS)
    feed = {
        "bbox": np.arange(n * 4, dtype="float32").reshape(1, n, 4),
        "cls": np.arange(n, dtype="float32").reshape(1, n, 1),
        "anchor": _TA_ANCHORS,
        "var": np.ones_like(_TA_ANCHORS),
        "gt": fluid.create_lod_tensor(_TA_GT, [[2]], PLACE),
        "crowd": fluid.create_lod_tensor(np.zeros((2, 1), "int32"), [[2]], PLACE),
        "im": np.array([[40, 40, 1.0]], "float32"),
    }

    def build():
        v = [fluid.data(k, list(feed[k].shape), "float32") for k in ("bbox", "cls", "anchor", "var")]
        v += [fluid.data("gt", [None, 4], "float32", lod_level=1), fluid.data("crowd", [None, 1], "int32", lod_level=1)]
        v.append(fluid.data("im", [1, 3], "float32"))
        return list(L.rpn_target_assign(*v, rpn_batch_size_per_im=8, rpn_straddle_thresh=-1, rpn_fg_fraction=0.25,
                                         rpn_positive_overlap=0.3, rpn_negative_overlap=0.3))  # fmt: skip

    main, outs = _program(build)
    cls, bbox, label, target, weight = (
        np.array(r) for r in fluid.Executor(PLACE).run(main, feed=feed, fetch_list=outs, return_numpy=False)
    )
    fg, bg = cls.reshape(-1)[label.reshape(-1) == 1].astype(int), cls.reshape(-1)[label.reshape(-1) == 0].astype(int)
    assert len(fg) == min(2, len(fg_all)) and len(fg) + len(bg) == min(8, len(fg_all) + len(bg_all))
    assert set(fg) <= set(fg_all) and set(bg) <= set(bg_all)
    loc = (bbox[:, 0] / 4).astype(int)
    assert sorted(loc) == sorted(fg) and weight.tolist() == [[1.0] * 4] * len(fg)
    np.testing.assert_allclose(target, _deltas_np(_TA_ANCHORS[loc], _TA_GT[best[loc]]), rtol=1e-5, atol=1e-6)


def test_generate_proposal_labels_cascade_keeps_every_roi():
    """is_cascade_rcnn: the rois start with the ground truth and are not joined with it again;
    every foreground and background roi is kept (here 3, over batch_size_per_im=2), one without
    area is left out."""

    def build():
        v = [fluid.data(n, [None, 4 if n in ("r", "g") else 1], "float32" if n in ("r", "g") else "int32", lod_level=1)
             for n in ("r", "c", "k", "g")]  # fmt: skip
        return list(
            L.generate_proposal_labels(
                *v, fluid.data("im", [1, 3], "float32"), class_nums=3, batch_size_per_im=2, is_cascade_rcnn=True
            )
        )

    main, outs = _program(build)
    rois = np.array([[0, 0, 5, 5], [0, 0, 4, 5], [20, 20, 25, 25], [3, 3, 2, 2]], "float32")
    feed = {
        "r": fluid.create_lod_tensor(rois, [[4]], PLACE),
        "c": fluid.create_lod_tensor(np.array([[1]], "int32"), [[1]], PLACE),
        "k": fluid.create_lod_tensor(np.array([[0]], "int32"), [[1]], PLACE),
        "g": fluid.create_lod_tensor(np.array([[0, 0, 5, 5]], "float32"), [[1]], PLACE),
        "im": np.array([[10, 10, 1.0]], "float32"),
    }
    got = fluid.Executor(PLACE).run(main, feed=feed, fetch_list=outs, return_numpy=False)
    out_rois, labels, targets, inside, _ = (np.array(t) for t in got)
    assert got[0].lod() == [[0, 3]]
    np.testing.assert_array_equal(out_rois, rois[:3])
    assert labels.reshape(-1).tolist() == [1, 1, 0]
    # the second roi's box target to the ground truth: (dx, dy, log dw, log dh) / (0.1, 0.1, 0.2, 0.2)
    want = np.array([(0.5 * 6 - 0.5 * 5) / 5 / 0.1, 0.0, np.log(6 / 5) / 0.2, 0.0])
    np.testing.assert_allclose(targets[1, 4:8], want, rtol=1e-5, atol=1e-6)
    assert inside.sum(1).tolist() == [4.0, 4.0, 0.0]
