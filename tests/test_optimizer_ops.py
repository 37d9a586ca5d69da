"""Optimizer update ops, one step each, against numpy; sparse gradients against their dense twin."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat_ops import all_defs

rng = np.random.RandomState(3)
P = rng.uniform(-1, 1, (4, 3)).astype("float32")
G = rng.uniform(-1, 1, (4, 3)).astype("float32")
LR = np.array([0.1], "float32")


def run_update(op_type, inputs, outputs, attrs=None, sparse_grad=None):
    """Run one update op over persistable variables; return the scope's values after it."""
    main = fluid.Program()
    scope = fluid.Scope()
    block = main.global_block()
    for name, value in inputs.items():
        block.create_var(name=name, shape=value.shape, dtype=str(value.dtype), persistable=True)
        scope.var(name).get_tensor().set(value, fluid.CPUPlace())
    op_inputs = {slot: [slot] for slot in inputs}
    if sparse_grad is not None:
        rows, values = sparse_grad
        block.create_var(name="rows", shape=rows.shape, dtype="int64", persistable=True)
        block.create_var(name="vals", shape=values.shape, dtype="float32", persistable=True)
        block.create_var(name="Grad", shape=P.shape, dtype="float32", type=fluid.dtypes.VarType.SELECTED_ROWS)
        scope.var("rows").get_tensor().set(rows, fluid.CPUPlace())
        scope.var("vals").get_tensor().set(values, fluid.CPUPlace())
        # a sparse gradient as the embedding grad produces it
        block.append_op(
            type="lookup_table_v2_grad",
            inputs={"Ids": ["rows"], "W": ["Param"], "Out@GRAD": ["vals"]},
            outputs={"W@GRAD": ["Grad"]},
            attrs={"is_sparse": True},
        )
        op_inputs["Grad"] = ["Grad"]
    block.append_op(type=op_type, inputs=op_inputs, outputs={o: [i] for o, i in outputs.items()}, attrs=attrs or {})
    fluid.Executor(fluid.CPUPlace()).run(main, scope=scope)
    return {o: np.array(scope.find_var(i).get_tensor()) for o, i in outputs.items()}


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_sgd():
    out = run_update("sgd", {"Param": P, "Grad": G, "LearningRate": LR}, {"ParamOut": "Param"})
    close(out["ParamOut"], P - 0.1 * G)


def test_sgd_sparse_touches_rows_only():
    rows = np.array([1, 3, 1], "int64")
    vals = rng.uniform(-1, 1, (3, 3)).astype("float32")
    out = run_update("sgd", {"Param": P, "LearningRate": LR}, {"ParamOut": "Param"}, sparse_grad=(rows, vals))
    want = P.copy()
    np.add.at(want, rows, -0.1 * vals)
    close(out["ParamOut"], want)


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum(nesterov):
    v = rng.uniform(-1, 1, P.shape).astype("float32")
    out = run_update(
        "momentum",
        {"Param": P, "Grad": G, "Velocity": v, "LearningRate": LR},
        {"ParamOut": "Param", "VelocityOut": "Velocity"},
        {"mu": 0.9, "use_nesterov": nesterov},
    )
    v2 = 0.9 * v + G
    close(out["VelocityOut"], v2)
    close(out["ParamOut"], P - ((G + 0.9 * v2) * 0.1 if nesterov else 0.1 * v2))


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum_sparse_equals_dense(nesterov):
    rows = np.array([0, 2, 2], "int64")
    vals = rng.uniform(-1, 1, (3, 3)).astype("float32")
    dense = np.zeros_like(P)
    np.add.at(dense, rows, vals)
    v = rng.uniform(-1, 1, P.shape).astype("float32")
    attrs = {"mu": 0.9, "use_nesterov": nesterov}
    outs = {"ParamOut": "Param", "VelocityOut": "Velocity"}
    a = run_update("momentum", {"Param": P, "Velocity": v, "LearningRate": LR}, outs, attrs, sparse_grad=(rows, vals))
    b = run_update("momentum", {"Param": P, "Grad": dense, "Velocity": v, "LearningRate": LR}, outs, attrs)
    close(a["ParamOut"], b["ParamOut"])
    close(a["VelocityOut"], b["VelocityOut"])


