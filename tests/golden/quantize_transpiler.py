# fluid.contrib.QuantizeTranspiler on a small conv + fc classifier: the training program after
# training_transpile (ops and their slots) for each activation quantize type, the losses of 4 SGD
# steps and the scales the fake quantize ops keep, then freeze_program (ops, outputs, the weights
# quantized in place) and convert_to_int8 (the int8 weights), and the errors.
import json
import os
import sys

import numpy as np
import paddle.fluid as fluid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _golden import set_params  # noqa: E402

place = fluid.CPUPlace()
rs = np.random.RandomState(0)
IMAGES = rs.uniform(-1, 1, (4, 8, 1, 6, 6)).astype("float32")
LABELS = rs.randint(0, 3, (4, 8, 1)).astype("int64")


def r5(a):
    return np.round(np.array(a).astype("float64"), 5).reshape(-1).tolist()


def describe(program):
    return [
        [op.type, {k: op.input(k) for k in sorted(op.input_names)}, {k: op.output(k) for k in sorted(op.output_names)}]
        for op in program.global_block().ops
    ]


out = {}
for act, weight in (
    ("abs_max", "abs_max"),
    ("range_abs_max", "abs_max"),
    ("moving_average_abs_max", "abs_max"),
    ("abs_max", "range_abs_max"),
):
    key = act + "/" + weight
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        image = fluid.data("image", [None, 1, 6, 6], "float32")
        label = fluid.data("label", [None, 1], "int64")
        conv = fluid.layers.conv2d(image, 4, 3, act="relu")
        logits = fluid.layers.fc(conv, 3)
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))
        test = main.clone(for_test=True)
        fluid.optimizer.SGD(0.1).minimize(loss)
        t = fluid.contrib.QuantizeTranspiler(
            activation_quantize_type=act, weight_quantize_type=weight, window_size=3, moving_rate=0.5
        )
        t.training_transpile(main, startup)
        test = main.clone(for_test=True)
    scope = fluid.Scope()
    exe = fluid.Executor(place)
    with fluid.scope_guard(scope):
        exe.run(startup)
        set_params(main, scope)
        quant_ops = [op for op in main.global_block().ops if op.type.startswith("fake_quantize")]
        scale_names = [op.output("OutScale")[0] for op in quant_ops]
        losses, scales = [], []
        for step in range(4):
            got = exe.run(main, feed={"image": IMAGES[step], "label": LABELS[step]}, fetch_list=[loss] + scale_names)
            losses.append(r5(got[0])[0])
            scales.append([r5(s) for s in got[1:]])
        entry = {"train_ops": describe(main), "losses": losses, "scales": scales}
        persist = sorted(v.name for v in main.list_vars() if v.persistable)
        entry["persistables"] = persist
        try:
            t.freeze_program(test, place)
        except AssertionError as e:  # fluid 1.8.5 with range_abs_max weights: their scale is an array
            entry["freeze_error"] = type(e).__name__
            out[key] = entry
            continue
        entry["frozen_ops"] = describe(test)
        entry["frozen"] = r5(exe.run(test, feed={"image": IMAGES[0], "label": LABELS[0]}, fetch_list=[logits.name])[0])
        weights = sorted(p.name for p in test.global_block().all_parameters() if p.name.endswith(".w_0"))
        entry["quantized_weights"] = {w: r5(scope.find_var(w).get_tensor()) for w in weights}
        t.convert_to_int8(test, place)
        entry["int8_ops"] = describe(test)
        entry["int8"] = {w: np.array(scope.find_var(w + ".int8").get_tensor()).reshape(-1).tolist() for w in weights}
        entry["int8_dtypes"] = [str(test.global_block().var(w + ".int8").dtype) for w in weights]
    out[key] = entry

errors = []
for kw in (dict(activation_quantize_type="max"), dict(weight_quantize_type="min")):
    try:
        fluid.contrib.QuantizeTranspiler(**kw)
        errors.append(None)
    except Exception as e:
        errors.append([type(e).__name__, str(e.args[0])])
out["errors"] = errors
print(json.dumps(out, sort_keys=True))
