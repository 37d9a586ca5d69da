# From the user's documents (seed 003, devices chapter): multi-GPU data-parallel training. The seed's
# lines of train_multi_gpu() are unchanged; its "..." is filled with a training loop on each worker's
# share of every batch. Run it with several workers:
#   fluidcompat launch --nproc_per_node 2 samples/paddle2_data_parallel.py   (CPU: add --device cpu)
# or alone (one worker) with fluidcompat run.
import numpy as np
import paddle.nn.functional as F

import paddle 
import paddle.distributed as dist

def train_multi_gpu(model):
    # 修改1- 初始化并行环境
    dist.init_parallel_env()
    # 修改2- 增加paddle.DataParallel封装
    model = paddle.DataParallel(model)
    model.train()
    opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
    rng = np.random.RandomState(0)  # the same batches on every worker; each takes its share
    rank, nranks = dist.get_rank(), dist.get_world_size()
    for step in range(20):
        x = rng.rand(64, 16).astype('float32')
        y = (x.sum(axis=1, keepdims=True) > 8).astype('int64')
        share = slice(rank * 64 // nranks, (rank + 1) * 64 // nranks)
        loss = F.cross_entropy(model(paddle.to_tensor(x[share])), paddle.to_tensor(y[share]))
        loss.backward()
        opt.step()
        opt.clear_grad()
        if step % 5 == 0:
            print("worker {}/{} step {} loss {}".format(rank, nranks, step, loss.numpy()))
    return model


paddle.seed(2)
model = paddle.nn.Sequential(paddle.nn.Linear(16, 32), paddle.nn.ReLU(), paddle.nn.Linear(32, 2))
trained = train_multi_gpu(model)
print("worker {} final weight sum {:.6f}".format(dist.get_rank(), float(trained.state_dict()['2.weight'].sum())))
