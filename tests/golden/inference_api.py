# fluid 1.8's Python inference API (paddle.fluid.core): AnalysisConfig (model directory and combined
# files), create_paddle_predictor, run over PaddleTensors, the zero-copy tensors, NativeConfig,
# clone(), and bad input. Prints lines.
import tempfile

import numpy as np
import paddle.fluid as fluid
from _golden import set_params
from paddle.fluid.core import AnalysisConfig, NativeConfig, PaddleTensor, create_paddle_predictor

d = tempfile.mkdtemp() + "/infer_model"
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 4], "float32")
    ids = fluid.data("ids", [None, 1], "int64")
    h = fluid.layers.fc(x, 3, act="relu", param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.2)))
    e = fluid.layers.reshape(
        fluid.embedding(ids, [10, 3], param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.5))), [-1, 3]
    )
    out = fluid.layers.softmax(h + e)
    out2 = fluid.layers.reduce_sum(out, dim=1)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
set_params(main, fluid.global_scope())
fluid.io.save_inference_model(d, ["x", "ids"], [out, out2], exe, main_program=main)
fluid.io.save_inference_model(
    d + "_combined", ["x", "ids"], [out], exe, main_program=main, model_filename="model", params_filename="params"
)
X = np.arange(8, dtype="float32").reshape(2, 4) / 10
I = np.array([[1], [3]], "int64")

config = AnalysisConfig(d)
config.disable_gpu()
print(
    config.model_dir() == d,
    config.use_gpu(),
    config.ir_optim(),
    config.use_feed_fetch_ops_enabled(),
    config.specify_input_name(),
)
pred = create_paddle_predictor(config)
print(type(pred).__name__, pred.get_input_names(), pred.get_output_names())
outs = pred.run([PaddleTensor(X), PaddleTensor(I)])
for t in outs:
    print(t.name, t.shape, t.dtype, t.lod, np.round(t.as_ndarray(), 5).tolist())
t = PaddleTensor(X)
print(t.name, t.shape, t.dtype, t.lod)
t.name = "x"
print(t.name)
# zero-copy
config = AnalysisConfig(d)
config.switch_use_feed_fetch_ops(False)
config.switch_specify_input_names(True)
config.disable_glog_info()
print(config.use_feed_fetch_ops_enabled(), config.specify_input_name(), config.glog_info_disabled())
pred2 = create_paddle_predictor(config)
xt = pred2.get_input_tensor("x")
xt.copy_from_cpu(X)
it = pred2.get_input_tensor("ids")
it.copy_from_cpu(I)
print(xt.shape(), it.shape())
pred2.zero_copy_run()
o = pred2.get_output_tensor(pred2.get_output_names()[0])
print(o.shape(), np.round(o.copy_to_cpu(), 5).tolist(), o.lod())
# combined files
c3 = AnalysisConfig(d + "_combined/model", d + "_combined/params")
print(c3.prog_file()[-5:], c3.params_file()[-6:], c3.model_dir())
p3 = create_paddle_predictor(c3)
print(np.round(p3.run([PaddleTensor(X), PaddleTensor(I)])[0].as_ndarray(), 5).tolist())
# native config
nc = NativeConfig()
nc.model_dir = d
nc.use_gpu = False
p4 = create_paddle_predictor(nc)
print(type(p4).__name__, np.round(p4.run([PaddleTensor(X), PaddleTensor(I)])[1].as_ndarray(), 5).tolist())
p5 = pred.clone()
print(np.round(p5.run([PaddleTensor(X), PaddleTensor(I)])[0].as_ndarray(), 5).tolist())
for bad in (
    lambda: create_paddle_predictor(AnalysisConfig(d + "_missing")),
    lambda: pred.run([PaddleTensor(X)]),
    lambda: create_paddle_predictor(config),
):
    try:
        bad()
        print("no error")
    except Exception as ex:
        print(type(ex).__name__)
