"""fluidcompat.export: the GraphModule, torch.export (.pt2) and ONNX (onnxruntime, where installed) against
the Executor's outputs, and against fluid 1.8.5's for models it saved (tests/golden/export_fluid18)."""

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import fluidcompat as fluid
from fluidcompat.export import ExportError, save, to_module
from fluidcompat.export.cli import load_model
from fluidcompat.export.cli import main as cli_main

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden", "export_fluid18")
HAS_ORT = importlib.util.find_spec("onnxruntime") is not None and importlib.util.find_spec("onnxscript") is not None
BATCHES = (3, 8)
RTOL = 1e-5


# -- the models ---------------------------------------------------------------------------------------
def mlp():
    x = fluid.data("x", [-1, 13], "float32")
    h = fluid.layers.fc(x, 32, act="relu")
    h = fluid.layers.dropout(h, 0.3)
    return fluid.layers.fc(h, 3, act="softmax")


def lenet():
    img = fluid.data("img", [-1, 1, 28, 28], "float32")
    c = fluid.nets.simple_img_conv_pool(img, 6, 5, 2, 2, act="relu")
    c = fluid.layers.batch_norm(c)
    c = fluid.nets.simple_img_conv_pool(c, 16, 5, 2, 2, act="relu")
    return fluid.layers.fc(c, 10, act="softmax")


