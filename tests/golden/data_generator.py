# Golden script: fluid.incubate.data_generator. slot_generator.py run on its own (the slot lines a
# MultiSlotDataGenerator and a MultiSlotStringDataGenerator write, batches reordered by
# generate_batch, float slots, its checks), then as the pipe command of a QueueDataset that trains
# on its output (train_from_dataset prints each batch's fetched sum). Prints text.
import os
import runpy
import sys
import tempfile

import paddle.fluid as fluid

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "slot_generator.py")
argv, sys.argv = sys.argv, [GEN]
runpy.run_path(GEN, run_name="__main__")
sys.argv = argv
sys.stdout.flush()
data = os.path.join(tempfile.mkdtemp(), "data.txt")
with open(data, "w") as f:
    f.write("0.5 1 2 3\n1.5 4 5\n\n2 7\n3 1 1 1 1\n")
words = fluid.data("words", [None, 1], "int64", lod_level=1)
score = fluid.data("score", [None, 1], "float32", lod_level=1)
label = fluid.data("label", [None, 1], "int64", lod_level=1)
pooled = fluid.layers.sequence_pool(fluid.layers.cast(words, "float32"), "sum")
s = fluid.layers.reduce_sum(pooled) + fluid.layers.reduce_sum(score) * 10.0
ds = fluid.DatasetFactory().create_dataset("QueueDataset")
ds.set_use_var([words, score, label])
ds.set_batch_size(2)
ds.set_pipe_command(f"{sys.executable} {GEN} stdin")
ds.set_filelist([data])
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
exe.train_from_dataset(fluid.default_main_program(), ds, fetch_list=[s], fetch_info=["s"], print_period=1)
