# A small segmentation net (conv, pool, batch_norm, resize_bilinear, concat, 1x1 conv) trained with
# Momentum, L2 decay and polynomial_decay on softmax_with_cross_entropy over flattened pixels, and with
# axis=1; mean_iou of the argmax. Run once with every label in range (five steps) and once with rows of
# label 255 ignored (the first step: losses and mean_iou's counts, where 255 lies outside num_classes).
# Then softmax_with_cross_entropy's gradient with ignored rows.
import json

import numpy as np
import paddle.fluid as fluid
from _golden import set_params

out = {}


def run(ignored, steps):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.data(name="img", shape=[None, 3, 16, 16], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1, 16, 16], dtype="int64")
        c1 = fluid.layers.conv2d(img, 8, 3, padding=1, act="relu")
        p1 = fluid.layers.pool2d(c1, pool_size=2, pool_stride=2)
        c2 = fluid.layers.batch_norm(fluid.layers.conv2d(p1, 16, 3, padding=1), act="relu")
        up = fluid.layers.resize_bilinear(c2, out_shape=[16, 16], align_corners=False, align_mode=0)
        logit = fluid.layers.conv2d(fluid.layers.concat([up, c1], axis=1), 4, 1)
        logit_r = fluid.layers.reshape(fluid.layers.transpose(logit, [0, 2, 3, 1]), [-1, 4])
        label_r = fluid.layers.reshape(label, [-1, 1])
        loss = fluid.layers.softmax_with_cross_entropy(logit_r, label_r, ignore_index=255)
        mask = fluid.layers.cast(label_r != 255, "float32")
        avg = fluid.layers.reduce_sum(loss) / (fluid.layers.reduce_sum(mask) + 1e-5)
        pred = fluid.layers.argmax(logit, axis=1)
        labels = fluid.layers.cast(fluid.layers.squeeze(label, [1]), "int32")
        miou, wrong, correct = fluid.layers.mean_iou(fluid.layers.cast(pred, "int32"), labels, 4)
        avg2 = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logit, label, axis=1, ignore_index=255))
        test_prog = main.clone(for_test=True)
        lr = fluid.layers.polynomial_decay(0.05, 10, 0.001, power=0.9)
        opt = fluid.optimizer.Momentum(learning_rate=lr, momentum=0.9, regularization=fluid.regularizer.L2Decay(1e-4))
        opt.minimize(avg)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        set_params(main, scope)
        rng = np.random.RandomState(3)
        rows = []
        for _ in range(steps):
            x = rng.rand(2, 3, 16, 16).astype("float32")
            y = rng.randint(0, 4, (2, 1, 16, 16)).astype("int64")
            if ignored:
                y[:, :, :3] = 255
            r = exe.run(main, feed={"img": x, "label": y}, fetch_list=[avg, avg2, miou, wrong, correct])
            rows.append([np.round(np.array(v).astype("float64").reshape(-1), 4).tolist() for v in r])
        (p,) = exe.run(test_prog, feed={"img": x, "label": y}, fetch_list=[pred])
    return rows, np.array(p).reshape(-1)[:40].tolist()


out["in_range"] = run(False, 5)
out["ignored_first_step"] = run(True, 1)[0]

xv = np.random.RandomState(0).rand(6, 4).astype("float32")
yv = np.array([[0], [255], [3], [1], [255], [2]], dtype="int64")
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data(name="x", shape=[6, 4], dtype="float32")
    x.stop_gradient = False
    y = fluid.data(name="y", shape=[6, 1], dtype="int64")
    loss = fluid.layers.softmax_with_cross_entropy(x, y, ignore_index=255)
    (g,) = fluid.gradients([fluid.layers.reduce_sum(loss)], [x])
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
r = exe.run(main, feed={"x": xv, "y": yv}, fetch_list=[loss, g])
out["ignore_grad"] = [np.round(np.array(v).astype("float64"), 4).tolist() for v in r]
print(json.dumps(out, sort_keys=True))
