# Golden script: fluid.metrics at their edges and the forms of their results: empty metrics, bad
# input, counts given as numbers and as fetched [1] arrays (ChunkEvaluator and EditDistance then
# return [1] arrays), Auc with another curve. Prints {case: ["ok", value] or [type, message]}.
import json
import sys
import warnings

import numpy as np
import paddle.fluid as fluid

M = fluid.metrics
warnings.simplefilter("ignore")
report = {}


def attempt(name, f):
    try:
        r = f()
        value = [np.round(np.asarray(a, dtype="float64"), 6).tolist() for a in r] if isinstance(r, tuple) else r
        report[name] = ["ok", np.round(np.asarray(value, dtype="float64"), 6).tolist()]
    except Exception as e:  # noqa: BLE001
        report[name] = [type(e).__name__, " ".join(str(e).split())]


a = M.Accuracy()
attempt("acc_empty", a.eval)
a.update(0.5, 4)
a.update(np.array([0.75]), 4)
attempt("acc", a.eval)
attempt("acc_bad", lambda: a.update("x", 2))
attempt("acc_bad_w", lambda: a.update(0.5, -1))
attempt("acc_bad_w2", lambda: a.update(0.5, 1.5))
p = M.Precision()
r = M.Recall()
preds = np.array([[0.1], [0.7], [0.8], [0.4], [0.6]])
labels = np.array([[0], [1], [0], [1], [1]])
p.update(preds, labels)
r.update(preds, labels)
attempt("precision", p.eval)
attempt("recall", r.eval)
p2 = M.Precision()
attempt("precision_empty", p2.eval)
attempt("precision_shape", lambda: p2.update(np.ones((3, 2)), np.ones((3, 1))))
c = M.CompositeMetric()
c.add_metric(M.Precision())
c.add_metric(M.Recall())
c.update(preds, labels)
attempt("composite", lambda: tuple(c.eval()))
ch = M.ChunkEvaluator()
ch.update(np.array([10]), np.array([12]), np.array([8]))
ch.update(5, 6, 4)
attempt("chunk", lambda: tuple(ch.eval()))
ch2 = M.ChunkEvaluator()
attempt("chunk_empty", lambda: tuple(ch2.eval()))
ed = M.EditDistance("ed")
ed.update(np.array([[1.0], [0.0], [3.0]]), np.array([3]))
ed.update(np.array([[2.0]]), 1)
attempt("edit", lambda: tuple(ed.eval()))
ed2 = M.EditDistance("e2")
attempt("edit_empty", lambda: tuple(ed2.eval()))
auc = M.Auc("auc", num_thresholds=200)
rng = np.random.RandomState(0)
pr = rng.rand(50, 1)
lab = (rng.rand(50) > 0.5).astype("int64").reshape(50, 1)
auc.update(np.hstack([1 - pr, pr]), lab)
attempt("auc", auc.eval)
auc2 = M.Auc("a2")
attempt("auc_empty", auc2.eval)
auc3 = M.Auc("a3", curve="PR")
auc3.update(np.hstack([1 - pr, pr]), lab)
attempt("auc_pr", auc3.eval)
attempt("auc_bad", lambda: auc.update(pr, lab))
dm = M.DetectionMAP
a.reset()
attempt("acc_reset", a.eval)
json.dump(report, sys.stdout, indent=1, sort_keys=True)
