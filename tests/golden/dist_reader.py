# fluid.contrib.reader.distributed_batch_reader: the batches trainer k of n takes (PADDLE_TRAINER_ID,
# PADDLE_TRAINERS_NUM), what it prints, and one trainer.
import json
import os

import paddle.fluid as fluid


def batches():
    for i in range(7):
        yield [(i, i * 10)]


out = {}
for n, k in ((1, 0), (2, 0), (2, 1), (3, 2)):
    os.environ["PADDLE_TRAINERS_NUM"] = str(n)
    os.environ["PADDLE_TRAINER_ID"] = str(k)
    reader = fluid.contrib.reader.distributed_batch_reader(batches)
    out["%d_%d" % (n, k)] = [b for b in reader()]
    again = fluid.contrib.distributed_batch_reader(batches)
    out["%d_%d_again" % (n, k)] = [b for b in again()]
print(json.dumps(out, sort_keys=True))
