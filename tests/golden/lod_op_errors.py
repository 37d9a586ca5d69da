"""Run-time checks of sequence and index ops fed bad LoDTensors or ids, and fluid 1.8.5's words for
them: sequence_expand / expand_as / slice, add_position_encoding's rank per LoD, chunk_eval's tag
range, linear_chain_crf's labels, split's sizes, one_hot's ids, sequence_scatter's rows."""

import json

import numpy as np
import paddle.fluid as fluid
from _golden import errors_of

place = fluid.CPUPlace()
L = fluid.layers


def lt(a, lens):
    return fluid.create_lod_tensor(np.asarray(a), lens, place)


def run(build, feed):
    def call():
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            outs = build()
        exe = fluid.Executor(place)
        exe.run(startup)
        exe.run(main, feed=feed, fetch_list=outs if isinstance(outs, list) else [outs])

    return call


f32 = lambda *s: np.ones(s, "float32")
i64 = lambda v: np.array(v, "int64").reshape(-1, 1)
cases = {}
cases["expand_x_lod"] = run(
    lambda: L.sequence_expand(
        fluid.data("x", [None, 2], "float32", lod_level=1), fluid.data("y", [None, 2], "float32", lod_level=1)
    ),
    {"x": lt(f32(3, 2), [[1, 2]]), "y": lt(f32(4, 2), [[1, 1, 2]])},
)
cases["expand_x_dense"] = run(
    lambda: L.sequence_expand(
        fluid.data("x", [None, 2], "float32"), fluid.data("y", [None, 2], "float32", lod_level=1)
    ),
    {"x": f32(3, 2), "y": lt(f32(4, 2), [[2, 2]])},
)
cases["expand_as"] = run(
    lambda: L.sequence_expand_as(
        fluid.data("x", [None, 2], "float32"), fluid.data("y", [None, 2], "float32", lod_level=1)
    ),
    {"x": f32(3, 2), "y": lt(f32(4, 2), [[2, 2]])},
)


def slice_case(no, nl):
    return run(
        lambda: L.sequence_slice(
            fluid.data("x", [None, 2], "float32", lod_level=1),
            fluid.data("o", [None, 1], "int64"),
            fluid.data("l", [None, 1], "int64"),
        ),
        {"x": lt(f32(4, 2), [[2, 2]]), "o": i64([0] * no), "l": i64([1] * nl)},
    )


cases["slice_off"] = slice_case(1, 2)
cases["slice_len"] = slice_case(2, 1)
cases["slice_both"] = slice_case(3, 3)
cases["slice_range"] = run(
    lambda: L.sequence_slice(
        fluid.data("x", [None, 2], "float32", lod_level=1),
        fluid.data("o", [None, 1], "int64"),
        fluid.data("l", [None, 1], "int64"),
    ),
    {"x": lt(f32(4, 2), [[2, 2]]), "o": i64([1, 0]), "l": i64([2, 1])},
)
cases["ape3_lod"] = run(
    lambda: L.add_position_encoding(fluid.data("x", [None, 2, 4], "float32", lod_level=1), 1.0, 1.0),
    {"x": lt(f32(3, 2, 4), [[1, 2]])},
)
cases["ape2_nolod"] = run(
    lambda: L.add_position_encoding(fluid.data("x", [None, 4], "float32"), 1.0, 1.0), {"x": f32(3, 4)}
)
cases["ape2_lod"] = run(
    lambda: L.add_position_encoding(fluid.data("x", [None, 4], "float32", lod_level=1), 1.0, 1.0),
    {"x": lt(f32(3, 4), [[1, 2]])},
)


def chunk(inf, lab):
    return run(
        lambda: list(
            L.chunk_eval(
                fluid.data("a", [None, 1], "int64", lod_level=1),
                fluid.data("b", [None, 1], "int64", lod_level=1),
                "IOB",
                2,
            )[:3]
        ),
        {"a": lt(i64(inf), [[2, 2]]), "b": lt(i64(lab), [[2, 2]])},
    )


cases["chunk_label"] = chunk([0, 1, 2, 3], [0, 1, 2, 6])
cases["chunk_inf"] = chunk([0, 1, 2, 7], [0, 1, 2, 3])
cases["chunk_neg"] = chunk([0, 1, 2, 3], [0, 1, 2, -1])
cases["chunk_ok_4"] = chunk([0, 1, 2, 4], [0, 1, 2, 4])


def crf(lab):
    def build():
        x = fluid.data("x", [None, 3], "float32", lod_level=1)
        y = fluid.data("y", [None, 1], "int64", lod_level=1)
        return L.linear_chain_crf(x, y, param_attr=fluid.ParamAttr(name="crfw"))

    return run(build, {"x": lt(f32(4, 3), [[2, 2]]), "y": lt(i64(lab), [[2, 2]])})


cases["crf_big"] = crf([0, 1, 2, 3])
cases["crf_neg"] = crf([0, 1, -1, 2])


cases["split_num"] = run(lambda: L.split(fluid.data("x", [None, 5], "float32"), 2, dim=1), {"x": f32(2, 5)})
cases["split_num_rows"] = run(lambda: L.split(fluid.data("x", [None, 4], "float32"), 2, dim=0), {"x": f32(3, 4)})
cases["split_sections"] = run(lambda: L.split(fluid.data("x", [None, 4], "float32"), [1, 1], dim=0), {"x": f32(3, 4)})
cases["one_hot_big"] = run(lambda: L.one_hot(fluid.data("x", [None, 1], "int64"), 4), {"x": i64([1, 4])})
cases["one_hot_neg"] = run(lambda: L.one_hot(fluid.data("x", [None, 1], "int64"), 4), {"x": i64([1, -1])})
cases["one_hot_v2"] = run(lambda: fluid.one_hot(fluid.data("x", [None], "int64"), 4), {"x": np.array([1, 5], "int64")})
cases["scatter_seq"] = run(
    lambda: L.sequence_scatter(
        fluid.data("x", [None, 3], "float32"),
        fluid.data("i", [None, 1], "int64", lod_level=1),
        fluid.data("u", [None, 1], "float32", lod_level=1),
    ),
    {"x": f32(2, 3), "i": lt(i64([0, 1, 2]), [[1, 1, 1]]), "u": lt(f32(3, 1), [[1, 1, 1]])},
)
cases["scatter_seq_col"] = run(
    lambda: L.sequence_scatter(
        fluid.data("x", [None, 3], "float32"),
        fluid.data("i", [None, 1], "int64", lod_level=1),
        fluid.data("u", [None, 1], "float32", lod_level=1),
    ),
    {"x": f32(2, 3), "i": lt(i64([0, 3]), [[1, 1]]), "u": lt(f32(2, 1), [[1, 1]])},
)
out = {}
for k, e in zip(cases, errors_of(list(cases.values()))):
    out[k] = None if e is None else [e[0], [ln for ln in e[1].splitlines() if "rror:" in ln][-1:] or e[1][-300:]]
print(json.dumps(out, indent=0))
