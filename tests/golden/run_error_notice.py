# Golden script: Executor.run's warning before an error that is not the end of a reader's data
# ("The following exception is not an EOF exception.") and its absence at a reader's end; its notices
# for programs without ops (the default one, and any passed). Prints a JSON report.
import json
import warnings

import numpy as np
import paddle.fluid as fluid

out = []
exe = fluid.Executor(fluid.CPUPlace())
with warnings.catch_warnings(record=True) as caught:  # programs without ops, before any layer
    warnings.simplefilter("always")
    exe.run()
    exe.run(fluid.default_main_program())
    exe.run(fluid.default_startup_program())
    out.append([str(m.message) for m in caught])
x = fluid.data("x", [None, 3])
y = fluid.layers.fc(x, 2)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for feed in ({"x": np.ones((2, 4), "float32")}, {}):
        try:
            exe.run(feed=feed, fetch_list=[y])
        except Exception as e:
            out.append([type(e).__name__ in ("ValueError", "EnforceNotMet", "UninitializedVariableError")])
        out.append([str(m.message) for m in caught])
        del caught[:]
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        r = fluid.data("r", [None, 3])
        reader = fluid.io.PyReader(feed_list=[r], capacity=2, iterable=False)
        z = fluid.layers.mean(r)
        reader.decorate_batch_generator(lambda: iter([[np.ones((2, 3), "float32")]]))
        exe.run(fluid.default_startup_program())
        reader.start()
        got = []
        try:
            while True:
                got.append(float(exe.run(fetch_list=[z])[0]))
        except fluid.core.EOFException:
            reader.reset()
        out.append([got, [str(m.message) for m in caught]])
print(json.dumps(out))
