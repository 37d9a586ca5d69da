"""The machine-translation chapter of the fluid 1.8 book (a bidirectional GRUCell encoder run by
layers.rnn over padded batches, an attention DecoderCell, BeamSearchDecoder with
tile_beam_merge_with_batch over [batch, time, width] tensors whose time is unknown when built,
dynamic_decode) trained four Adam steps, then decoded: losses and predicted ids."""

import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as layers
from _golden import flat, set_params

dict_size = 20
hidden_dim = 8
decoder_size = hidden_dim
bos_id, eos_id = 0, 1
beam_size = 2
max_length = 5
out = {}


def encoder(src_embedding, src_sequence_length):
    encoder_fwd_cell = layers.GRUCell(hidden_size=hidden_dim)
    encoder_fwd_output, fwd_state = layers.rnn(
        cell=encoder_fwd_cell,
        inputs=src_embedding,
        sequence_length=src_sequence_length,
        time_major=False,
        is_reverse=False,
    )
    encoder_bwd_cell = layers.GRUCell(hidden_size=hidden_dim)
    encoder_bwd_output, bwd_state = layers.rnn(
        cell=encoder_bwd_cell,
        inputs=src_embedding,
        sequence_length=src_sequence_length,
        time_major=False,
        is_reverse=True,
    )
    encoder_output = layers.concat(input=[encoder_fwd_output, encoder_bwd_output], axis=2)
    encoder_state = layers.concat(input=[fwd_state, bwd_state], axis=1)
    return encoder_output, encoder_state


class DecoderCell(layers.RNNCell):
    def __init__(self, hidden_size):
        self.hidden_size = hidden_size
        self.gru_cell = layers.GRUCell(hidden_size)

    def attention(self, hidden, encoder_output, encoder_output_proj, encoder_padding_mask):
        decoder_state_proj = layers.unsqueeze(layers.fc(hidden, size=self.hidden_size, bias_attr=False), [1])
        mixed_state = fluid.layers.elementwise_add(
            encoder_output_proj, layers.expand(decoder_state_proj, [1, layers.shape(encoder_output_proj)[1], 1])
        )
        attn_scores = layers.squeeze(layers.fc(input=mixed_state, size=1, num_flatten_dims=2, bias_attr=False), [2])
        if encoder_padding_mask is not None:
            attn_scores = layers.elementwise_add(attn_scores, encoder_padding_mask)
        attn_scores = layers.softmax(attn_scores)
        context = layers.reduce_sum(layers.elementwise_mul(encoder_output, attn_scores, axis=0), dim=1)
        return context

    def call(self, step_input, hidden, encoder_output, encoder_output_proj, encoder_padding_mask=None):
        context = self.attention(hidden, encoder_output, encoder_output_proj, encoder_padding_mask)
        step_input = layers.concat([step_input, context], axis=1)
        output, new_hidden = self.gru_cell(step_input, hidden)
        return output, new_hidden


def decoder(encoder_output, encoder_output_proj, encoder_state, encoder_padding_mask, trg=None, is_train=True):
    decoder_cell = DecoderCell(hidden_size=decoder_size)
    decoder_initial_states = layers.fc(encoder_state, size=decoder_size, act="tanh")
    trg_embeder = lambda x: fluid.embedding(
        input=x, size=[dict_size, hidden_dim], dtype="float32", param_attr=fluid.ParamAttr(name="trg_emb_table")
    )
    output_layer = lambda x: layers.fc(
        x, size=dict_size, num_flatten_dims=len(x.shape) - 1, param_attr=fluid.ParamAttr(name="output_w")
    )
    if is_train:
        decoder_output, _ = layers.rnn(
            cell=decoder_cell,
            inputs=trg_embeder(trg),
            initial_states=decoder_initial_states,
            time_major=False,
            encoder_output=encoder_output,
            encoder_output_proj=encoder_output_proj,
            encoder_padding_mask=encoder_padding_mask,
        )
        decoder_output = output_layer(decoder_output)
    else:
        encoder_output = layers.BeamSearchDecoder.tile_beam_merge_with_batch(encoder_output, beam_size)
        encoder_output_proj = layers.BeamSearchDecoder.tile_beam_merge_with_batch(encoder_output_proj, beam_size)
        encoder_padding_mask = layers.BeamSearchDecoder.tile_beam_merge_with_batch(encoder_padding_mask, beam_size)
        beam_search_decoder = layers.BeamSearchDecoder(
            cell=decoder_cell,
            start_token=bos_id,
            end_token=eos_id,
            beam_size=beam_size,
            embedding_fn=trg_embeder,
            output_fn=output_layer,
        )
        decoder_output, _ = layers.dynamic_decode(
            decoder=beam_search_decoder,
            inits=decoder_initial_states,
            max_step_num=max_length,
            output_time_major=False,
            encoder_output=encoder_output,
            encoder_output_proj=encoder_output_proj,
            encoder_padding_mask=encoder_padding_mask,
        )
    return decoder_output


