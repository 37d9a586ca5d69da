# Executor.run(use_prune=True) (the fetched variables and the optimizer ops, from the fed ones) and
# Program._prune / _prune_with_input with their errors. Prints lines.
import numpy as np
import paddle.fluid as fluid

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 2], "float32")
    z = fluid.data("z", [None, 2], "float32")
    w = fluid.layers.create_parameter([2, 1], "float32", name="w", default_initializer=fluid.initializer.Constant(0.5))
    a = fluid.layers.scale(x, 2.0)
    b = fluid.layers.scale(z, 3.0)
    pred = fluid.layers.matmul(a, w)
    loss = fluid.layers.mean(pred)
    opt_ops, _ = fluid.optimizer.SGD(0.1).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
X = np.ones((2, 2), "float32")
W = lambda: np.array(fluid.global_scope().find_var("w").get_tensor()).ravel().tolist()
print(exe.run(main, feed={"x": X}, fetch_list=[a], use_prune=True)[0].tolist(), W())
print(exe.run(main, feed={"x": X}, fetch_list=[loss.name], use_prune=True)[0].tolist(), W())
print(exe.run(main, feed={"x": X}, fetch_list=[a, opt_ops[0]], use_prune=True)[0].tolist(), W())
print(exe.run(main, feed={"x": X, "z": X}, fetch_list=[b], use_prune=True)[0].tolist(), W())
print(exe.run(main, feed={"z": X, "x": X}, fetch_list=[b], use_prune=True)[0].tolist(), W())
print([op.type for op in main._prune(targets=[a]).global_block().ops])
print([op.type for op in main._prune(targets=[loss]).global_block().ops])
print([op.type for op in main._prune_with_input(feeded_var_names=["x"], targets=[a]).global_block().ops])
print([op.type for op in main._prune_with_input(feeded_var_names=[a.name], targets=[loss]).global_block().ops])
print(sorted(main._prune_with_input(["x"], [pred]).global_block().vars))
print(len(main.global_block().ops))
for bad in (lambda: main._prune_with_input([x], [a]), lambda: main._prune(["w"]), lambda: main._prune([3])):
    try:
        bad()
        print("no error")
    except Exception as e:
        print(type(e).__name__)
