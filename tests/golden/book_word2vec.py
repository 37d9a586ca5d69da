"""The word2vec chapter of the fluid 1.8 book (an N-gram model: four embeddings sharing 'shared_w',
concat, fc sigmoid, fc softmax) trained four SGD steps on a DataFeeder's batches, its for_test clone
run, and its inference model saved and loaded, then fed LoDTensors (the chapter's infer): losses,
probabilities, the shared table and the LoD the loaded program's result carries."""

import json
import tempfile

import numpy as np
import paddle.fluid as fluid
from _golden import flat, set_params

EMBED_SIZE = 8
HIDDEN_SIZE = 16
N = 5
dict_size = 30
IS_SPARSE = True
out = {}


def inference_program(words, is_sparse):
    embed_first = fluid.layers.embedding(
        input=words[0], size=[dict_size, EMBED_SIZE], dtype="float32", is_sparse=is_sparse, param_attr="shared_w"
    )
    embed_second = fluid.layers.embedding(
        input=words[1], size=[dict_size, EMBED_SIZE], dtype="float32", is_sparse=is_sparse, param_attr="shared_w"
    )
    embed_third = fluid.layers.embedding(
        input=words[2], size=[dict_size, EMBED_SIZE], dtype="float32", is_sparse=is_sparse, param_attr="shared_w"
    )
    embed_fourth = fluid.layers.embedding(
        input=words[3], size=[dict_size, EMBED_SIZE], dtype="float32", is_sparse=is_sparse, param_attr="shared_w"
    )
    concat_embed = fluid.layers.concat(input=[embed_first, embed_second, embed_third, embed_fourth], axis=1)
    hidden1 = fluid.layers.fc(input=concat_embed, size=HIDDEN_SIZE, act="sigmoid")
    predict_word = fluid.layers.fc(input=hidden1, size=dict_size, act="softmax")
    return predict_word


def train_program(predict_word):
    next_word = fluid.data(name="nextw", shape=[None, 1], dtype="int64")
    cost = fluid.layers.cross_entropy(input=predict_word, label=next_word)
    avg_cost = fluid.layers.mean(cost)
    return avg_cost


main = fluid.Program()
startup = fluid.Program()
with fluid.program_guard(main, startup):
    first_word = fluid.data(name="firstw", shape=[None, 1], dtype="int64")
    second_word = fluid.data(name="secondw", shape=[None, 1], dtype="int64")
    third_word = fluid.data(name="thirdw", shape=[None, 1], dtype="int64")
    forth_word = fluid.data(name="fourthw", shape=[None, 1], dtype="int64")
    word_list = [first_word, second_word, third_word, forth_word]
    predict_word = inference_program(word_list, IS_SPARSE)
    avg_cost = train_program(predict_word)
    test_program = main.clone(for_test=True)
    sgd_optimizer = fluid.optimizer.SGD(learning_rate=0.5)
    sgd_optimizer.minimize(avg_cost)

out["ops"] = [op.type for op in main.global_block().ops]
out["params"] = sorted((p.name, list(p.shape)) for p in main.global_block().all_parameters())
out["vars"] = sorted(v for v in main.global_block().vars)
exe = fluid.Executor(fluid.CPUPlace())
model_dir = tempfile.mkdtemp()
scope = fluid.Scope()
with fluid.scope_guard(scope):
    exe.run(startup)
    set_params(main, scope)
    rng = np.random.RandomState(0)
    losses = []
    feeder = fluid.DataFeeder(feed_list=word_list + ["nextw"], place=fluid.CPUPlace(), program=main)
    for _step in range(4):
        batch = [tuple(int(x) for x in rng.randint(0, dict_size, 5)) for _ in range(6)]
        (l,) = exe.run(main, feed=feeder.feed(batch), fetch_list=[avg_cost])
        losses.append(flat(l))
    out["losses"] = losses
    (t,) = exe.run(test_program, feed=feeder.feed([(1, 2, 3, 4, 5)]), fetch_list=[predict_word])
    out["infer"] = flat(t)
    out["shared_w"] = flat(scope.find_var("shared_w").get_tensor())[:20]
    fluid.io.save_inference_model(
        model_dir, ["firstw", "secondw", "thirdw", "fourthw"], [predict_word], exe, main_program=main
    )
    prog, feeds, fetches = fluid.io.load_inference_model(model_dir, exe)
    out["loaded"] = [feeds, [f.name for f in fetches], [op.type for op in prog.global_block().ops]]
    lod = fluid.create_lod_tensor(np.array([[1], [2]], dtype="int64"), [[1, 1]], fluid.CPUPlace())
    (r,) = exe.run(prog, feed={n: lod for n in feeds}, fetch_list=fetches, return_numpy=False)
    out["loaded_infer"] = flat(r)
print(json.dumps(out))
