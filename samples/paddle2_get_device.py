# From the user's documents (seed 003, devices chapter): the global device. Unchanged except this header.
import paddle

device = paddle.device.get_device()

print("device:",device)
