# From the user's documents (seed 003, devices chapter): a tensor's place, and a copy to the GPU.
# Unchanged except this header (the comments are the chapter's; Paddle 2.x prints Place(cpu), Place(gpu:0)).
import paddle
x = paddle.to_tensor(1.0, place=paddle.CPUPlace())
print(x.place)        # CPUPlace

y = x.cuda()
print(y.place)        # CUDAPlace(0)
