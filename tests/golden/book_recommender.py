"""The recommender-system chapter of the fluid 1.8 book (user and movie features: embeddings, fcs,
a category sequence_pool, a title sequence_conv_pool, cos_sim scaled by 5, square_error_cost) trained
four SGD steps on synthetic ratings, then its for_test clone: losses, predictions, the user table."""

import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as layers
import paddle.fluid.nets as nets
from _golden import flat, set_params

IS_SPARSE = True
USR_DICT_SIZE, MOV_DICT_SIZE, CATEGORY_DICT_SIZE, MOV_TITLE_DICT_SIZE = 20, 30, 6, 40
out = {}


def get_usr_combined_features():
    uid = fluid.data(name="user_id", shape=[None, 1], dtype="int64")
    usr_emb = layers.embedding(
        input=uid, dtype="float32", size=[USR_DICT_SIZE, 8], param_attr="user_table", is_sparse=IS_SPARSE
    )
    usr_fc = layers.fc(input=usr_emb, size=8)
    usr_gender_id = fluid.data(name="gender_id", shape=[None, 1], dtype="int64")
    usr_gender_emb = layers.embedding(input=usr_gender_id, size=[2, 4], param_attr="gender_table", is_sparse=IS_SPARSE)
    usr_gender_fc = layers.fc(input=usr_gender_emb, size=4)
    usr_age_id = fluid.data(name="age_id", shape=[None, 1], dtype="int64")
    usr_age_emb = layers.embedding(input=usr_age_id, size=[7, 4], is_sparse=IS_SPARSE, param_attr="age_table")
    usr_age_fc = layers.fc(input=usr_age_emb, size=4)
    usr_job_id = fluid.data(name="job_id", shape=[None, 1], dtype="int64")
    usr_job_emb = layers.embedding(input=usr_job_id, size=[21, 4], param_attr="job_table", is_sparse=IS_SPARSE)
    usr_job_fc = layers.fc(input=usr_job_emb, size=4)
    concat_embed = layers.concat(input=[usr_fc, usr_gender_fc, usr_age_fc, usr_job_fc], axis=1)
    usr_combined_features = layers.fc(input=concat_embed, size=16, act="tanh")
    return usr_combined_features


def get_mov_combined_features():
    mov_id = fluid.data(name="movie_id", shape=[None, 1], dtype="int64")
    mov_emb = layers.embedding(
        input=mov_id, dtype="float32", size=[MOV_DICT_SIZE, 8], param_attr="movie_table", is_sparse=IS_SPARSE
    )
    mov_fc = layers.fc(input=mov_emb, size=8)
    category_id = fluid.data(name="category_id", shape=[None, 1], dtype="int64", lod_level=1)
    mov_categories_emb = layers.embedding(input=category_id, size=[CATEGORY_DICT_SIZE, 8], is_sparse=IS_SPARSE)
    mov_categories_hidden = layers.sequence_pool(input=mov_categories_emb, pool_type="sum")
    mov_title_id = fluid.data(name="movie_title", shape=[None, 1], dtype="int64", lod_level=1)
    mov_title_emb = layers.embedding(input=mov_title_id, size=[MOV_TITLE_DICT_SIZE, 8], is_sparse=IS_SPARSE)
    mov_title_conv = nets.sequence_conv_pool(
        input=mov_title_emb, num_filters=8, filter_size=3, act="tanh", pool_type="sum"
    )
    concat_embed = layers.concat(input=[mov_fc, mov_categories_hidden, mov_title_conv], axis=1)
    mov_combined_features = layers.fc(input=concat_embed, size=16, act="tanh")
    return mov_combined_features


def inference_program():
    usr_combined_features = get_usr_combined_features()
    mov_combined_features = get_mov_combined_features()
    inference = layers.cos_sim(X=usr_combined_features, Y=mov_combined_features)
    scale_infer = layers.scale(x=inference, scale=5.0)
    return scale_infer


def train_program():
    scale_infer = inference_program()
    label = fluid.data(name="score", shape=[None, 1], dtype="float32")
    square_cost = layers.square_error_cost(input=scale_infer, label=label)
    avg_cost = layers.mean(square_cost)
    return [avg_cost, scale_infer]


main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    avg_cost, scale_infer = train_program()
    test_program = main.clone(for_test=True)
    fluid.optimizer.SGD(learning_rate=0.2).minimize(avg_cost)
out["ops"] = [op.type for op in main.global_block().ops]
out["shapes"] = {
    v.name: list(v.shape)
    for v in main.global_block().vars.values()
    if not v.name.endswith("@GRAD") and v.shape is not None and "tmp" not in v.name
}
place = fluid.CPUPlace()
exe = fluid.Executor(place)
scope = fluid.Scope()
feed_order = ["user_id", "gender_id", "age_id", "job_id", "movie_id", "category_id", "movie_title", "score"]
rng = np.random.RandomState(3)


def sample():
    return [
        int(rng.randint(USR_DICT_SIZE)),
        int(rng.randint(2)),
        int(rng.randint(7)),
        int(rng.randint(21)),
        int(rng.randint(MOV_DICT_SIZE)),
        [int(c) for c in rng.randint(0, CATEGORY_DICT_SIZE, rng.randint(1, 4))],
        [int(c) for c in rng.randint(0, MOV_TITLE_DICT_SIZE, rng.randint(1, 6))],
        [float(rng.randint(1, 6))],
    ]


with fluid.scope_guard(scope):
    exe.run(startup)
    set_params(main, scope)
    feeder = fluid.DataFeeder(feed_list=[main.global_block().var(n) for n in feed_order], place=place)
    losses = []
    for _step in range(4):
        batch = [sample() for _ in range(5)]
        (l,) = exe.run(main, feed=feeder.feed(batch), fetch_list=[avg_cost])
        losses.append(flat(l))
    out["losses"] = losses
    (t,) = exe.run(
        test_program, feed=feeder.feed([sample() for _ in range(3)]), fetch_list=[scale_infer], return_numpy=False
    )
    out["test"] = flat(t)
    out["user_table"] = flat(scope.find_var("user_table").get_tensor())[:30]
print(json.dumps(out))
