# Records this worker's environment and pid in DIR, then keeps all-reducing until stopped (at most ~60 s).
# usage: worker_waits.py DIR
import json
import os
import sys
import time

import paddle
import paddle.distributed as dist

out = sys.argv[1]
dist.init_parallel_env()
keys = [
    "PADDLE_TRAINER_ID",
    "PADDLE_TRAINERS_NUM",
    "PADDLE_CURRENT_ENDPOINT",
    "PADDLE_TRAINER_ENDPOINTS",
    "PADDLE_RANK_IN_NODE",
    "FLAGS_selected_gpus",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
]
rank = dist.get_rank()
with open(os.path.join(out, f"env.{rank}.json"), "w") as f:
    json.dump({k: os.environ.get(k) for k in keys}, f)
with open(os.path.join(out, f"pid.{rank}"), "w") as f:
    f.write(str(os.getpid()))
print("worker", rank, "ready", flush=True)
t = paddle.to_tensor([1.0])
for _ in range(600):
    dist.all_reduce(t)
    time.sleep(0.1)
