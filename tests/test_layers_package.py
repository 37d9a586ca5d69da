"""fluidcompat/layers/__init__.py: the layers are grouped by family, and fluid 1.8's module names hand
them out."""

import inspect
import os

import fluidcompat as fluid
from fluidcompat import layers

LAYERS_DIR = os.path.dirname(layers.__file__)
# fluid 1.8's module names that define nothing: they hand out what the families define
FACES = ("tensor", "loss", "detection", "metric_op")


def test_modules_are_families_of_at_most_1200_lines():
    for name in sorted(os.listdir(LAYERS_DIR)):
        if not name.endswith(".py"):
            continue
        assert name[:-3] not in ("extra", "misc", "more"), name
        with open(os.path.join(LAYERS_DIR, name)) as f:
            assert sum(1 for _ in f) <= 1200, name


def test_each_layer_is_defined_once_in_a_family_and_the_faces_define_none():
    assert len(layers.__all__) == len(set(layers.__all__))
    homes = {}
    for family in layers._FAMILIES:
        for name in family.__all__:
            assert name not in homes, f"{name} in {homes.get(name)} and {family.__name__}"
            homes[name] = family.__name__
            fn = inspect.unwrap(getattr(family, name))
            assert fn.__module__ == family.__name__, (name, fn.__module__)
    for face in FACES:
        module = getattr(layers, face)
        own = [n for n, v in vars(module).items() if getattr(v, "__module__", None) == module.__name__]
        assert own == [], face


def test_fluid_modules_hand_out_the_family_functions():
    """``from paddle.fluid.layers.nn import conv2d``: the function defined in layers/conv.py."""
    assert layers.nn.conv2d is layers.conv.conv2d and layers.tensor.reshape is layers.manipulation.reshape
    assert layers.control_flow.less_than is layers.math.less_than
    assert layers.control_flow.array_write is layers.tensor_array.array_write
    assert layers.detection.multiclass_nms is layers.detection_nms.multiclass_nms
    assert layers.loss.softmax_with_cross_entropy is layers.losses.softmax_with_cross_entropy
    assert fluid.layers.metric_op.auc is fluid.layers.auc
