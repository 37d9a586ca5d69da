# fluidcompat demo: the crop program of the device_guard tutorial (seed 000), without its profiler
# block, fetching the cropped tensor and the CPU-side shape it was cropped to.
import paddle.fluid as fluid

data1 = fluid.layers.fill_constant(shape=[1, 3, 8, 8], value=0.5, dtype='float32')
data2 = fluid.layers.fill_constant(shape=[1, 3, 5, 5], value=0.5, dtype='float32')
shape = fluid.layers.shape(data2)
with fluid.device_guard("cpu"):
    shape = fluid.layers.slice(shape, axes=[0], starts=[0], ends=[4])
out = fluid.layers.crop_tensor(data1, shape=shape)
place = fluid.CUDAPlace(0)
exe = fluid.Executor(place)
exe.run(fluid.default_startup_program())
result = exe.run(fetch_list=[out, shape])
print(out.name, result[0].shape, result[0].dtype, float(result[0].sum()))
print(shape.name, result[1], result[1].dtype)
