# Loads saved_by_fluidcompat/ (an inference model fluidcompat wrote) with load_inference_model and with
# the inference API, and prints the outputs as JSON. Under fluid 1.8.5 it wrote load_saved.json: fluid
# reads fluidcompat's files.
import json
import os
import sys

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.core import AnalysisConfig, PaddleTensor, create_paddle_predictor

d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "saved_by_fluidcompat")
exe = fluid.Executor(fluid.CPUPlace())
rng = np.random.RandomState(0)
img = rng.rand(2, 1, 8, 8).astype("float32")
ids = rng.randint(0, 20, (5, 1)).astype("int64")
words = fluid.create_lod_tensor(ids, [[2, 3]], fluid.CPUPlace())
out = {}
prog, feeds, fetches = fluid.io.load_inference_model(d, exe, "__model__", "__params__")
r = exe.run(prog, feed={"img": img, "words": words}, fetch_list=fetches)
out["executor"] = [feeds, [f.name for f in fetches], np.round(r[0], 5).tolist()]
config = AnalysisConfig(os.path.join(d, "__model__"), os.path.join(d, "__params__"))
config.switch_ir_optim(False)  # fluid 1.8.5's fusion_lstm pass fails on fluid.embedding's [N, 1, 8]
config.disable_glog_info()
predictor = create_paddle_predictor(config)
res = predictor.run([PaddleTensor(img), PaddleTensor(ids, lod=[[0, 2, 5]])])
out["predictor"] = [predictor.get_input_names(), res[0].name, res[0].shape, np.round(res[0].as_ndarray(), 5).tolist()]
json.dump(out, sys.stdout, indent=1, sort_keys=True)
