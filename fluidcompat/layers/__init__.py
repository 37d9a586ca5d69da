"""``fluid.layers``: thin functions that check arguments, create outputs and append ops.

They are defined by family, one module each:

========================  =========================================================================
activation                relu and its kin, softmax, gelu, selu, prelu, maxout, ... (ops: sigmoid,
                          exp, tanh, sqrt and the other one-input ops fluid generated)
math                      elementwise_* with fluid's axis broadcasting, mul, matmul, scale, pow,
                          clip, comparisons and logical ops, sums
reduction                 reduce_*, mean, logsumexp
indexing                  slice, gather / scatter (and _nd), index_select, where, unique, arg*, topk
creation                  fill_constant, zeros, ones, full, assign, parameters, ranges, random
manipulation              shape, cast, reshape, transpose, concat / split, stack, expand, pad, crop
losses                    cross entropy, regression and ranking losses, nce, hsigmoid, warpctc, CRF
metrics                   accuracy, auc, mean_iou, chunk_eval, edit_distance, detection_map
norm                      batch_norm, layer_norm, group_norm, instance_norm, data_norm, ...
conv                      convolution and pooling, 2-D and 3-D
vision                    image_resize and interpolation, pixel_shuffle, grid_sampler, RoI pooling
sequence_lod              sequence_* over LoD tensors, dynamic_lstm / gru, DynamicRNN
tensor_array              tensor arrays and the rank tables of LoD sequences
rnn, decode               RNNCell / LSTMCell / GRUCell, rnn, lstm; decoders, beam search, CTC / CRF
detection_boxes           (and detection_priors, detection_nms, detection_losses): fluid's detection
control_flow              cond, case, switch_case, While, while_loop, Switch, IfElse, StaticRNN
distributed               parameter-server blocks, SelectedRows, the CTR layers
io, nn                    data and readers; fc, embedding, one_hot, dropout
========================  =========================================================================

fluid 1.8's own modules keep the names fluid defined in them (``from paddle.fluid.layers.nn import
conv2d``, ``fluid.layers.control_flow.While``): nn, tensor, control_flow, detection, loss, ops and
metric_op hand out those defined in a family module, and ``_fill_fluid_modules`` below adds the rest.
"""

import sys as _sys

from fluidcompat import layer_helper as _layer_helper
from fluidcompat.layers import (
    _docs,
    _dtype_checks,
    activation,
    control_flow,
    conv,
    creation,
    decode,
    detection,
    detection_boxes,
    detection_losses,
    detection_nms,
    detection_priors,
    distributed,
    distributions,
    indexing,
    io,
    learning_rate_scheduler,
    loss,
    losses,
    manipulation,
    math,
    math_op_patch,
    metric_op,
    metrics,
    nn,
    norm,
    ops,
    reduction,
    sequence_lod,
    tensor,
    tensor_array,
    vision,
)
from fluidcompat.layers import rnn as _rnn_module  # the name `rnn` is the function, as in fluid
from fluidcompat.layers.activation import *  # noqa: F401,F403
from fluidcompat.layers.control_flow import *  # noqa: F401,F403
from fluidcompat.layers.conv import *  # noqa: F401,F403
from fluidcompat.layers.creation import *  # noqa: F401,F403
from fluidcompat.layers.decode import *  # noqa: F401,F403
from fluidcompat.layers.detection import *  # noqa: F401,F403
from fluidcompat.layers.distributed import *  # noqa: F401,F403
from fluidcompat.layers.distributions import *  # noqa: F401,F403
from fluidcompat.layers.indexing import *  # noqa: F401,F403
from fluidcompat.layers.io import *  # noqa: F401,F403
from fluidcompat.layers.learning_rate_scheduler import *  # noqa: F401,F403
from fluidcompat.layers.loss import *  # noqa: F401,F403
from fluidcompat.layers.losses import *  # noqa: F401,F403
from fluidcompat.layers.manipulation import *  # noqa: F401,F403
from fluidcompat.layers.math import *  # noqa: F401,F403
from fluidcompat.layers.metrics import *  # noqa: F401,F403
from fluidcompat.layers.nn import *  # noqa: F401,F403
from fluidcompat.layers.norm import *  # noqa: F401,F403
from fluidcompat.layers.ops import *  # noqa: F401,F403
from fluidcompat.layers.reduction import *  # noqa: F401,F403
from fluidcompat.layers.rnn import *  # noqa: F401,F403
from fluidcompat.layers.sequence_lod import *  # noqa: F401,F403
from fluidcompat.layers.tensor import *  # noqa: F401,F403
from fluidcompat.layers.tensor_array import *  # noqa: F401,F403
from fluidcompat.layers.vision import *  # noqa: F401,F403

_FAMILIES = (activation, conv, creation, decode, detection_boxes, detection_losses, detection_nms, detection_priors)
_FAMILIES += (distributed, indexing, losses, manipulation, math, metrics, norm, reduction, tensor_array, vision)
# fluid 1.8's modules of fluid.layers (``rnn``: its module, the name being the function)
_MODULES = (control_flow, detection, distributions, io, learning_rate_scheduler, loss, metric_op, nn, ops)
_MODULES += (sequence_lod, tensor)
math_op_patch.monkey_patch_variable()
_docs.apply(globals())
_dtype_checks.apply(globals(), "paddle.fluid.layers")

# each name once, though a fluid module and the family that defines the name both list it
__all__ = list(dict.fromkeys(name for module in (*_FAMILIES, *_MODULES, _rnn_module) for name in module.__all__))


def _fill_fluid_modules():
    """Each ``fluid.layers.<module>`` holds the names fluid 1.8 defined there (``from
    paddle.fluid.layers.nn import cos_sim``), wherever fluidcompat defines them; a name the module
    defines or imports itself stays its own."""
    from fluidcompat.fluid18_names import fluid_names

    space = globals()
    modules = {m.__name__.split(".")[-1]: m for m in (_rnn_module, *_MODULES)}
    for fluid_module, names in fluid_names().items():
        prefix, _, short = fluid_module.rpartition(".")
        module = modules.get(short) if prefix == "paddle.fluid.layers" else None
        if module is None:
            continue
        for name in names:
            if name in space and not hasattr(module, name):
                setattr(module, name, space[name])
                module.__all__ = [*module.__all__, name]  # `from ...layers.nn import *` too


_fill_fluid_modules()

# This package, for the code that builds with its (checked) layers but sits below it or inside it:
# LayerHelper's weight norm; RNN cells, decoders, distributions and other layers built from layers;
# dygraph-to-static's runtime (docs/architecture.md, the hooks)
_layer_helper.layers = _sys.modules[__name__]


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.layers")(name)
