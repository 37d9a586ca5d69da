# Golden script: names fluid 1.8 published at the top of paddle.fluid besides its static API: the
# dygraph layers (fluid.Linear is fluid.dygraph.Linear), fluid.input, fluid.average.WeightedAverage,
# fluid.dataset (the slot-file datasets), fluid.load_program_state / set_program_state.
# Prints a JSON report.
import json
import shutil
import sys
import tempfile
import warnings

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dataset import InMemoryDataset

warnings.simplefilter("ignore")
report = {}
LAYERS = (
    "BCELoss BatchNorm BilinearTensorProduct Conv2D Conv2DTranspose Conv3D Conv3DTranspose Dropout Embedding "
    "GRUUnit GroupNorm InstanceNorm L1Loss Layer LayerNorm Linear MSELoss NCE NLLLoss PRelu Pool2D SpectralNorm "
    "TreeConv"
).split()
report["dygraph_layers"] = [n for n in LAYERS if getattr(fluid, n) is getattr(fluid.dygraph, n)]
report["dataset"] = [
    fluid.dataset.DatasetFactory is fluid.DatasetFactory,
    InMemoryDataset is fluid.InMemoryDataset,
    type(fluid.dataset.DatasetFactory().create_dataset("QueueDataset")).__name__,
]


def attempt(fn):
    try:
        return ["ok", np.asarray(fn()).tolist()]
    except Exception as e:  # noqa: BLE001
        return [type(e).__name__, str(e)]


avg = fluid.average.WeightedAverage()
report["average_empty"] = attempt(avg.eval)
avg.add(2.0, 1)
avg.add(np.array([5.0]), 3)
report["average_numbers"] = attempt(avg.eval)
avg.reset()
avg.add(np.array([[1.0, 2.0], [3.0, 4.0]]), 2)
avg.add(np.array([[3.0, 2.0], [1.0, 0.0]]), 2.0)
report["average_arrays"] = attempt(avg.eval)
report["average_bad_value"] = attempt(lambda: avg.add("1", 1))
report["average_bad_weight"] = attempt(lambda: avg.add(1.0, np.array([1.0, 2.0])))
report["average_after_errors"] = attempt(avg.eval)

main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    ids = fluid.data("ids", [None, 2], "int64")
    hot = fluid.input.one_hot(ids, 5)
    emb = fluid.input.embedding(ids, [5, 3], param_attr=fluid.ParamAttr(name="table"))
    out = fluid.layers.fc(emb, 2, num_flatten_dims=2)
exe = fluid.Executor(fluid.CPUPlace())
scope = fluid.Scope()
with fluid.scope_guard(scope):
    exe.run(start)
    for k, name in enumerate(sorted(p.name for p in main.all_parameters())):
        value = np.sin(np.arange(np.prod(np.array(scope.find_var(name).get_tensor()).shape)) + k)
        shape = np.array(scope.find_var(name).get_tensor()).shape
        scope.find_var(name).get_tensor().set(value.reshape(shape).astype("float32"), fluid.CPUPlace())
    feed = {"ids": np.array([[1, 4], [0, 0]], "int64")}
    h, e, o = exe.run(main, feed=feed, fetch_list=[hot, emb, out])
    report["input_layers"] = [
        list(h.shape),
        h.reshape(-1).tolist(),
        list(e.shape),
        np.round(o, 5).tolist(),
    ]
    tmp = tempfile.mkdtemp()
    fluid.save(main, tmp + "/model")
state = fluid.load_program_state(tmp + "/model")
report["program_state"] = sorted((k, list(v.shape)) for k, v in state.items())
fresh = fluid.Scope()
with fluid.scope_guard(fresh):
    exe.run(start)
    fluid.set_program_state(main, state)
    (o2,) = exe.run(main, feed=feed, fetch_list=[out])
    report["set_program_state"] = bool(np.allclose(o, o2))
    bad = dict(state)
    bad["table"] = np.zeros((4, 3), "float32")
    report["set_program_state_shape"] = attempt(lambda: fluid.set_program_state(main, bad))
    report["table_after_error"] = bool(np.allclose(np.array(fresh.find_var("table").get_tensor()), state["table"]))
shutil.rmtree(tmp)
json.dump(report, sys.stdout, indent=1, sort_keys=True)
