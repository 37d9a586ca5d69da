"""Take a fluid model out to PyTorch: a ``torch.fx.GraphModule``, ``torch.export`` (``.pt2``), ONNX and a
``state_dict`` (``fluidcompat export MODEL_DIR --format onnx -o model.onnx``).

::

    program, feeds, fetches = fluid.io.load_inference_model(model_dir, exe)
    module = fluidcompat.export.to_module(program, feeds, fetches)   # a torch.fx.GraphModule
    print(module.code)                                               # one line per fluid op
    fluidcompat.export.save(module, "model.onnx", "onnx")            # or "pt2", "state_dict"
    fluidcompat.export.trace(module)                                 # the torch.export.ExportedProgram

The module's ``forward`` takes the feeds in order and returns a tuple of the fetches; ``module.inputs`` /
``module.outputs`` describe them (-1 where the program left a dimension free: dynamic in the export).
"""

from fluidcompat.export.formats import FORMATS, Written, example_inputs, save, trace
from fluidcompat.export.graph import ExportError, FluidOp, TensorSpec, build_module

to_module = build_module

__all__ = [
    "FORMATS",
    "ExportError",
    "FluidOp",
    "TensorSpec",
    "Written",
    "build_module",
    "example_inputs",
    "save",
    "to_module",
    "trace",
]
