# fluid.optimizer.PipelineOptimizer: the sections minimize cuts the program into (their ops, input
# and output sets, the parameters to synchronise), for two and three cuts, an Adam optimizer with
# a decayed learning rate and an empty cut list; the errors. fluid 1.8.5's CPU build has no
# PipelineTrainer, so the training recorded here is the unpipelined one (train_from_dataset with
# the plain optimizer); under fluidcompat, TRAIN_WITH_PIPELINE=1 trains through the pipeline, and
# the test expects the same values.
import json
import os
import tempfile

import numpy as np
import paddle.fluid as fluid

PIPELINE = os.environ.get("TRAIN_WITH_PIPELINE") == "1"
tmp = tempfile.mkdtemp()
path = os.path.join(tmp, "data.txt")
rs = np.random.RandomState(3)
with open(path, "w") as f:
    for _ in range(40):
        f.write("1 %d 1 %d 1 %.4f\n" % (rs.randint(0, 10), rs.randint(0, 10), rs.rand()))


INIT_Y = rs.uniform(-0.5, 0.5, (10, 3)).astype("float32")
INIT_FC1 = rs.uniform(-0.5, 0.5, (6, 4)).astype("float32")


def const(name, value):
    return fluid.ParamAttr(name=name, initializer=fluid.initializer.Constant(value))


def build(kind):
    """(main, startup, feed vars, cut_list, the inner optimizer) of one model."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[1], dtype="int64")
        y = fluid.layers.data(name="y", shape=[1], dtype="int64")
        t = fluid.layers.data(name="t", shape=[1], dtype="float32")
        emb_x = fluid.layers.embedding(x, size=[10, 3], param_attr=const("embx", 0.1))
        emb_y = fluid.layers.embedding(
            y,
            size=[10, 3],
            param_attr=fluid.ParamAttr(
                name="emby", learning_rate=0.9, initializer=fluid.initializer.NumpyArrayInitializer(INIT_Y)
            ),
        )
        concat = fluid.layers.concat([emb_x, emb_y], axis=1)
        if kind == "two":
            pred = fluid.layers.fc(concat, size=1, bias_attr=False, param_attr=const("fcw", 0.3))
            loss = fluid.layers.reduce_mean(fluid.layers.square_error_cost(pred, t))
            cuts = [[emb_x, emb_y], [loss]]
            opt = fluid.optimizer.SGD(learning_rate=0.5)
        else:
            hidden = fluid.layers.fc(
                concat,
                size=4,
                act="tanh",
                param_attr=fluid.ParamAttr(name="fc1w", initializer=fluid.initializer.NumpyArrayInitializer(INIT_FC1)),
                bias_attr=const("fc1b", 0.0),
            )
            pred = fluid.layers.fc(hidden, size=1, param_attr=const("fc2w", 0.2), bias_attr=const("fc2b", 0.1))
            loss = fluid.layers.reduce_mean(fluid.layers.square_error_cost(pred, t))
            cuts = [[emb_x, emb_y], [hidden], [loss]] if kind == "three" else []
            lr = fluid.layers.exponential_decay(0.05, decay_steps=2, decay_rate=0.5, staircase=True)
            opt = fluid.optimizer.Adam(learning_rate=lr)
    return main, startup, [x, y, t], cuts, opt, loss


def sections(main):
    opt = main._pipeline_opt
    out = []
    for p in opt["section_program_list"]:
        # fluid 1.8.5 filled the sections' descs only: read them back through their bytes
        block = fluid.Program.parse_from_string(p["program"].desc.serialize_to_string()).global_block()
        out.append(
            {
                "ops": [op.type for op in block.ops],
                "input_set": sorted(p["input_set"]),
                "output_set": sorted(p["output_set"]),
                "vars": sorted(block.vars),
            }
        )
    keys = sorted(k for k in opt if k not in ("section_program_list", "place_list"))
    return {"sections": out, "opts": {k: opt[k] for k in keys}}


out = {}
for kind in ("two", "three", "none"):
    main, startup, feeds, cuts, opt, loss = build(kind)
    n = 2 * len(cuts) - 1 if cuts else 1
    pipe = fluid.optimizer.PipelineOptimizer(
        opt, cut_list=cuts, place_list=[fluid.CPUPlace()] * n, concurrency_list=[1] * n, queue_size=4, sync_steps=1
    )
    with fluid.program_guard(main, startup):
        ret = pipe.minimize(loss)
    out[kind] = sections(main)
    out[kind]["returned"] = ret
    out[kind]["main_ops"] = [op.type for op in main.global_block().ops]

trained = {}
for kind in ("two", "three"):
    main, startup, feeds, cuts, opt, loss = build(kind)
    with fluid.program_guard(main, startup):
        if PIPELINE:
            n = 2 * len(cuts) - 1
            fluid.optimizer.PipelineOptimizer(
                opt, cut_list=cuts, place_list=[fluid.CPUPlace()] * n, concurrency_list=[1] * n
            ).minimize(loss)
        else:
            opt.minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    dataset = fluid.DatasetFactory().create_dataset("QueueDataset")
    dataset.set_use_var(feeds)
    dataset.set_batch_size(8)
    dataset.set_filelist([path])
    for _epoch in range(2):
        exe.train_from_dataset(main, dataset, scope=scope, thread=1)
    params = sorted(p.name for p in main.global_block().all_parameters())
    trained[kind] = {n: np.array(scope.find_var(n).get_tensor()).round(5).reshape(-1).tolist() for n in params}
out["trained"] = trained
print(json.dumps(out, sort_keys=True))
