"""FLAGS_check_nan_inf=1 (the fluid 1.8 docs' way to find where a NaN or an Inf appears; the test sets
it in the environment): the report of the first op output holding one (up to three values of each
kind, the counts) and the error naming the op and the variable; ops without a NaN or an Inf run as
usual; an sgd step that puts an Inf into a parameter stops there (the parameter is updated, as in
fluid), the next run stops at the mul reading it; set_flags turns the check off."""

import json

import numpy as np
import paddle.fluid as fluid


def error_of(fn):
    try:
        fn()
        return None
    except Exception as e:
        return [type(e).__name__] + [ln.strip() for ln in str(e).splitlines() if "===ERROR" in ln]


out = {}
x = fluid.data("x", [None, 40], "float32")
d = fluid.data("d", [None, 40], "float32")
logged = fluid.layers.log(fluid.layers.scale(x, 2.0))
divided = fluid.Program()
with fluid.program_guard(divided, fluid.Program()):
    ratio = fluid.layers.elementwise_div(fluid.data("x", [None, 40], "float32"), fluid.data("d", [None, 40], "float32"))
exe = fluid.Executor(fluid.CPUPlace())
ok = np.ones((2, 40), "float32")
out["clean"] = exe.run(feed={"x": ok}, fetch_list=[logged])[0].sum().item()
a = np.ones((2, 40), "float32")
a[0, 5:9] = 0
out["log_of_zero"] = error_of(lambda: exe.run(feed={"x": a}, fetch_list=[logged]))
b = np.ones((2, 40), "float32")
b[1, 2:6] = 0
c = np.ones((2, 40), "float32")
c[1, 4:9] = 0
out["division"] = error_of(lambda: exe.run(divided, feed={"x": b, "d": c}, fetch_list=[ratio]))

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x2 = fluid.data("x2", [None, 4], "float32")
    loss = fluid.layers.mean(fluid.layers.fc(x2, 3))
    fluid.optimizer.SGD(1e30).minimize(loss)
exe.run(startup)
big = {"x2": np.full((2, 4), 1e30, "float32")}
out["train"] = [error_of(lambda: exe.run(main, feed=big, fetch_list=[loss])) for _ in range(2)]
fluid.set_flags({"FLAGS_check_nan_inf": False})
out["flag_off"] = [fluid.get_flags(["FLAGS_check_nan_inf"]), exe.run(main, feed=big, fetch_list=[loss])[0].tolist()]
print(json.dumps(out))