def _adam_inputs():
    return {
        "Param": P,
        "Grad": G,
        "LearningRate": LR,
        "Moment1": rng.uniform(-1, 1, P.shape).astype("float32"),
        "Moment2": rng.uniform(0, 1, P.shape).astype("float32"),
        "Beta1Pow": np.array([0.81], "float32"),
        "Beta2Pow": np.array([0.998], "float32"),
    }


ADAM_OUT = {
    "ParamOut": "Param",
    "Moment1Out": "Moment1",
    "Moment2Out": "Moment2",
    "Beta1PowOut": "Beta1Pow",
    "Beta2PowOut": "Beta2Pow",
}


def test_adam():
    ins = _adam_inputs()
    out = run_update("adam", ins, ADAM_OUT, {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8})
    m1 = 0.9 * ins["Moment1"] + 0.1 * G
    m2 = 0.999 * ins["Moment2"] + 0.001 * G * G
    lr = 0.1 * np.sqrt(1 - 0.998) / (1 - 0.81)
    close(out["Moment1Out"], m1)
    close(out["Moment2Out"], m2)
    close(out["ParamOut"], P - lr * m1 / (np.sqrt(m2) + 1e-8))
    close(out["Beta1PowOut"], [0.81 * 0.9])
    close(out["Beta2PowOut"], [0.998 * 0.999])


@pytest.mark.parametrize("lazy", [False, True])
def test_adam_sparse(lazy):
    ins = _adam_inputs()
    rows = np.array([3, 1, 3], "int64")
    vals = rng.uniform(-1, 1, (3, 3)).astype("float32")
    dense = np.zeros_like(P)
    np.add.at(dense, rows, vals)
    sparse_ins = {k: v for k, v in ins.items() if k != "Grad"}
    attrs = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lazy_mode": lazy}
    a = run_update("adam", sparse_ins, ADAM_OUT, attrs, sparse_grad=(rows, vals))
    # with the powers updated in place (as fluid's optimizer makes them), fluid 1.8.5's sparse kernel
    # bias-corrects with the powers of the next step: the dense step from those powers
    ahead = dict(ins, Grad=dense, Beta1Pow=ins["Beta1Pow"] * 0.9, Beta2Pow=ins["Beta2Pow"] * 0.999)
    b = run_update("adam", ahead, ADAM_OUT, attrs)
    close(a["Beta1PowOut"], [0.81 * 0.9])
    touched = [1, 3]
    for k in ("ParamOut", "Moment1Out", "Moment2Out"):
        close(a[k][touched], b[k][touched])
        if lazy:
            close(a[k][[0, 2]], sparse_ins[k.replace("Out", "")][[0, 2]])
        else:
            close(a[k], b[k])


