# From the user's documents (seed 004, "Profiler" article): start_profiler at iteration 2 and
# stop_profiler at iteration 8 around the crop program. Unchanged except this header and the
# indentation the document's text lost.
import paddle.fluid as fluid
import paddle.fluid.compiler as compiler
import paddle.fluid.profiler as profiler
data1 = fluid.layers.fill_constant(shape=[1, 3, 8, 8], value=0.5, dtype='float32')
data2 = fluid.layers.fill_constant(shape=[1, 3, 5, 5], value=0.5, dtype='float32')
shape = fluid.layers.shape(data2)
shape = fluid.layers.slice(shape, axes=[0], starts=[0], ends=[4])
out = fluid.layers.crop_tensor(data1, shape=shape)
place = fluid.CUDAPlace(0)
exe = fluid.Executor(place)
exe.run(fluid.default_startup_program())
compiled_prog = compiler.CompiledProgram(fluid.default_main_program())
for iter in range(10):
    if(iter == 2):
        #开始Profiler过程,对CPU和GPU进行性能分析统计,tracer_option 选项为Default
        profiler.start_profiler(state='All', tracer_option='Default')
    if(iter == 8):
        #结束Profiler过程,按照总时间打印分析结果,/tmp路径下生成profile用于后续timeline生成和分析
        profiler.stop_profiler(sorted_key='total', profile_path='/tmp/profile')
    result = exe.run(program=compiled_prog, fetch_list=[out])
