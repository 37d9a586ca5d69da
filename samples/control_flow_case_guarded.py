# From the user's documents (seed 004, "Profiler" article, scenario 2): the control-flow program with
# the predicates and their inputs guarded to the CPU. Unchanged except this header and the
# indentation the document's text lost.
import paddle.fluid as fluid
import paddle.fluid.layers as layers
import paddle.fluid.profiler as profiler
import time
profiler.start_profiler('All')
def fn_1():
    return layers.fill_constant(shape=[1, 2], dtype='float32', value=1)
def fn_2():
    return layers.fill_constant(shape=[2, 2], dtype='int32', value=2)
def fn_3():
    return layers.fill_constant(shape=[3], dtype='int32', value=3)
main_program = fluid.default_startup_program()
startup_program = fluid.default_main_program()
with fluid.program_guard(main_program, startup_program):
    #设置x、 y 、z 运行在CPU上
    with fluid.device_guard("cpu"):
        x = layers.fill_constant(shape=[1], dtype='float32', value=0.3)
        y = layers.fill_constant(shape=[1], dtype='float32', value=0.1)
        z = layers.fill_constant(shape=[1], dtype='float32', value=0.2)
    #设置pred_1、 pred_2 、pred_3 运行在CPU上
    with fluid.device_guard("cpu"):
        pred_1 = layers.less_than(z, x) # true: 0.2 < 0.3
        pred_2 = layers.less_than(x, y) # false: 0.3 < 0.1
        pred_3 = layers.equal(x, y) # false: 0.3 == 0.1
    # 如果pred_1为True则运行
    out_1 = layers.case(
        pred_fn_pairs=[(pred_1, fn_1), (pred_2, fn_2)], default=fn_3)
    # 此处default 参数为None,当前面条件都不满足的时候会把最后一个分支当成默认分支
    out_2 = layers.case(pred_fn_pairs=[(pred_2, fn_2), (pred_3, fn_3)])
exe = fluid.Executor(fluid.CUDAPlace(0))
for i in range(100):
    if i > 20:
        time_start=time.time()
    res_1, res_2 = exe.run(main_program, fetch_list=[out_1, out_2])
time_end = time.time()
print('time cost',time_end-time_start,'s')
profiler.stop_profiler('total', '/tmp/profile')
print(res_1) # [[1. 1.]]
print(res_2) # [3 3 3]
