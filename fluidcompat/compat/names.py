"""The Paddle 2.x names fluidcompat has, and the error for those it has not.

``python -m fluidcompat.compat.names`` prints the list (``--write`` writes ``docs/paddle2_names.md``,
which a test keeps current). ``paddle.X`` / ``paddle.nn.X`` / ... that fluidcompat lacks raise
``UnsupportedAPIError`` (an AttributeError, so ``hasattr`` says False) naming the name, saying it is not
supported, naming the nearest thing fluidcompat has where there is one, and pointing at this list.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Dict, List

from fluidcompat.fluid18_names import UnsupportedAPIError, real_name

# the Paddle 2.x modules fluidcompat gives, besides ``paddle`` itself (their ``__all__`` is what they have)
MODULES = (
    "paddle.device",
    "paddle.nn",
    "paddle.nn.functional",
    "paddle.optimizer",
    "paddle.io",
    "paddle.metric",
    "paddle.distributed",
)

# Paddle 2.x names fluidcompat lacks -> the nearest thing it has ("" where there is none)
_TRAINING_LOOP = (
    "write the training loop: loss.backward(), opt.step(), opt.clear_grad() (samples/paddle2_mnist_train.py "
    "in the source tree)"
)
UNSUPPORTED: Dict[str, str] = {
    "paddle.Model": _TRAINING_LOOP,
    "paddle.hapi": _TRAINING_LOOP,
    "paddle.callbacks": _TRAINING_LOOP,
    "paddle.summary": "print the layer's parameters: [(p.name, p.shape) for p in model.parameters()]",
    "paddle.flops": "",
    "paddle.vision": (
        "build the model from paddle.nn layers (Conv2D, MaxPool2D, Linear, ...) and read mnist / cifar / flowers "
        "with paddle.dataset (paddle.dataset.image for the image helpers)"
    ),
    "paddle.text": "paddle.dataset.imdb / imikolov / movielens / conll05 / wmt14 / wmt16 (fluid 1.8's readers)",
    "paddle.static": "the fluid 1.8 API: import paddle.fluid as fluid (fluid.data, fluid.Program, fluid.Executor)",
    "paddle.jit": "fluid.dygraph.jit (fluid 1.8's declarative / TracedLayer) or fluid.io.save_inference_model",
    "paddle.inference": "paddle.fluid.core.AnalysisConfig and create_paddle_predictor (fluid 1.8's inference API)",
    "paddle.amp": "fluid.contrib.mixed_precision.decorate (static programs)",
    "paddle.regularizer": "fluid.regularizer.L1Decay / L2Decay",
    "paddle.onnx": "fluidcompat export (fluidcompat export --help)",
    "paddle.linalg": "",
    "paddle.fft": "",
    "paddle.signal": "",
    "paddle.sparse": "",
    "paddle.incubate": "fluid.incubate (fluid 1.8's fleet and data_generator)",
    "paddle.audio": "",
    "paddle.geometric": "",
    "paddle.quantization": "fluid.contrib.QuantizeTranspiler (fluid 1.8's quantization-aware training)",
    "paddle.autograd": "loss.backward() on dygraph tensors; fluid.backward / fluid.gradients in static programs",
    "paddle.grad": "fluid.dygraph.grad",
    "paddle.distribution": "fluid.layers.Normal / Uniform / Categorical (fluid 1.8's distributions)",
    "paddle.profiler": "fluid.profiler (profiler.profiler(...), start_profiler / stop_profiler)",
    "paddle.hub": "",
    "paddle.nn.Transformer": "",
    "paddle.nn.LSTM": "fluid.layers.dynamic_lstm / fluid.layers.lstm (static programs)",
    "paddle.nn.GRU": "fluid.layers.dynamic_gru (static programs)",
    "paddle.nn.MultiHeadAttention": "",
    "paddle.optimizer.lr": "fluid.layers.*_decay learning-rate schedules (static programs)",
    "paddle.optimizer.AdamW": "paddle.optimizer.Adam, or fluid.contrib.extend_with_decoupled_weight_decay",
}

DOC = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "paddle2_names.md"
)


def available() -> Dict[str, List[str]]:
    """The names fluidcompat gives per Paddle 2.x module (``paddle`` and ``MODULES``), sorted."""
    paddle = importlib.import_module("fluidcompat.compat.paddle")
    tensor = importlib.import_module("fluidcompat.compat.tensor")
    top = {n for n in vars(paddle) if not n.startswith("_")} - {"importlib"}
    top |= set(paddle._MODULES) | set(paddle._NAMES) | set(tensor.__all__) | set(tensor.DTYPES)
    top = {n for n in top if "." not in n}
    out = {"paddle": sorted(top)}
    for alias in MODULES:
        module = importlib.import_module(real_name(alias))
        out[alias] = sorted(module.__all__)
    return out


def missing(module: str, name: str) -> AttributeError:
    """The error for ``<module>.<name>`` that fluidcompat lacks: UnsupportedAPIError for a Paddle 2.x
    name it knows fluidcompat lacks (with the nearest alternative), a plain AttributeError else; both
    say where the list of what is there comes from."""
    qualified = f"{module}.{name}"
    where = "python -m fluidcompat.compat.names lists the Paddle 2.x names fluidcompat has"
    if qualified in UNSUPPORTED:
        alternative = UNSUPPORTED[qualified]
        instead = f" Instead: {alternative}." if alternative else ""
        return UnsupportedAPIError(f"{qualified} (Paddle 2.x) is not supported by fluidcompat.{instead} {where}.")
    return AttributeError(f"module '{module}' (fluidcompat) has no attribute '{name}' ({where})")


def module_getattr(module: str):
    """A module ``__getattr__`` raising ``missing(module, name)``."""

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise missing(module, name)

    return __getattr__


def render() -> str:
    names = available()
    total = sum(len(v) for v in names.values())
    out = [
        "# The Paddle 2.x names fluidcompat has",
        "",
        "Generated by `python -m fluidcompat.compat.names --write` from the modules themselves; a test",
        "(tests/test_first_contact.py) fails when this file is stale. Scripts reach them as `paddle.X` under",
        "`fluidcompat run` (or after `import fluidcompat.paddle_alias`). Any other name raises an",
        "AttributeError; those below under *Not supported* name the nearest alternative.",
        "",
        f"**{total} names in {len(names)} modules.**",
    ]
    for module, rows in names.items():
        out += ["", f"## `{module}` ({len(rows)})", "", ", ".join(f"`{n}`" for n in rows)]
    out += ["", "## Not supported", "", "| name | instead |", "| --- | --- |"]
    out += [f"| `{n}` | {alt or '(nothing yet)'} |" for n, alt in sorted(UNSUPPORTED.items())]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if "--write" in argv:
        with open(DOC, "w") as f:
            f.write(text)
        print(f"wrote {DOC}")
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