def resnet_block():
    def conv_bn(x, ch, k, stride, act):
        c = fluid.layers.conv2d(x, ch, k, stride, padding=(k - 1) // 2, bias_attr=False)
        return fluid.layers.batch_norm(c, act=act)

    img = fluid.data("img", [-1, 3, 16, 16], "float32")
    x = conv_bn(img, 8, 3, 1, "relu")
    y = conv_bn(conv_bn(x, 8, 3, 1, "relu"), 8, 3, 1, None)
    x = fluid.layers.elementwise_add(x, y, act="relu")
    y = conv_bn(conv_bn(x, 16, 3, 2, "relu"), 16, 3, 1, None)
    x = fluid.layers.elementwise_add(conv_bn(x, 16, 1, 2, None), y, act="relu")
    x = fluid.layers.pool2d(x, pool_type="avg", global_pooling=True)
    return fluid.layers.fc(x, 10, act="softmax")


def text_cnn():
    words = fluid.data("words", [-1, 20], "int64")
    emb = fluid.embedding(words, size=[100, 16])
    x = fluid.layers.unsqueeze(emb, [1])
    pooled = []
    for k in (2, 3):
        c = fluid.layers.conv2d(x, 8, (k, 16), act="relu")
        pooled.append(fluid.layers.reduce_max(c, dim=[2, 3]))
    return fluid.layers.fc(fluid.layers.concat(pooled, axis=1), 2, act="softmax")


def recommender():
    uid = fluid.data("user_id", [-1, 1], "int64")
    gender = fluid.data("gender", [-1, 1], "int64")
    mid = fluid.data("movie_id", [-1, 1], "int64")
    u = fluid.layers.concat(
        [
            fluid.layers.fc(fluid.layers.embedding(uid, [50, 16]), 16),
            fluid.layers.fc(fluid.layers.embedding(gender, [2, 8]), 16),
        ],
        axis=1,
    )
    u = fluid.layers.fc(u, 32, act="tanh")
    m = fluid.layers.fc(fluid.layers.embedding(mid, [80, 16]), 32, act="tanh")
    return fluid.layers.scale(fluid.layers.cos_sim(u, m), 5.0)


def lstm():
    x = fluid.data("x", [-1, 6, 8], "float32")
    out, last_h, _ = fluid.contrib.layers.basic_lstm(x, None, None, 16)
    return fluid.layers.fc(fluid.layers.reshape(last_h, [-1, 16]), 4)


def cudnn_lstm():
    x = fluid.data("x", [-1, 6, 8], "float32")  # batch, steps, features
    steps_first = fluid.layers.transpose(x, [1, 0, 2])
    h0 = fluid.layers.fill_constant_batch_size_like(steps_first, [1, -1, 16], "float32", 0.0, 1, 1)
    c0 = fluid.layers.fill_constant_batch_size_like(steps_first, [1, -1, 16], "float32", 0.0, 1, 1)
    out, _, _ = fluid.layers.lstm(steps_first, h0, c0, 6, 16, 1)
    return fluid.layers.reduce_mean(out, dim=0)


MODELS = {
    "mlp": mlp,
    "lenet": lenet,
    "resnet_block": resnet_block,
    "text_cnn": text_cnn,
    "recommender": recommender,
    "basic_lstm": lstm,
    "cudnn_lstm": cudnn_lstm,
}
# id inputs: (table rows)
ID_ROWS = {"words": 100, "user_id": 50, "gender": 2, "movie_id": 80}


def initialized(build):
    """(program, output, scope): ``build()``'s program, its startup program run in a new scope."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        out = build()
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        if startup.global_block().ops:
            fluid.Executor(fluid.CPUPlace()).run(startup)
    return main, out, scope


def random_feed(program, names, batch, seed):
    rng = np.random.RandomState(seed)
    feed = {}
    for n in names:
        v = program.global_block().var(n)
        shape = [batch if d < 0 else d for d in v.shape]
        if n in ID_ROWS:
            feed[n] = rng.randint(0, ID_ROWS[n], shape).astype("int64")
        else:
            feed[n] = rng.uniform(-1, 1, shape).astype("float32")
    return feed


def rel_error(got, want) -> float:
    """max |got - want| over max |want| (the output's scale)."""
    got, want = np.asarray(got, "float64"), np.asarray(want, "float64")
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


def assert_close(got, want):
    got = got.detach().numpy() if torch.is_tensor(got) else np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * max(np.abs(want).max(), 1e-6))


class Built:
    """A model built, initialized (random parameters and batch_norm statistics) and exported."""

    def __init__(self, name, tmp):
        self.main, self.out, self.scope = initialized(MODELS[name])
        self.exe = fluid.Executor(fluid.CPUPlace())
        rng = np.random.RandomState(1)
        for v in self.main.list_vars():
            sv = self.scope.find_var(v.name) if v.persistable else None
            if sv is not None and sv.is_initialized():
                a = np.asarray(sv.get_tensor())
                if a.dtype == np.float32:
                    a = rng.uniform(0.5, 1.5, a.shape) if "w_2" in v.name else rng.uniform(-0.5, 0.5, a.shape)
                    sv.get_tensor().set(a.astype("float32"), fluid.CPUPlace())
        self.feeds = [n for n in (v.name for v in self.main.list_vars()) if self.main.global_block().var(n).is_data]
        self.test = self.main.clone(for_test=True)
        self.module = to_module(self.main, self.feeds, [self.out], self.scope)
        self.pt2 = os.path.join(tmp, name + ".pt2")
        self.onnx = os.path.join(tmp, name + ".onnx")
        save(self.module, self.pt2, "pt2")
        if HAS_ORT:
            save(self.module, self.onnx, "onnx")

    def reference(self, feed):
        with fluid.scope_guard(self.scope):
            return self.exe.run(self.test, feed=feed, fetch_list=[self.out])[0]


@pytest.fixture(scope="module", params=sorted(MODELS))
def built(request, tmp_path_factory):
    return request.param, Built(request.param, str(tmp_path_factory.mktemp(request.param)))


def _args(built_model, feed):
    return [torch.from_numpy(feed[n]) for n in built_model.feeds]


@pytest.mark.parametrize("batch", BATCHES)
class TestMatchesExecutor:
    def test_module(self, built, batch):
        name, b = built
        feed = random_feed(b.test, b.feeds, batch, seed=batch)
        with torch.no_grad():
            assert_close(b.module(*_args(b, feed))[0], b.reference(feed))

    def test_pt2(self, built, batch):
        name, b = built
        feed = random_feed(b.test, b.feeds, batch, seed=batch + 1)
        loaded = torch.export.load(b.pt2).module()
        assert_close(loaded(*_args(b, feed))[0], b.reference(feed))

    @pytest.mark.skipif(not HAS_ORT, reason="onnxruntime / onnxscript not installed (pip install '.[export]')")
    def test_onnx(self, built, batch):
        import onnxruntime

        name, b = built
        feed = random_feed(b.test, b.feeds, batch, seed=batch + 2)
        session = onnxruntime.InferenceSession(b.onnx, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        assert names == [s.name for s in b.module.inputs]
        got = session.run(None, {s.name: feed[s.fluid_name] for s in b.module.inputs})[0]
        assert_close(got, b.reference(feed))


class TestModule:
    def test_code_reads_as_the_program(self):
        main, out, scope = initialized(mlp)
        m = to_module(main, ["x"], [out], scope)
        assert "fc_0_tmp_0 = self.mul_0(x, fc_0_w_0)" in m.code
        assert m.fluid_names["fc_0_w_0"] == "fc_0.w_0"
        assert isinstance(m.fc_0_w_0, torch.nn.Parameter)
        assert sorted(m.state_dict()) == ["fc_0_b_0", "fc_0_w_0", "fc_1_b_0", "fc_1_w_0"]
        assert [s.shape for s in m.inputs] == [(-1, 13)]

    def test_batch_norm_statistics_are_buffers(self):
        main, out, scope = initialized(lenet)
        m = to_module(main, ["img"], [out], scope)
        buffers = {m.fluid_names[n] for n, _ in m.named_buffers()}
        assert buffers == {"batch_norm_0.w_1", "batch_norm_0.w_2"}

    def test_state_dict_file_loads_into_the_module(self, tmp_path):
        main, out, scope = initialized(mlp)
        m = to_module(main, ["x"], [out], scope)
        path = str(tmp_path / "params.pt")
        save(m, path, "state_dict")
        state = torch.load(path)
        assert all(
            np.array_equal(state[k].numpy(), np.asarray(scope.find_var(m.fluid_names[k]).get_tensor())) for k in state
        )
        m.load_state_dict(state)


def test_module_trains_in_pytorch():
    main, out, scope = initialized(mlp)
    module = to_module(main, ["x"], [out], scope)
    opt = torch.optim.SGD(module.parameters(), lr=0.5)
    x, y = torch.rand(16, 13), torch.randint(0, 3, (16,))
    losses = []
    for _ in range(5):
        loss = torch.nn.functional.nll_loss(torch.log(module(x)[0]), y)
        opt.zero_grad()
        loss.backward()
        assert all(p.grad is not None for p in module.parameters())
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_eager_module_raises_the_kernels_own_error():
    main, out, scope = initialized(lambda: fluid.layers.embedding(fluid.data("ids", [-1, 1], "int64"), [10, 4]))
    module = to_module(main, ["ids"], [out], scope)
    with pytest.raises(ValueError, match="expected >= 0 and < 10") as info:
        module(torch.tensor([[3], [10]]))
    assert not isinstance(info.value, ExportError)


# -- what does not export -------------------------------------------------------------------------
def _refused(build, feeds, tmp_path):
    main, out, scope = initialized(build)
    path = str(tmp_path / "m.pt2")
    with pytest.raises(ExportError) as info:
        save(to_module(main, feeds, [out], scope), path, "pt2")
    assert os.listdir(tmp_path) == []
    message = str(info.value)
    assert "\n" not in message
    return message


class TestRefused:
    def test_feed_overwritten(self, tmp_path):
        def build():
            x = fluid.data("x", [-1, 4], "float32")
            fluid.layers.assign(fluid.layers.relu(x), x)
            return x

        assert "overwrites the feed 'x'" in _refused(build, ["x"], tmp_path)

    def test_lod_input(self, tmp_path):
        def build():
            x = fluid.data("x", [-1, 4], "float32", lod_level=1)
            return fluid.layers.sequence_pool(x, "sum")

        assert "feed 'x' is a LoDTensor" in _refused(build, ["x"], tmp_path)

    def test_py_func(self, tmp_path):
        def build():
            x = fluid.data("x", [-1, 4], "float32")
            y = fluid.default_main_program().current_block().create_var(name="y", shape=[-1, 4], dtype="float32")
            fluid.layers.py_func(lambda a: a, x, y)
            return y

        message = _refused(build, ["x"], tmp_path)
        assert message.startswith("op py_func") and "Python code" in message

    def test_value_read_for_a_shape(self, tmp_path):
        def build():
            x = fluid.data("x", [-1, 8], "float32")
            end = fluid.data("end", [1], "int32")
            return fluid.layers.slice(x, axes=[1], starts=[0], ends=end)

        message = _refused(build, ["x", "end"], tmp_path)
        assert message.startswith("op slice") and "host" in message


# -- control flow: cond, case, switch_case as torch.cond, while_loop as torch.while_loop ---------------------
def cond_model():
    x = fluid.data("x", [-1, 4], "float32")
    zero = fluid.layers.fill_constant([1], "float32", 0.0)
    return fluid.layers.cond(
        fluid.layers.reduce_sum(x) > zero,
        lambda: fluid.layers.fc(x, 3, act="relu"),
        lambda: fluid.layers.tanh(fluid.layers.fc(x, 3)),
    )


def switch_model():
    x = fluid.data("x", [-1, 4], "float32")
    k = fluid.layers.cast(fluid.layers.reduce_sum(fluid.layers.relu(x)), "int64")
    return fluid.layers.switch_case(
        k,
        {0: lambda: fluid.layers.scale(x, 2.0), 1: lambda: fluid.layers.fc(x, 4)},
        default=lambda: fluid.layers.sigmoid(x),
    )


def while_model():
    x = fluid.data("x", [-1, 4], "float32")
    i = fluid.layers.fill_constant([1], "int64", 0)
    steps = fluid.layers.cast(fluid.layers.reduce_sum(fluid.layers.relu(x)), "int64")  # 0 to 5 steps

    def body(i, y):
        return [fluid.layers.increment(i), fluid.layers.tanh(fluid.layers.fc(y, 4))]

    _, y = fluid.layers.while_loop(lambda i, y: i < steps, body, [i, fluid.layers.scale(x, 1.0)])
    return fluid.layers.fc(y, 2)


def loop_variable_model():
    """The loop variable itself fetched: the while op updates it in place."""
    x = fluid.data("x", [-1, 4], "float32")
    i = fluid.layers.fill_constant([1], "int64", 0)
    ten = fluid.layers.fill_constant([1], "int64", 10)
    _, y = fluid.layers.while_loop(
        lambda i, y: i < ten,
        lambda i, y: [fluid.layers.increment(i), fluid.layers.tanh(y)],
        [i, fluid.layers.scale(x, 1.0)],
    )
    return y


@pytest.mark.parametrize(
    "build",
    [cond_model, switch_model, while_model, loop_variable_model],
    ids=["cond", "switch_case", "while_loop", "loop_variable"],
)
def test_control_flow_as_torch_cond(build, tmp_path):
    main, out, scope = initialized(build)
    exe = fluid.Executor(fluid.CPUPlace())
    module = to_module(main, ["x"], [out], scope)
    assert "torch.ops.higher_order." in module.code
    save(module, str(tmp_path / "m.pt2"), "pt2")
    loaded = torch.export.load(str(tmp_path / "m.pt2")).module()
    session = None
    if HAS_ORT:
        import onnxruntime

        save(module, str(tmp_path / "m.onnx"), "onnx")
        session = onnxruntime.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    rng = np.random.RandomState(0)
    # inputs taking every branch: negative, small positive, large positive sums
    for x in (-rng.rand(3, 4), rng.rand(2, 4) * 0.1, rng.rand(5, 4) + 0.5):
        x = x.astype("float32")
        with fluid.scope_guard(scope):
            want = exe.run(main, feed={"x": x}, fetch_list=[out])[0]
        with torch.no_grad():
            assert_close(module(torch.from_numpy(x))[0], want)
        assert_close(loaded(torch.from_numpy(x))[0], want)
        if session is not None:
            assert_close(session.run(None, {"x": x})[0], want)


# -- fluid 1.8.5's saved models and the CLI -------------------------------------------------------------
with open(os.path.join(HERE, "golden", "export_fluid18.json")) as f:
    FLUID18 = json.load(f)


def _feed(case):
    return {k: np.array(v, dtype=dt).reshape(shape) for k, (dt, shape, v) in case["feed"].items()}


@pytest.mark.parametrize("name", sorted(FLUID18))
def test_fluid18_saved_model(name, tmp_path):
    program, feeds, fetches, scope = load_model(os.path.join(GOLDEN, name))
    assert feeds == FLUID18[name]["feeds"]
    module = to_module(program, feeds, fetches, scope)
    # a loaded model's variables are not Parameters: the ones an op learns are, batch_norm's statistics not
    buffers = {module.fluid_names[n] for n, _ in module.named_buffers()}
    assert buffers == ({"batch_norm_0.w_1", "batch_norm_0.w_2"} if name == "cnn" else set())
    save(module, str(tmp_path / "m.pt2"), "pt2")
    loaded = torch.export.load(str(tmp_path / "m.pt2")).module()
    for case in FLUID18[name]["cases"]:
        feed = _feed(case)
        shape, values = case["out"]
        want = np.array(values).reshape(shape)
        args = [torch.from_numpy(feed[n]) for n in feeds]
        with torch.no_grad():
            assert_close(module(*args)[0].numpy(), want)
        assert_close(loaded(*args)[0], want)


@pytest.mark.skipif(not HAS_ORT, reason="onnxruntime / onnxscript not installed (pip install '.[export]')")
def test_cli_exports_fluid18_model_to_onnx(tmp_path, capsys):
    import onnxruntime

    path = str(tmp_path / "rec.onnx")
    assert cli_main([os.path.join(GOLDEN, "rec"), "--format", "onnx", "-o", path]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {path} (onnx" in printed
    assert "input   user_id int64 [batch, 1]" in printed and "input   dense float32 [batch, 4]" in printed
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    for case in FLUID18["rec"]["cases"]:
        shape, values = case["out"]
        assert_close(session.run(None, _feed(case))[0], np.array(values).reshape(shape))


SCRIPT = """
import numpy as np
import paddle.fluid as fluid
x = fluid.data("x", [None, 5], "float32")
y = fluid.layers.fc(x, 3, act="relu")
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
fluid.io.save_inference_model({out!r}, ["x"], [y], exe)
np.save({ref!r}, exe.run(feed={{"x": np.ones((2, 5), "float32")}}, fetch_list=[y])[0])
"""


def test_cli_exports_the_model_a_script_saves(tmp_path):
    script = tmp_path / "train.py"
    ref = str(tmp_path / "ref.npy")
    script.write_text(SCRIPT.format(out=str(tmp_path / "model"), ref=ref))
    path = str(tmp_path / "fc.pt2")
    # (in a process of its own: running a script installs the paddle alias and numpy's old names)
    done = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "export", str(script), "-o", path], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "input   x float32 [batch, 5]" in done.stdout
    got = torch.export.load(path).module()(torch.ones(2, 5))[0]
    assert_close(got, np.load(ref))


def test_cli_refusal_is_one_line_and_writes_nothing(tmp_path, capsys):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [-1, 4], "float32", lod_level=1)
        y = fluid.layers.sequence_pool(fluid.layers.fc(x, 3), "max")
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
        fluid.io.save_inference_model(str(tmp_path / "seq"), ["x"], [y], exe, main)
    out = str(tmp_path / "seq.onnx")
    assert cli_main([str(tmp_path / "seq"), "-o", out]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "LoDTensor" in err and "nothing written" in err
    assert not os.path.exists(out)
