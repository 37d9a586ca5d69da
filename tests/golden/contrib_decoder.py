# fluid.contrib.decoder: InitState, StateCell, TrainingDecoder and BeamSearchDecoder on a small
# encoder-decoder: the training program's op list, its softmax outputs and losses over 3 SGD steps,
# then beam search over the trained parameters (ids, scores and their LoDs), and the errors.
import json
import os
import sys

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as layers
from paddle.fluid.contrib.decoder.beam_search_decoder import BeamSearchDecoder, InitState, StateCell, TrainingDecoder

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _golden import errors_of, flat  # noqa: E402

DICT, WORD, HIDDEN = 8, 4, 5


def encoder():
    src = layers.data(name="src", shape=[1], dtype="int64", lod_level=1)
    emb = layers.embedding(src, size=[DICT, WORD], param_attr=fluid.ParamAttr(name="src_emb"))
    proj = layers.fc(emb, size=HIDDEN, act="tanh", param_attr=fluid.ParamAttr(name="enc_w"), bias_attr=False)
    return layers.sequence_last_step(proj)


def state_cell_of(encoder_out):
    state_cell = StateCell(
        inputs={"x": None}, states={"h": InitState(init=encoder_out, need_reorder=True)}, out_state="h"
    )

    @state_cell.state_updater
    def updater(cell):
        word = cell.get_input("x")
        prev = cell.get_state("h")
        h = layers.fc(
            [prev, word],
            size=HIDDEN,
            act="tanh",
            param_attr=[fluid.ParamAttr(name="dec_wh"), fluid.ParamAttr(name="dec_wx")],
            bias_attr=fluid.ParamAttr(name="dec_b"),
        )
        cell.set_state("h", h)

    return state_cell


out = {}
train, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(train, startup), fluid.unique_name.guard():
    cell = state_cell_of(encoder())
    trg = layers.data(name="trg", shape=[1], dtype="int64", lod_level=1)
    trg_emb = layers.embedding(trg, size=[DICT, WORD], param_attr=fluid.ParamAttr(name="trg_emb"))
    decoder = TrainingDecoder(cell)
    with decoder.block():
        word = decoder.step_input(trg_emb)
        decoder.state_cell.compute_state(inputs={"x": word})
        score = layers.fc(
            decoder.state_cell.get_state("h"),
            size=DICT,
            act="softmax",
            param_attr=fluid.ParamAttr(name="out_w"),
            bias_attr=fluid.ParamAttr(name="out_b"),
        )
        decoder.state_cell.update_states()
        decoder.output(score)
    probs = decoder()
    label = layers.data(name="label", shape=[1], dtype="int64", lod_level=1)
    loss = layers.mean(layers.cross_entropy(probs, label))
    fluid.optimizer.SGD(0.5).minimize(loss)
out["train_ops"] = [op.type for op in train.global_block().ops]
out["train_sub_ops"] = [[op.type for op in b.ops] for b in train.blocks[1:]]

place = fluid.CPUPlace()
exe = fluid.Executor(place)
scope = fluid.Scope()
exe.run(startup, scope=scope)
from _golden import set_params  # noqa: E402

set_params(train, scope)


def lod(ids, lens):
    return fluid.create_lod_tensor(np.array(ids, "int64").reshape(-1, 1), [lens], place)


feed = {"src": lod([2, 3, 4, 5, 6], [3, 2]), "trg": lod([0, 3, 5, 0, 6], [3, 2]), "label": lod([3, 5, 1, 6, 1], [3, 2])}
losses, first = [], None
for _step in range(3):
    p, l = exe.run(train, feed=feed, fetch_list=[probs, loss], scope=scope, return_numpy=False)
    first = first or flat(p)
    losses.append(round(float(np.array(l)[0]), 5))
out["probs"] = first
out["losses"] = losses

infer, infer_startup = fluid.Program(), fluid.Program()
with fluid.program_guard(infer, infer_startup), fluid.unique_name.guard():
    cell = state_cell_of(encoder())
    init_ids = layers.data(name="init_ids", shape=[1], dtype="int64", lod_level=2)
    init_scores = layers.data(name="init_scores", shape=[1], dtype="float32", lod_level=2)
    decoder = BeamSearchDecoder(
        cell,
        init_ids,
        init_scores,
        target_dict_dim=DICT,
        word_dim=WORD,
        topk_size=4,
        sparse_emb=False,
        max_len=4,
        beam_size=2,
        end_id=1,
    )
    decoder.decode()
    ids, scores = decoder()
out["infer_ops"] = [op.type for op in infer.global_block().ops]
out["infer_sub_ops"] = [[op.type for op in b.ops] for b in infer.blocks[1:]]
out["infer_params"] = sorted(p.name for p in infer.global_block().all_parameters())
trained = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in train.global_block().all_parameters()}
exe.run(infer_startup, scope=scope)
for k, p in enumerate(sorted(infer.global_block().all_parameters(), key=lambda p: p.name)):
    # the trained parameters, and the decoder's own embedding and output layer seeded
    value = trained.get(p.name)
    if value is None:
        value = np.random.RandomState(k).uniform(-1, 1, p.shape).astype("float32")
    scope.find_var(p.name).get_tensor().set(value, place)
init = {
    "src": lod([2, 3, 4, 5, 6], [3, 2]),
    "init_ids": fluid.create_lod_tensor(np.zeros((2, 1), "int64"), [[1, 1], [1, 1]], place),
    "init_scores": fluid.create_lod_tensor(np.ones((2, 1), "float32"), [[1, 1], [1, 1]], place),
}
got_ids, got_scores = exe.run(infer, feed=init, fetch_list=[ids, scores], scope=scope, return_numpy=False)
out["ids"] = flat(got_ids)
out["scores"] = flat(got_scores)


def twice():
    c = StateCell(
        inputs={"x": None}, states={"h": InitState(init=layers.fill_constant([2, 3], "float32", 0.0))}, out_state="h"
    )
    TrainingDecoder(c)
    TrainingDecoder(c)


out["errors"] = errors_of(
    [
        lambda: InitState(),
        lambda: StateCell(inputs={}, states={"h": 1}, out_state="h"),
        lambda: StateCell(
            inputs={}, states={"h": InitState(init=layers.fill_constant([2], "float32", 0.0))}, out_state="c"
        ),
        twice,
    ]
)
print(json.dumps(out, sort_keys=True))
