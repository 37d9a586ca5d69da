"""``fluid.install_check.run_check()``: builds and trains a tiny program to show the install works."""

from __future__ import annotations

import numpy as np

__all__ = ["run_check"]


def run_check():
    import fluidcompat as fluid

    print("Running Verify Fluid Program ... ")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("inp", [None, 2], "float32")
        loss = fluid.layers.mean(fluid.layers.fc(x, 3))
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    exe.run(main, feed={"inp": np.ones((2, 2), "float32")}, fetch_list=[loss], scope=scope)
    print("Your Paddle Fluid works well on SINGLE GPU or CPU.")
    print("Your Paddle Fluid is installed successfully! Let's start deep Learning with Paddle Fluid now")
