"""LoD beam search as fluid 1.x's machine-translation decoders wrote it: a While loop over tensor
arrays of 2-level LoD ids and scores, ``beam_search`` each step (accumulated log-probabilities, and
probabilities with ``is_accumulated=False``), stopping when ``is_empty`` says every source was pruned
or at ``max_length``, then ``beam_search_decode``. Also the two ops alone: finished branches (a
prefix that ended), ``ids`` None, ``return_parent_idx``, score ties, and decoding
fed step arrays. Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote beam_search_lod.json."""

import json

import numpy as np
import paddle.fluid as fluid
from _golden import flat

L = fluid.layers
place = fluid.CPUPlace()
results = {}


def decoder(dict_size, beam_size, max_length, end_id, accumulated):
    hidden = 16
    ctx = fluid.data("ctx", [None, hidden], "float32")
    counter = L.zeros(shape=[1], dtype="int64", force_cpu=True)
    array_len = L.fill_constant(shape=[1], dtype="int64", value=max_length)
    state_array = L.create_array("float32")
    L.array_write(ctx, array=state_array, i=counter)
    ids_array = L.create_array("int64")
    scores_array = L.create_array("float32")
    init_ids = fluid.data("init_ids", [None, 1], "int64", lod_level=2)
    init_scores = fluid.data("init_scores", [None, 1], "float32", lod_level=2)
    L.array_write(init_ids, array=ids_array, i=counter)
    L.array_write(init_scores, array=scores_array, i=counter)
    cond = L.less_than(x=counter, y=array_len)
    loop = L.While(cond=cond)
    with loop.block():
        pre_ids = L.array_read(array=ids_array, i=counter)
        pre_state = L.array_read(array=state_array, i=counter)
        pre_score = L.array_read(array=scores_array, i=counter)
        pre_state_expanded = L.sequence_expand(pre_state, pre_score)
        pre_ids_emb = L.embedding(input=pre_ids, size=[dict_size, 8], dtype="float32")
        state = L.fc(input=[pre_state_expanded, pre_ids_emb], size=hidden, act="tanh")
        state_with_lod = L.lod_reset(x=state, y=pre_score)
        prob = L.fc(input=state_with_lod, size=dict_size, act="softmax")
        topk_scores, topk_indices = L.topk(prob, k=beam_size)
        if accumulated:
            accu = L.elementwise_add(x=L.log(topk_scores), y=L.reshape(pre_score, shape=[-1]), axis=0)
            sel_ids, sel_scores = L.beam_search(pre_ids, pre_score, topk_indices, accu, beam_size, end_id=end_id)
        else:
            sel_ids, sel_scores = L.beam_search(
                pre_ids, pre_score, topk_indices, topk_scores, beam_size, end_id=end_id, is_accumulated=False
            )
        L.increment(x=counter, value=1, in_place=True)
        L.array_write(state, array=state_array, i=counter)
        L.array_write(sel_ids, array=ids_array, i=counter)
        L.array_write(sel_scores, array=scores_array, i=counter)
        length_cond = L.less_than(x=counter, y=array_len)
        finish_cond = L.logical_not(L.is_empty(x=sel_ids))
        L.logical_and(x=length_cond, y=finish_cond, out=cond)
    ids, scores = L.beam_search_decode(ids=ids_array, scores=scores_array, beam_size=beam_size, end_id=end_id)
    return ids, scores, counter


DECODERS = (
    ("book_dict30_beam2", 30, 2, 5, 1, True, 3),
    ("small_dict_beam3_pruned", 6, 3, 8, 1, True, 4),
    ("probabilities_beam2", 12, 2, 6, 2, False, 3),
)
for name, dict_size, beam_size, max_length, end_id, accumulated, batch in DECODERS:
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids, scores, counter = decoder(dict_size, beam_size, max_length, end_id, accumulated)
    exe = fluid.Executor(place)
    exe.run(startup)
    for p in sorted(main.global_block().all_parameters(), key=lambda p: p.name):
        t = fluid.global_scope().find_var(p.name).get_tensor()
        shape = np.array(t).shape
        t.set(np.random.RandomState(len(p.name) + shape[0]).uniform(-1.5, 1.5, shape).astype("float32"), place)
    lod = [[1] * batch, [1] * batch]
    feed = {
        "ctx": np.random.RandomState(batch).uniform(-1, 1, (batch, 16)).astype("float32"),
        "init_ids": fluid.create_lod_tensor(np.zeros((batch, 1), "int64"), lod, place),
        "init_scores": fluid.create_lod_tensor(
            np.ones((batch, 1), "float32") * (1.0 if not accumulated else 0.0), lod, place
        ),
    }
    rs = exe.run(main, feed=feed, fetch_list=[ids, scores, counter], return_numpy=False)
    results[name] = [flat(r) for r in rs]


def lod_tensor(data, offsets, dtype, width=1):
    lens = [[b - a for a, b in zip(level, level[1:])] for level in offsets]
    return fluid.create_lod_tensor(np.array(data, dtype).reshape(-1, width), lens, place)


