"""fluid.contrib.QuantizeTranspiler and the fake quantize ops: programs, training and frozen
inference against fluid 1.8.5 (golden quantize_transpiler), the ops against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid

L = fluid.layers


def _round_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _filled(ops):
    """Ops as [type, inputs, outputs] without empty slots (fluid 1.8.5's backward fill_constant
    listed none of its optional inputs)."""
    return [[t, {k: v for k, v in i.items() if v}, {k: v for k, v in o.items() if v}] for t, i, o in ops]


def test_transpiled_training_and_frozen_inference_match_fluid():
    """For abs_max, range_abs_max and moving_average_abs_max activations (and range_abs_max weights):
    every op of the transpiled training program with its slots, the losses of 4 SGD steps and the
    scales the fake quantize ops keep, the frozen and int8 programs, the frozen logits, the weights
    quantized in place and their int8 copies, as fluid 1.8.5. fluid 1.8.5 failed to freeze
    range_abs_max weights (an AssertionError); here they freeze with the scale training kept."""
    from tests.test_goldens import load, run_fluidcompat

    want, got = load("quantize_transpiler.json"), run_fluidcompat("quantize_transpiler.py")
    assert got["errors"][0][0] == want["errors"][0][0] == "ValueError"
    assert got["errors"][1][0] == want["errors"][1][0] == "ValueError"
    assert got["errors"][0][1].startswith(want["errors"][0][1].split("'%s'")[0])
    assert got["errors"][1][1].startswith(want["errors"][1][1].split("'%s'")[0])
    for key in ("abs_max/abs_max", "range_abs_max/abs_max", "moving_average_abs_max/abs_max"):
        w, g = want[key], got[key]
        assert _filled(g["train_ops"]) == _filled(w["train_ops"]), key
        assert g["persistables"] == w["persistables"], key
        np.testing.assert_allclose(g["losses"], w["losses"], rtol=1e-4, atol=1e-5, err_msg=key)
        np.testing.assert_allclose(g["scales"], w["scales"], rtol=1e-4, atol=1e-5, err_msg=key)
        assert _filled(g["frozen_ops"]) == _filled(w["frozen_ops"]), key
        assert _filled(g["int8_ops"]) == _filled(w["int8_ops"]), key
        np.testing.assert_allclose(g["frozen"], w["frozen"], rtol=1e-4, atol=1e-4, err_msg=key)
        assert g["quantized_weights"] == w["quantized_weights"] and g["int8"] == w["int8"], key
        assert g["int8_dtypes"] == w["int8_dtypes"] == ["VarType.INT8", "VarType.INT8"]
    key = "abs_max/range_abs_max"
    assert want[key]["freeze_error"] == "AssertionError" and "freeze_error" not in got[key]
    w, g = want[key], got[key]
    assert _filled(g["train_ops"]) == _filled(w["train_ops"]) and g["persistables"] == w["persistables"]
    np.testing.assert_allclose(g["losses"], w["losses"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(g["scales"], w["scales"], rtol=1e-4, atol=1e-5)
    for name, values in got[key]["quantized_weights"].items():
        assert np.all(np.abs(values) <= 127) and np.all(np.array(values) == np.round(values)), name


def test_fake_quantize_ops_against_numpy():
    """abs_max: round(x * 127 / max|x|) with halves away from zero; dequantize: x * scale / 127;
    moving average over two batches; range_abs_max's window forgetting a large batch."""
    x = np.array([[0.5, -1.0, 0.25], [2.0, -0.75, 0.0]], "float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        v = fluid.data("v", [2, 3], "float32")
        block = main.global_block()
        q = block.create_var(name="q", dtype="float32")
        s = block.create_var(name="s", dtype="float32")
        d = block.create_var(name="d", dtype="float32")
        block.append_op(type="fake_quantize_abs_max", inputs={"X": [v]}, outputs={"Out": [q], "OutScale": [s]},
                        attrs={"bit_length": 8})  # fmt: skip
        block.append_op(type="fake_dequantize_max_abs", inputs={"X": [q], "Scale": [s]}, outputs={"Out": [d]},
                        attrs={"max_range": 127.0})  # fmt: skip
    exe = fluid.Executor(fluid.CPUPlace())
    got_q, got_s, got_d = exe.run(main, feed={"v": x}, fetch_list=[q, s, d])
    want_q = _round_away(x * 127 / 2.0)
    np.testing.assert_array_equal(got_q, want_q)
    assert got_q[0, 0] == 32.0  # 31.75 -> 32 ; 0.25 * 63.5 = 15.875 -> 16
    np.testing.assert_array_equal(got_s, [2.0])
    np.testing.assert_allclose(got_d, want_q * 2.0 / 127, rtol=1e-6)

    t = fluid.contrib.QuantizeTranspiler(activation_quantize_type="range_abs_max", window_size=2)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        v = fluid.data("v", [None, 3], "float32")
        w = fluid.layers.create_parameter([3, 1], "float32", default_initializer=fluid.initializer.Constant(0.5))
        out = fluid.layers.mul(v, w)
        t.training_transpile(main, startup)
    exe.run(startup)
    [scale_name] = [
        op.output("OutScale")[0] for op in main.global_block().ops if op.type == "fake_quantize_range_abs_max"
    ]
    seen = []
    for batch in ([[4.0, 0, 0]], [[1.0, 0, 0]], [[1.5, 0, 0]], [[0.5, 0, 0]]):
        exe.run(main, feed={"v": np.array(batch, "float32")}, fetch_list=[out])
        seen.append(float(np.array(fluid.global_scope().find_var(scale_name).get_tensor())[0]))
    # window of 2 batches: 4 stays while in the window, then the largest of the last two
    assert seen == [4.0, 4.0, 1.5, 1.5]


def test_bad_types_and_unquantized_programs_are_named():
    with pytest.raises(ValueError, match="Unknown activation_quantize_type : 'max'. It can only be 'abs_max'"):
        fluid.contrib.QuantizeTranspiler(activation_quantize_type="max")
    t = fluid.contrib.QuantizeTranspiler()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        v = fluid.data("v", [None, 3], "float32")
        fluid.layers.fc(v, 2)
    before = [op.type for op in main.global_block().ops]
    with pytest.raises(ValueError, match="op mul reads 'v', which training_transpile left alone"):
        t.freeze_program(main, fluid.CPUPlace(), scope=fluid.Scope())
    assert [op.type for op in main.global_block().ops] == before
