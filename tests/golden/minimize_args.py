# Golden script: Optimizer.minimize / backward / apply_gradients and append_backward with their
# arguments (parameter_list of names or Variables, no_grad_set, callbacks) and a loss that is not one
# value. Prints {case: [optimize op types, [param, grad] pairs, all op types]} or an error.
import json
import sys

import paddle.fluid as fluid
import paddle.fluid.layers as L


def build(kind):
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data("x", [None, 3], "float32")
        h = L.fc(x, 4, act="tanh")
        y = L.fc(h, 2)
        loss = L.mean(y)
        opt = fluid.optimizer.SGD(0.1)
        try:
            if kind == "plist":
                r = opt.minimize(loss, parameter_list=["fc_1.w_0", "fc_1.b_0"])
            elif kind == "nogs":
                r = opt.minimize(loss, no_grad_set=set(["fc_0.w_0"]))
            elif kind == "nogs_var":
                r = opt.minimize(loss, no_grad_set=set([h]))
            elif kind == "plist_vars":
                r = opt.minimize(loss, parameter_list=[main.global_block().var("fc_0.w_0")])
            elif kind == "plist_unknown":
                r = opt.minimize(loss, parameter_list=["nope"])
            elif kind == "startup_prog":
                r = opt.minimize(loss, startup_program=start)
            elif kind == "backward_apply":
                pg = opt.backward(loss)
                r = (opt.apply_gradients(pg), pg)
            elif kind == "append_backward_cb":
                pg = fluid.backward.append_backward(loss, callbacks=[lambda block, context: None])
                r = ([], pg)
            elif kind == "loss_not_scalar":
                r = opt.minimize(y)
            ops, pg = r
            report[kind] = [
                [o.type for o in ops],
                sorted([p.name, g.name] for p, g in pg),
                [op.type for op in main.global_block().ops],
            ]
        except Exception as e:  # noqa: BLE001
            report[kind] = ["error", type(e).__name__, str(e).strip().splitlines()[-1]]


report = {}
for k in [
    "plist",
    "nogs",
    "nogs_var",
    "plist_vars",
    "plist_unknown",
    "startup_prog",
    "backward_apply",
    "append_backward_cb",
    "loss_not_scalar",
]:
    build(k)
json.dump(report, sys.stdout, indent=1, sort_keys=True)
