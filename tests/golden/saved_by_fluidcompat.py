# Writes an inference model (conv + batch_norm + pool + fc, and an embedding + dynamic_lstm +
# sequence_pool branch; parameters set from numpy) with save_inference_model into $SAVE_DIR as
# combined files. Run under fluidcompat it wrote saved_by_fluidcompat/, which load_saved.py reads
# under fluid 1.8.5 (load_saved.json) and under fluidcompat.
import os

import numpy as np
import paddle.fluid as fluid
from _golden import set_params

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    img = fluid.data("img", [None, 1, 8, 8], "float32")
    words = fluid.data("words", [None, 1], "int64", lod_level=1)
    c = fluid.layers.conv2d(img, 4, 3, act=None)
    c = fluid.layers.batch_norm(c, act="relu")
    c = fluid.layers.pool2d(c, 2, pool_type="max", pool_stride=2)
    f = fluid.layers.fc(c, 8, act="tanh")
    e = fluid.embedding(words, [20, 8])
    h, _ = fluid.layers.dynamic_lstm(fluid.layers.fc(e, 32), 32)
    s = fluid.layers.sequence_pool(h, "max")
    out = fluid.layers.softmax(fluid.layers.fc([f, s], 5))
    test = main.clone(for_test=True)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
set_params(main, fluid.global_scope())
variance = fluid.global_scope().find_var("batch_norm_0.w_2").get_tensor()
variance.set(np.abs(np.array(variance)) + 0.1, fluid.CPUPlace())
fluid.io.save_inference_model(
    os.environ["SAVE_DIR"],
    ["img", "words"],
    [out],
    exe,
    main_program=test,
    model_filename="__model__",
    params_filename="__params__",
)
