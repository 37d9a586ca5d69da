"""The CTC family on LoD sequences as the OCR and speech models of fluid 1.8 fed them:
ctc_greedy_decoder (an empty sequence, another blank, every sequence decoding to nothing),
edit_distance (normalized or not, ignored_tokens, an empty reference), warpctc (blank 0 and 3,
norm_by_times, a label too long for its logits) with the logits' gradient. Prints JSON
{case: [[lod, shape, dtype, values...]] or ["error", type, message]}; run under fluid 1.8.5
(tools/fluid18) it wrote ctc_lod.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
results = {}


def run(case, build, feed, grads=()):
    try:
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            fetch = build()
            if grads:
                fluid.backward.append_backward(L.reduce_sum(fetch[0]))
                fetch = fetch + [g + "@GRAD" for g in grads]
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        rs = exe.run(main, feed=feed, fetch_list=fetch, return_numpy=False)
        results[case] = [
            [r.lod(), list(np.array(r).shape), str(np.array(r).dtype)]
            + np.array(r).reshape(-1).astype("float64").tolist()
            for r in rs
        ]
    except Exception as e:
        msg = str(e)
        results[case] = [
            "error",
            type(e).__name__,
            msg[msg.find("Error Message Summary") :][:400] if "Summary" in msg else msg[-400:],
        ]


def lod(x, lens, dtype):
    return fluid.create_lod_tensor(
        np.array(x, dtype).reshape(-1, 1) if dtype.startswith("int") else np.array(x, dtype), [lens], fluid.CPUPlace()
    )


# ctc_greedy_decoder on LoD probabilities
probs = np.abs(np.sin(np.arange(9 * 5) * 1.3)).reshape(9, 5).astype("float32")


def greedy(blank):
    def build():
        x = fluid.data("x", [None, 5], "float32", lod_level=1)
        return [L.ctc_greedy_decoder(x, blank=blank)]

    return build


run("greedy_blank0", greedy(0), {"x": fluid.create_lod_tensor(probs, [[4, 0, 5]], fluid.CPUPlace())})
run("greedy_blank4", greedy(4), {"x": fluid.create_lod_tensor(probs, [[3, 2, 4]], fluid.CPUPlace())})
allblank = np.zeros((4, 5), "float32")
allblank[:, 2] = 1
run("greedy_all_blank", greedy(2), {"x": fluid.create_lod_tensor(allblank, [[1, 3]], fluid.CPUPlace())})


# edit_distance on LoD sequences, ignored_tokens
def edit(normalized, ignored):
    def build():
        h = fluid.data("h", [None, 1], "int64", lod_level=1)
        r = fluid.data("r", [None, 1], "int64", lod_level=1)
        return list(L.edit_distance(h, r, normalized=normalized, ignored_tokens=ignored))

    return build


hyp = lod([1, 2, 3, 4, 0, 5, 5, 2, 7], [4, 2, 3], "int64")
ref = lod([1, 3, 4, 0, 5, 6, 9, 2, 7, 7], [3, 4, 3], "int64")
run("edit_norm", edit(True, None), {"h": hyp, "r": ref})
run("edit_raw", edit(False, None), {"h": hyp, "r": ref})
run("edit_ignored", edit(True, [0, 7]), {"h": hyp, "r": ref})
run("edit_empty_ref", edit(True, None), {"h": lod([1, 2, 3], [2, 1], "int64"), "r": lod([4], [0, 1], "int64")})


# warpctc on LoD logits and labels
logits = np.cos(np.arange(10 * 4) * 0.7).reshape(10, 4).astype("float32")


def ctc(blank, norm):
    def build():
        x = fluid.data("logits", [None, 4], "float32", lod_level=1)
        x.stop_gradient = False
        y = fluid.data("label", [None, 1], "int32", lod_level=1)
        return [L.warpctc(x, y, blank=blank, norm_by_times=norm)]

    return build


lab = lod([1, 2, 1, 3, 3, 2], [2, 3, 1], "int32")
run(
    "ctc_blank0",
    ctc(0, False),
    {"logits": fluid.create_lod_tensor(logits, [[4, 3, 3]], fluid.CPUPlace()), "label": lab},
    grads=["logits"],
)
run(
    "ctc_norm",
    ctc(0, True),
    {"logits": fluid.create_lod_tensor(logits, [[4, 3, 3]], fluid.CPUPlace()), "label": lab},
    grads=["logits"],
)
lab2 = lod([0, 1, 2, 0, 2], [2, 2, 1], "int32")
run(
    "ctc_blank3",
    ctc(3, False),
    {"logits": fluid.create_lod_tensor(logits, [[5, 2, 3]], fluid.CPUPlace()), "label": lab2},
    grads=["logits"],
)
run(
    "ctc_too_long_label",
    ctc(0, False),
    {"logits": fluid.create_lod_tensor(logits, [[1, 6, 3]], fluid.CPUPlace()), "label": lab},
    grads=["logits"],
)
print(json.dumps(results, sort_keys=True))
