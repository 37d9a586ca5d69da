"""``fluid.contrib``: the parts of fluid 1.8.5's contrib package that fluidcompat provides."""

from . import (  # noqa: F401  (fluid exposes the modules)
    decoder,
    extend_optimizer,
    layers,
    memory_usage_calc,
    mixed_precision,
    model_stat,
    op_frequence,
    quantize,
    reader,
)
from .decoder import BeamSearchDecoder, InitState, StateCell, TrainingDecoder
from .extend_optimizer import extend_with_decoupled_weight_decay
from .layers import (
    BasicGRUUnit,
    BasicLSTMUnit,
    basic_gru,
    basic_lstm,
    ctr_metric_bundle,
    fused_elemwise_activation,
    fused_embedding_seq_pool,
    match_matrix_tensor,
    multiclass_nms2,
    partial_concat,
    partial_sum,
    rank_attention,
    sequence_topk_avg_pooling,
    shuffle_batch,
    tdm_child,
    tdm_sampler,
    tree_conv,
    var_conv_2d,
)
from .memory_usage_calc import memory_usage
from .op_frequence import op_freq_statistic
from .quantize import QuantizeTranspiler
from .reader import distributed_batch_reader

__all__ = [
    "mixed_precision",
    "BasicGRUUnit",
    "BasicLSTMUnit",
    "basic_gru",
    "basic_lstm",
    "extend_with_decoupled_weight_decay",
    "memory_usage",
    "op_freq_statistic",
    "fused_elemwise_activation",
    "fused_embedding_seq_pool",
    "multiclass_nms2",
    "partial_concat",
    "partial_sum",
    "shuffle_batch",
    "ctr_metric_bundle",
    "tree_conv",
    "match_matrix_tensor",
    "sequence_topk_avg_pooling",
    "var_conv_2d",
    "tdm_child",
    "tdm_sampler",
    "rank_attention",
    "InitState",
    "StateCell",
    "TrainingDecoder",
    "BeamSearchDecoder",
    "distributed_batch_reader",
    "QuantizeTranspiler",
]


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.coverage import unsupported

    return unsupported("paddle.fluid.contrib")(name)
