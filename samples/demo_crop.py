# fluidcompat demo: the crop program of the device_guard tutorial (seed 000) in its guarded form
# (`slice` under device_guard("cpu"), as samples/device_guard_crop_guarded.py), without its profiler
# block, fetching the cropped tensor and the CPU-side shape it was cropped to. The program has no
# parameters, so there is no startup program to run (running the empty one prints fluid's warning
# "There are no operators in the program to be executed").
import paddle.fluid as fluid

data1 = fluid.layers.fill_constant(shape=[1, 3, 8, 8], value=0.5, dtype='float32')
data2 = fluid.layers.fill_constant(shape=[1, 3, 5, 5], value=0.5, dtype='float32')
shape = fluid.layers.shape(data2)
with fluid.device_guard("cpu"):
    shape = fluid.layers.slice(shape, axes=[0], starts=[0], ends=[4])
out = fluid.layers.crop_tensor(data1, shape=shape)
place = fluid.CUDAPlace(0)
exe = fluid.Executor(place)
result = exe.run(fetch_list=[out, shape])
print(out.name, result[0].shape, result[0].dtype, float(result[0].sum()))
print(shape.name, result[1], result[1].dtype)