def test_adamax():
    m, inf = rng.uniform(-1, 1, P.shape).astype("float32"), rng.uniform(0, 1, P.shape).astype("float32")
    out = run_update(
        "adamax",
        {
            "Param": P,
            "Grad": G,
            "LearningRate": LR,
            "Moment": m,
            "InfNorm": inf,
            "Beta1Pow": np.array([0.9], "float32"),
        },
        {"ParamOut": "Param", "MomentOut": "Moment", "InfNormOut": "InfNorm"},
        {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
    )
    m2 = 0.9 * m + 0.1 * G
    inf2 = np.maximum(0.999 * inf + 1e-8, np.abs(G))
    close(out["MomentOut"], m2)
    close(out["InfNormOut"], inf2)
    close(out["ParamOut"], P - 0.1 / (1 - 0.9) * m2 / inf2)


def test_adagrad_and_decayed():
    m = rng.uniform(0, 1, P.shape).astype("float32")
    out = run_update(
        "adagrad",
        {"Param": P, "Grad": G, "Moment": m, "LearningRate": LR},
        {"ParamOut": "Param", "MomentOut": "Moment"},
        {"epsilon": 1e-6},
    )
    close(out["MomentOut"], m + G * G)
    close(out["ParamOut"], P - 0.1 * G / (np.sqrt(m + G * G) + 1e-6))
    out = run_update(
        "decayed_adagrad",
        {"Param": P, "Grad": G, "Moment": m, "LearningRate": LR},
        {"ParamOut": "Param", "MomentOut": "Moment"},
        {"decay": 0.95, "epsilon": 1e-6},
    )
    m2 = 0.95 * m + 0.05 * G * G
    close(out["MomentOut"], m2)
    close(out["ParamOut"], P - 0.1 * G / (np.sqrt(m2) + 1e-6))


def test_adagrad_sparse_equals_dense_and_leaves_other_rows():
    rows = np.array([3, 1, 3], "int64")
    vals = rng.uniform(-1, 1, (3, 3)).astype("float32")
    dense = np.zeros_like(P)
    np.add.at(dense, rows, vals)
    m = rng.uniform(0, 1, P.shape).astype("float32")
    outs = {"ParamOut": "Param", "MomentOut": "Moment"}
    a = run_update("adagrad", {"Param": P, "Moment": m, "LearningRate": LR}, outs, {"epsilon": 1e-6}, (rows, vals))
    b = run_update("adagrad", {"Param": P, "Grad": dense, "Moment": m, "LearningRate": LR}, outs, {"epsilon": 1e-6})
    close(a["ParamOut"], b["ParamOut"])
    close(a["MomentOut"], b["MomentOut"])
    np.testing.assert_array_equal(a["ParamOut"][[0, 2]], P[[0, 2]])
    np.testing.assert_array_equal(a["MomentOut"][[0, 2]], m[[0, 2]])


def test_adadelta():
    g2, u2 = rng.uniform(0, 1, P.shape).astype("float32"), rng.uniform(0, 1, P.shape).astype("float32")
    out = run_update(
        "adadelta",
        {"Param": P, "Grad": G, "AvgSquaredGrad": g2, "AvgSquaredUpdate": u2},
        {"ParamOut": "Param", "AvgSquaredGradOut": "AvgSquaredGrad", "AvgSquaredUpdateOut": "AvgSquaredUpdate"},
        {"rho": 0.95, "epsilon": 1e-6},
    )
    ng2 = 0.95 * g2 + 0.05 * G * G
    upd = -np.sqrt((u2 + 1e-6) / (ng2 + 1e-6)) * G
    nu2 = 0.95 * u2 + 0.05 * upd * upd
    close(out["AvgSquaredGradOut"], ng2)
    close(out["AvgSquaredUpdateOut"], nu2)
    # fluid 1.8.5 moved the parameter by the update evaluated again from the new AvgSquaredUpdate
    close(out["ParamOut"], P - np.sqrt((nu2 + 1e-6) / (ng2 + 1e-6)) * G)


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop(centered):
    ms, mg, mom = (rng.uniform(0.5, 1, P.shape).astype("float32") for _ in range(3))
    mg = mg * 0.1
    out = run_update(
        "rmsprop",
        {"Param": P, "Grad": G, "MeanSquare": ms, "MeanGrad": mg, "Moment": mom, "LearningRate": LR},
        {"ParamOut": "Param", "MeanSquareOut": "MeanSquare", "MeanGradOut": "MeanGrad", "MomentOut": "Moment"},
        {"decay": 0.9, "epsilon": 1e-6, "momentum": 0.5, "centered": centered},
    )
    ms2 = 0.9 * ms + 0.1 * G * G
    mg2 = 0.9 * mg + 0.1 * G
    denom = np.sqrt(ms2 - mg2 * mg2 + 1e-6) if centered else np.sqrt(ms2 + 1e-6)
    mom2 = 0.5 * mom + 0.1 * G / denom
    close(out["MeanSquareOut"], ms2)
    close(out["MomentOut"], mom2)
    close(out["ParamOut"], P - mom2)


def test_ftrl():
    sq, lin = rng.uniform(0.1, 1, P.shape).astype("float32"), rng.uniform(-1, 1, P.shape).astype("float32")
    out = run_update(
        "ftrl",
        {"Param": P, "Grad": G, "SquaredAccumulator": sq, "LinearAccumulator": lin, "LearningRate": LR},
        {"ParamOut": "Param", "SquaredAccumOut": "SquaredAccumulator", "LinearAccumOut": "LinearAccumulator"},
        {"l1": 0.1, "l2": 0.2, "lr_power": -0.5},
    )
    nsq = sq + G * G
    nlin = lin + G - (np.sqrt(nsq) - np.sqrt(sq)) / 0.1 * P
    y = np.sqrt(nsq) / 0.1 + 2 * 0.2
    want = np.where(np.abs(nlin) > 0.1, (0.1 * np.sign(nlin) - nlin) / y, 0.0)
    close(out["SquaredAccumOut"], nsq)
    close(out["LinearAccumOut"], nlin)
    close(out["ParamOut"], want)


def test_lamb():
    ins = {k: v for k, v in _adam_inputs().items()}
    out = run_update(
        "lamb",
        ins,
        {"ParamOut": "Param", "Moment1Out": "Moment1", "Moment2Out": "Moment2"},
        {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-6, "weight_decay": 0.01},
    )
    m1 = 0.9 * ins["Moment1"] + 0.1 * G
    m2 = 0.999 * ins["Moment2"] + 0.001 * G * G
    # fluid 1.8.5's lamb: no bias correction (Beta1Pow/Beta2Pow unused)
    r = m1 / (np.sqrt(m2) + 1e-6) + 0.01 * P
    trust = np.linalg.norm(P) / np.linalg.norm(r)
    close(out["ParamOut"], P - 0.1 * trust * r)


def test_lars_momentum():
    v = rng.uniform(-1, 1, P.shape).astype("float32")
    out = run_update(
        "lars_momentum",
        {"Param": P, "Grad": G, "Velocity": v, "LearningRate": LR},
        {"ParamOut": "Param", "VelocityOut": "Velocity"},
        {"mu": 0.9, "lars_coeff": 0.001, "lars_weight_decay": 0.0005},
    )
    pn, gn = np.linalg.norm(P), np.linalg.norm(G)
    local = 0.1 * 0.001 * pn / (gn + 0.0005 * pn)
    v2 = 0.9 * v + local * (G + 0.0005 * P)
    close(out["VelocityOut"], v2)
    close(out["ParamOut"], P - v2)


def test_average_accumulates():
    s = [rng.uniform(-1, 1, P.shape).astype("float32") for _ in range(3)]
    ins = {
        "param": P,
        "in_sum_1": s[0],
        "in_sum_2": s[1],
        "in_sum_3": s[2],
        "in_num_accumulates": np.array([4], "int64"),
        "in_old_num_accumulates": np.array([2], "int64"),
        "in_num_updates": np.array([9], "int64"),
    }
    outs = {
        "out_sum_1": "in_sum_1",
        "out_sum_2": "in_sum_2",
        "out_sum_3": "in_sum_3",
        "out_num_accumulates": "in_num_accumulates",
        "out_old_num_accumulates": "in_old_num_accumulates",
        "out_num_updates": "in_num_updates",
    }
    out = run_update(
        "average_accumulates", ins, outs, {"average_window": 0.5, "min_average_window": 2, "max_average_window": 5}
    )
    # 5 accumulated >= min(5, 10 * 0.5): the window closes
    close(out["out_sum_3"], s[0] + P + s[1])
    close(out["out_sum_1"], np.zeros_like(P))
    assert out["out_num_accumulates"].tolist() == [0] and out["out_old_num_accumulates"].tolist() == [5]
    assert out["out_num_updates"].tolist() == [10]


def test_dpsgd_clips_the_gradient_norm():
    attrs = {"clip": 0.5, "batch_size": 4.0, "sigma": 0.0}
    out = run_update("dpsgd", {"Param": P, "Grad": G, "LearningRate": LR}, {"ParamOut": "Param"}, attrs)
    close(out["ParamOut"], P - 0.1 * G / (np.linalg.norm(G) / 0.5))
    attrs["clip"] = 100.0  # under the clip: plain SGD
    out = run_update("dpsgd", {"Param": P, "Grad": G, "LearningRate": LR}, {"ParamOut": "Param"}, attrs)
    close(out["ParamOut"], P - 0.1 * G)


def test_every_update_op_is_tested():
    import sys

    module = sys.modules[__name__]
    source = open(module.__file__).read()
    source += open(module.__file__.replace("test_optimizer_ops.py", "test_more_ops.py")).read()
    update_ops = {n for n, d in all_defs().items() if d.kernel is not None and d.kernel.__module__.endswith("optim")}
    untested = {n for n in update_ops if f'"{n}"' not in source}
    assert not untested, f"update ops without a test: {sorted(untested)}"


def test_elementwise_mul_scales_a_sparse_gradient_by_a_scalar_only():
    """Global-norm clipping multiplies a SelectedRows gradient by its scale: the rows stay sparse; a Y of
    more than one element is refused at build time with fluid 1.8.5's message."""
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        ids = fluid.data("ids", [None, 1], "int64")
        e = fluid.embedding(ids, size=[6, 2], is_sparse=True, param_attr=fluid.initializer.Constant(0.5))
        cost = fluid.layers.reduce_sum(e * e)
        ((_, g),) = fluid.backward.append_backward(cost)
        scaled = fluid.layers.elementwise_mul(g, fluid.layers.fill_constant([1], "float32", 3.0))
        n_ops = len(main.global_block().ops)
        with pytest.raises(ValueError, match=r"if X is Sparse\(VarType.SELECTED_ROWS\), Y must be scalar.*= 2\."):
            fluid.layers.elementwise_mul(g, fluid.layers.fill_constant([2], "float32", 3.0))
        assert len(main.global_block().ops) == n_ops + 1  # the fill_constant only
        dense = fluid.layers.get_tensor_from_selected_rows(fluid.layers.merge_selected_rows(scaled))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    (got,) = exe.run(main, feed={"ids": np.array([[4], [1], [4]], "int64")}, fetch_list=[dense])
    close(got, np.array([[3.0, 3.0], [6.0, 6.0]]))  # rows 1 and 4 (4 twice): 2 * 0.5 * count * 3


def _adam_training(place, group: bool, sparse: bool, monkeypatch):
    """Four steps of a small model with Adam (one parameter with its own learning rate, an embedding
    with a sparse gradient when ``sparse``); the parameters and accumulators after them, in order."""
    from fluidcompat.executor import interpreter

    if not group:
        monkeypatch.setattr(interpreter, "_adam_groups", lambda block: {})
    calls = []

    def counting(env, members, attrs):
        done = real(env, members, attrs)
        calls.append((len(members), done))
        return done

    real = interpreter.adam_group
    monkeypatch.setattr(interpreter, "adam_group", counting)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 6], "float32")
        ids = fluid.data("ids", [None, 1], "int64")
        e = fluid.embedding(ids, (10, 6), is_sparse=sparse)
        h = fluid.layers.fc(x + fluid.layers.reshape(e, [-1, 6]), 5, act="tanh")
        h = fluid.layers.fc(h, 3, param_attr=fluid.ParamAttr(learning_rate=0.5))
        loss = fluid.layers.mean(h * h)
        fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(0)
    for _ in range(4):
        feed = {"x": rng.rand(4, 6).astype("float32"), "ids": rng.randint(0, 10, (4, 1)).astype("int64")}
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    state = [
        np.array(scope.find_var(v.name).get_tensor())
        for v in main.global_block().vars.values()
        if v.persistable and scope.find_var(v.name) is not None and v.name not in ("feed", "fetch")
    ]
    return state, calls


@pytest.mark.parametrize("sparse", [False, True])
def test_grouped_adam_gives_the_values_of_one_op_at_a_time(sparse, monkeypatch):
    """Consecutive adam ops run as one group with multi-tensor kernels (NOTE: [Grouped adam]): the
    same values, bit for bit, as op by op. With a sparse gradient in the group it runs op by op."""
    grouped, calls = _adam_training(fluid.CPUPlace(), True, sparse, monkeypatch)
    single, none = _adam_training(fluid.CPUPlace(), False, sparse, monkeypatch)
    assert len(grouped) == len(single) > 10 and not none
    assert calls and all(done != sparse for _, done in calls) and max(n for n, _ in calls) >= 3
    for a, b in zip(grouped, single):
        np.testing.assert_array_equal(a, b)


@pytest.mark.cuda
def test_grouped_adam_on_cuda_matches_one_op_at_a_time(monkeypatch):
    grouped, calls = _adam_training(fluid.CUDAPlace(0), True, False, monkeypatch)
    single, _ = _adam_training(fluid.CUDAPlace(0), False, False, monkeypatch)
    assert calls and all(done for _, done in calls)
    for a, b in zip(grouped, single):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
