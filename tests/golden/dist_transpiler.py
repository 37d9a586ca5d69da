# fluid.DistributeTranspiler (pserver mode): the trainer, trainer startup, pserver and pserver
# startup programs it builds, for sync training with SGD (two pservers, two trainers), Adam with
# a weight large enough to be cut into blocks and a decayed learning rate, Momentum with L2
# regularization, async training, slice_var_up=False, one trainer and three pservers, and an
# is_sparse embedding table cut over two pservers (looked up remotely, sparse gradients).
import json
import re

import paddle.fluid as fluid

CONTROL = re.compile(r"__control_var@[0-9.e-]+")


def attr_value(v, key=""):
    if key == "optimize_blocks":  # Blocks in fluid 1.8.5, their indices in fluidcompat
        return ["block%d" % (b if isinstance(b, int) else b.id) for b in v]
    if isinstance(v, fluid.framework.Block):
        return "block%d" % v.idx
    if type(v).__name__ == "BlockDesc":
        return "block%d" % v.id
    if isinstance(v, (list, tuple)):
        return [attr_value(x) for x in v]
    if isinstance(v, float):
        return round(v, 6)
    return v


def describe(program):
    names = {}

    def norm(n):
        if CONTROL.fullmatch(n):
            names.setdefault(n, "__control_var@%d" % len(names))
            return names[n]
        return n

    blocks = []
    for block in program.blocks:
        ops = []
        for op in block.ops:
            attrs = {
                k: attr_value(op.attr(k), k)
                for k in sorted(op.attr_names)
                if k not in ("op_callstack", "op_namescope", "op_device", "use_mkldnn", "is_test")
            }
            if "grad_to_block_id" in attrs:  # a Python set's order in fluid 1.8.5
                attrs["grad_to_block_id"] = sorted(attrs["grad_to_block_id"])
            if "op_role_var" in attrs:
                attrs["op_role_var"] = [norm(n) for n in attrs["op_role_var"]]
            ops.append(
                [
                    op.type,
                    {k: [norm(n) for n in op.input(k)] for k in sorted(op.input_names)},
                    {k: [norm(n) for n in op.output(k)] for k in sorted(op.output_names)},
                    attrs,
                ]
            )
        vars_ = sorted(
            [norm(v.name), list(v.shape) if v.type != fluid.core.VarDesc.VarType.RAW else None, bool(v.persistable)]
            for v in block.vars.values()
        )
        blocks.append({"parent": block.parent_idx, "ops": ops, "vars": vars_})
    return blocks


def build(kind):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        if kind == "sparse":
            ids = fluid.data("ids", [None, 1], "int64")
            x = fluid.layers.embedding(ids, [2000, 16], is_sparse=True, padding_idx=0)
        else:
            x = fluid.data("x", [None, 100], "float32")
        y = fluid.data("y", [None, 1], "float32")
        size = 200 if kind == "adam" else 8
        h = fluid.layers.fc(x, size, act="tanh", param_attr=fluid.initializer.Constant(0.01))
        p = fluid.layers.fc(h, 1, param_attr=fluid.initializer.Constant(0.02))
        loss = fluid.layers.reduce_mean(fluid.layers.square(p - y))
        if kind == "adam":
            lr = fluid.layers.exponential_decay(0.01, decay_steps=2, decay_rate=0.5, staircase=True)
            fluid.optimizer.Adam(lr).minimize(loss)
        elif kind == "l2":
            fluid.optimizer.Momentum(0.1, 0.9, regularization=fluid.regularizer.L2Decay(0.01)).minimize(loss)
        else:
            fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup


CASES = {
    "sgd": dict(kind="sgd", pservers=2, trainers=2),
    "sparse": dict(kind="sparse", pservers=2, trainers=2),
    "adam": dict(kind="adam", pservers=2, trainers=2),
    "l2": dict(kind="l2", pservers=1, trainers=2),
    "async": dict(kind="sgd", pservers=2, trainers=2, sync=False),
    "no_slice": dict(kind="adam", pservers=2, trainers=1, slice_var_up=False),
    "one_trainer": dict(kind="adam", pservers=3, trainers=1),
}


def transpiled(case):
    main, startup = build(case["kind"])
    config = fluid.DistributeTranspilerConfig()
    if "slice_var_up" in case:
        config.slice_var_up = case["slice_var_up"]
    if case.get("sync") is False:
        config.sync_mode = False
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(
        1 if case["trainers"] > 1 else 0,
        program=main,
        pservers=endpoints(case),
        trainers=case["trainers"],
        sync_mode=case.get("sync", True),
        startup_program=startup,
    )
    return t, startup


def endpoints(case):
    return ",".join("127.0.0.1:%d" % (6170 + i) for i in range(case["pservers"]))


# each program from a transpiler of its own, as each process of a job makes one (fluid 1.8.5 freed
# the optimizer ops when it built the trainer program, and then failed to build a pserver program)
out = {}
for name, case in sorted(CASES.items()):
    t, startup = transpiled(case)
    record = {"trainer": describe(t.get_trainer_program(wait_port=False)), "trainer_startup": describe(startup)}
    for ep in endpoints(case).split(","):
        t, _ = transpiled(case)
        prog, st = t.get_pserver_programs(ep)
        record["pserver " + ep] = describe(prog)
        record["pserver_startup " + ep] = describe(st)
    out[name] = record
print(json.dumps(out, sort_keys=True))