# beam_search alone: src 0 has two prefixes (the second ended with end_id 0), src 1 one prefix
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    pre_ids = fluid.data("pre_ids", [None, 1], "int64", lod_level=2)
    pre_scores = fluid.data("pre_scores", [None, 1], "float32", lod_level=2)
    cand = fluid.data("ids", [None, 3], "int64", lod_level=2)
    cand_scores = fluid.data("scores", [None, 3], "float32", lod_level=2)
    probs = fluid.data("probs", [None, 3], "float32", lod_level=2)
    ties = fluid.data("ties", [None, 3], "float32", lod_level=2)
    outs = list(L.beam_search(pre_ids, pre_scores, cand, cand_scores, 2, end_id=0, return_parent_idx=True))
    outs += L.beam_search(pre_ids, pre_scores, None, probs, 2, end_id=0, is_accumulated=False)
    outs += L.beam_search(pre_ids, pre_scores, cand, ties, 3, end_id=0)
    outs += L.beam_search(pre_ids, pre_scores, cand, cand_scores, 1, end_id=6)
exe = fluid.Executor(place)
lod = [[0, 2, 3], [0, 1, 2, 3]]
scores_v = [[-1.2, -1.3, -0.9], [-0.6, -0.7, -0.8], [-2.1, -2.5, -3.0]]
feed = {
    "pre_ids": lod_tensor([4, 0, 5], lod, "int64"),
    "pre_scores": lod_tensor([-1.0, -0.5, -2.0], lod, "float32"),
    "ids": lod_tensor([[7, 3, 0], [2, 2, 2], [0, 6, 1]], lod, "int64", 3),
    "scores": lod_tensor(scores_v, lod, "float32", 3),
    "probs": lod_tensor([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [0.25, 0.25, 0.5]], lod, "float32", 3),
    "ties": lod_tensor([[-0.6, -0.3, -0.9], [-0.6, -0.7, -0.8], [-2.1, -2.5, -2.1]], lod, "float32", 3),
}
results["beam_search_op"] = [flat(r) for r in exe.run(main, feed=feed, fetch_list=outs, return_numpy=False)]
# a source whose every choice ends a finished branch is pruned (src 0: both prefixes ended)
feed["pre_ids"] = lod_tensor([0, 0, 5], lod, "int64")
feed["pre_scores"] = lod_tensor([-0.1, -0.5, -2.0], lod, "float32")
results["beam_search_pruned"] = [flat(r) for r in exe.run(main, feed=feed, fetch_list=outs[:3], return_numpy=False)]


def decode(steps, beam_size, end_id):
    main, startup = fluid.Program(), fluid.Program()
    feed = {}
    with fluid.program_guard(main, startup):
        id_array, score_array = L.create_array("int64"), L.create_array("float32")
        for t, (step_ids, step_scores, offsets) in enumerate(steps):
            i = L.fill_constant([1], "int64", t)
            L.array_write(fluid.data("i%d" % t, [None, 1], "int64", lod_level=2), i, array=id_array)
            L.array_write(fluid.data("s%d" % t, [None, 1], "float32", lod_level=2), i, array=score_array)
            feed["i%d" % t] = lod_tensor(step_ids, offsets, "int64")
            feed["s%d" % t] = lod_tensor(step_scores, offsets, "float32")
        outs = L.beam_search_decode(id_array, score_array, beam_size, end_id)
    return [flat(r) for r in fluid.Executor(place).run(main, feed=feed, fetch_list=list(outs), return_numpy=False)]


results["decode_ties"] = decode([([0], [0], [[0, 1], [0, 1]]), ([3, 4], [-1, -1], [[0, 1], [0, 2]])], 2, 1)
# two candidates a source (fluid 1.8.5 crashed when beam_size was more than that: tests use 3 here)
results["decode_two_candidates"] = decode(
    [([0, 0], [0, 0], [[0, 1, 2], [0, 1, 2]]), ([3, 4, 5, 6], [-1, -2, -0.5, -0.7], [[0, 1, 2], [0, 2, 4]])], 2, 1
)
results["decode_ends"] = decode(
    [
        ([0, 0], [0, 0], [[0, 1, 2], [0, 1, 2]]),
        ([3, 4, 5, 6], [-1, -2, -0.5, -0.7], [[0, 1, 2], [0, 2, 4]]),
        ([1, 7, 1, 1], [-1.5, -2.2, -0.6, -0.9], [[0, 2, 4], [0, 1, 2, 3, 4]]),
        ([1, 8, 1, 1], [-1.5, -2.4, -0.6, -0.9], [[0, 2, 4], [0, 1, 2, 3, 4]]),
        ([1, 9], [-1.5, -2.9], [[0, 2, 4], [0, 1, 2, 2, 2]]),
    ],
    2,
    1,
)
print(json.dumps(results, sort_keys=True))