def model_func(inputs, is_train=True):
    src = inputs[0]
    src_sequence_length = inputs[1]
    src_embeder = lambda x: fluid.embedding(
        input=x, size=[dict_size, hidden_dim], dtype="float32", param_attr=fluid.ParamAttr(name="src_emb_table")
    )
    src_embedding = src_embeder(src)
    encoder_output, encoder_state = encoder(src_embedding, src_sequence_length)
    encoder_output_proj = layers.fc(input=encoder_output, size=decoder_size, num_flatten_dims=2, bias_attr=False)
    src_mask = layers.sequence_mask(src_sequence_length, maxlen=layers.shape(src)[1], dtype="float32")
    encoder_padding_mask = (src_mask - 1.0) * 1e9
    trg = inputs[2] if is_train else None
    output = decoder(
        encoder_output=encoder_output,
        encoder_output_proj=encoder_output_proj,
        encoder_state=encoder_state,
        encoder_padding_mask=encoder_padding_mask,
        trg=trg,
        is_train=is_train,
    )
    return output


def data_func(is_train=True):
    src = fluid.data(name="src", shape=[None, None], dtype="int64")
    src_sequence_length = fluid.data(name="src_sequence_length", shape=[None], dtype="int64")
    inputs = [src, src_sequence_length]
    if is_train:
        trg = fluid.data(name="trg", shape=[None, None], dtype="int64")
        trg_sequence_length = fluid.data(name="trg_sequence_length", shape=[None], dtype="int64")
        label = fluid.data(name="label", shape=[None, None], dtype="int64")
        inputs += [trg, trg_sequence_length, label]
    return inputs


def loss_func(logits, label, trg_sequence_length):
    probs = layers.softmax(logits)
    loss = layers.cross_entropy(input=probs, label=label)
    trg_mask = layers.sequence_mask(trg_sequence_length, maxlen=layers.shape(logits)[1], dtype="float32")
    avg_cost = layers.reduce_sum(loss * trg_mask) / layers.reduce_sum(trg_mask)
    return avg_cost


train_prog, startup_prog = fluid.Program(), fluid.Program()
with fluid.program_guard(train_prog, startup_prog):
    with fluid.unique_name.guard():
        inputs = data_func(is_train=True)
        logits = model_func(inputs, is_train=True)
        loss = loss_func(logits, inputs[-1], inputs[-2])
        optimizer = fluid.optimizer.Adam(0.01)
        optimizer.minimize(loss)
infer_prog = fluid.Program()
with fluid.program_guard(infer_prog, startup_prog):
    with fluid.unique_name.guard():
        inputs = data_func(is_train=False)
        predict_seqs = model_func(inputs, is_train=False)
rng = np.random.RandomState(7)


def batch(n, t):
    lens = rng.randint(2, t + 1, n)
    src = rng.randint(2, dict_size, (n, t))
    trg = rng.randint(2, dict_size, (n, t))
    lab = rng.randint(2, dict_size, (n, t))
    return {
        "src": src.astype("int64"),
        "src_sequence_length": lens.astype("int64"),
        "trg": trg.astype("int64"),
        "trg_sequence_length": lens.astype("int64"),
        "label": lab.astype("int64"),
    }


place = fluid.CPUPlace()
exe = fluid.Executor(place)
scope = fluid.Scope()
with fluid.scope_guard(scope):
    exe.run(startup_prog)
    set_params(train_prog, scope)
    losses = []
    for _step in range(4):
        (l,) = exe.run(train_prog, feed=batch(3, 4), fetch_list=[loss])
        losses.append(flat(l))
    out["losses"] = losses
    b = batch(2, 4)
    (seqs,) = exe.run(
        infer_prog, feed={"src": b["src"], "src_sequence_length": b["src_sequence_length"]}, fetch_list=[predict_seqs]
    )
    out["seqs"] = flat(seqs)
print(json.dumps(out))
