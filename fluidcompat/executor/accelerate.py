"""Beyond eager execution for a ``CompiledProgram`` (fluidcompat's ``BuildStrategy`` options):

- ``build_strategy.use_torch_compile = True``: the prepared block's generated function is handed to
  ``torch.compile`` (``build_strategy.torch_compile_backend``, default ``"inductor"``). Parts torch
  cannot trace run eagerly between the compiled graphs; if nothing compiles (or the backend fails)
  the program runs eagerly and one line on stderr says why.
- ``build_strategy.use_cuda_graph = True`` (GPU places): after one eager run, a run whose inputs and
  parameters keep their shapes is captured into a CUDA graph and replayed; feeds are copied into the
  graph's input buffers. Programs the capture cannot take (host reads such as ``shape`` ->
  ``crop_tensor``, parameters replaced instead of updated in place, control flow) run eagerly, with
  the reason on stderr.

Both are off by default: on the CPU torch.compile's first run costs seconds to minutes, and CUDA
graphs need a GPU (see bench/README.md for where they win).
"""

from __future__ import annotations

import sys
from typing import Callable, Dict, Optional

import torch

from fluidcompat_ops.sequence import lod_of


def _say(message: str) -> None:
    sys.stderr.write(f"fluidcompat: {message}\n")


class TorchCompiled:
    """``prepared.run`` through torch.compile, falling back to eager execution with a message."""

    def __init__(self, prepared, backend: str) -> None:
        self.prepared = prepared
        self.backend = backend
        self.fn: Optional[Callable] = None
        self.eager = False

    @staticmethod
    def own_fetched(env, names) -> None:
        """(The compiled function's results are new tensors each run: nothing to copy.)"""

    @staticmethod
    def host_fetched(names) -> None:
        """(No fetched values on the host ahead of the fetch.)"""

    def __call__(self, env: Dict[str, torch.Tensor]) -> None:
        if self.eager:
            return self.prepared.run(env)
        if self.fn is None:
            import torch._dynamo.config as config

            try:
                self.fn = torch.compile(self.prepared.compiled_function(), backend=self.backend, dynamic=False)
            except Exception as e:  # noqa: BLE001  (an unknown backend, a torch without a compiler)
                self._give_up(f"could not compile the program ({type(e).__name__}: {e})")
                return self.prepared.run(env)
            before = _graphs()
            from fluidcompat.progress import elapsed  # (the first run compiles: seconds to minutes, silent)

            with config.patch(suppress_errors=True), elapsed(f"torch.compile ({self.backend}) compiling the program"):
                try:
                    self.fn(env)
                except Exception as e:  # noqa: BLE001
                    # nothing compiled ran yet when compiling the first graph failed; a later failure
                    # is suppressed by dynamo (that frame runs eagerly)
                    self._give_up(f"could not compile the program ({type(e).__name__}: {e})")
                    raise
            if _graphs() == before:
                self._give_up("found nothing to compile in the program")
            return None
        return self.fn(env)

    def _give_up(self, why: str) -> None:
        self.eager = True
        _say(f"torch.compile {why}; it runs eagerly")


def _graphs() -> int:
    from torch._dynamo.utils import counters

    return int(counters["stats"].get("unique_graphs", 0))


_RANDOM = ("dropout", "sampling_id", "randint", "randperm")


def program_not_capturable(steps) -> Optional[str]:
    """Why a prepared block planned for a GPU cannot be replayed from a CUDA graph, or None. Pure
    (reads the plan only). A capture records the GPU work once: it cannot hold control flow or
    copies between host and device, and an op reading a value on the host (``crop_tensor``'s Shape)
    must read one fixed by the shapes the graph is captured for (from ``shape`` ops, constants, and
    ops on those alone), not data that changes between runs."""
    static = set()
    for s in steps:
        op = s.plan.op
        if s.sub is not None:
            return f"it has control flow ({op.type})"
        for c in s.plan.copies:
            return f"op {op.type} needs {c.var!r} copied ({c.kind}) during the run"
        for slot in op._def.host_inputs:
            moving = [n for n in op.inputs.get(slot, ()) if n not in static]
            if moving:
                return f"op {op.type} reads {moving[0]!r} on the host, and its value can change between runs"
        ins = [n for names in op.inputs.values() for n in names]
        random = "random" in op.type or op.type in _RANDOM
        fixed = op.type == "shape" or (op.type == "fill_constant" and not ins)
        if fixed or (ins and set(ins) <= static and not random):
            static.update(op.output_arg_names)
    return None


# NOTE: [Fetches in the graph]
# A replayed program's fetched values are copied to the host inside the graph: the capture ends with
# one copy per fetched dense tensor into a page-locked host buffer made for it before the capture
# (its shape and dtype from the warm-up run), so a replayed run's fetch is one wait for the stream and
# a host copy of each buffer. A fetch after the replay (``.cpu()``) is a copy to launch and wait for:
# 16.5 us for 300 bytes on an H200 machine, two thirds of torch's own graph replay and fetch of the
# crop program there (25.7 us). A value whose shape or dtype differs at the capture, or that carries
# a LoD, is fetched the usual way; a LoDTensor fetched with return_numpy=False is a copy of the GPU
# buffer (own_fetched). The wait is for the current stream of the fetched values' GPU, on which the
# graph replays.


class CudaGraphed:
    """``prepared.run`` captured into a CUDA graph after a warm-up run, replayed afterwards."""

    def __init__(self, prepared) -> None:
        self.prepared = prepared
        self.graph = None
        self.eager = False
        self.warm = False
        self.inputs: Dict[str, torch.Tensor] = {}
        self.outputs: Dict[str, torch.Tensor] = {}
        self.signature = None
        # NOTE: [Fetches in the graph]: fetched name -> (shape, dtype, device) in the warm-up run, then
        # -> the host buffer the graph copies it into; whether the last call replayed the graph
        self.fetch_specs: Dict[str, tuple] = {}
        self.host: Dict[str, torch.Tensor] = {}
        self.replayed = False
        self.device: Optional[int] = None  # the GPU the graph runs on (None: a stand-in on the host)
        self._streams: Dict[int, object] = {}

    def reason_not_capturable(self, env) -> Optional[str]:
        if not torch.cuda.is_available():
            return "CUDA graphs need a GPU"
        devices = {t.device.type for t in env.values() if torch.is_tensor(t)}
        if devices - {"cuda"}:
            return "some of the tensors it reads live in host memory (feed or scope values on the CPU)"
        return program_not_capturable(self.prepared.steps)

    def _give_up(self, why: str) -> None:
        self.eager = True
        _say(f"CUDA graph capture {why}; the program runs eagerly")

    def __call__(self, env: Dict[str, torch.Tensor]) -> None:
        self.replayed = False
        if self.eager:
            return self.prepared.run(env)
        persist = self.prepared.persist_outputs
        signature = tuple((n, tuple(t.shape), t.dtype) for n, t in sorted(env.items()) if torch.is_tensor(t))
        if self.graph is not None and signature == self.signature:
            moved = [n for n, t in self.inputs.items() if env[n] is not t]
            for n in moved:  # new feeds (or a scope value set anew) into the graph's input buffers
                self.inputs[n].copy_(env[n], non_blocking=True)
            self.graph.replay()
            for n in moved:
                if n in persist:  # updated in place in the graph's buffer: hand it to the scope's tensor
                    env[n].copy_(self.inputs[n])
            self._hand_out(env, persist)
            self.replayed = True
            return None
        why = self.reason_not_capturable(env)
        if why is not None:
            self._give_up(f"skipped: {why}")
            return self.prepared.run(env)
        if not self.warm:  # one eager run first: lazy allocations, cuBLAS handles
            before = {n: t for n, t in env.items() if torch.is_tensor(t)}
            self.prepared.run(env)
            replaced = [n for n in persist if n in before and env.get(n) is not before[n]]
            if replaced:
                self._give_up(f"skipped: the run replaces {replaced[0]!r} instead of updating it in place")
            self.fetch_specs = {
                n: (t.shape, t.dtype, t.device)
                for n in self.prepared.fetch_names
                if torch.is_tensor(t := env.get(n)) and t.layout == torch.strided and not lod_of(t)
            }
            self.warm = True
            return None
        self.signature = signature
        self.inputs = {n: t for n, t in env.items() if torch.is_tensor(t)}
        self.host = {
            n: torch.empty(s, dtype=d, pin_memory=where.type == "cuda") for n, (s, d, where) in self.fetch_specs.items()
        }
        gpus = [where.index or 0 for _, _, where in self.fetch_specs.values() if where.type == "cuda"]
        self.device = gpus[0] if gpus else None
        graph = torch.cuda.CUDAGraph()
        work = dict(env)
        torch.cuda.synchronize()
        try:
            with torch.cuda.graph(graph):
                self._captured(work)
        except Exception as e:  # noqa: BLE001  (a host sync or an allocation the capture refused)
            self.host = {}
            self._give_up(f"failed ({type(e).__name__}: {e})")
            return self.prepared.run(env)
        self.graph = graph
        self.outputs = {
            n: t for n, t in work.items() if torch.is_tensor(t) and (n not in self.inputs or t is not self.inputs[n])
        }
        graph.replay()
        self._hand_out(env, persist)
        self.replayed = True
        return None

    def _captured(self, work: Dict[str, torch.Tensor]) -> None:
        """What the graph holds: the run, then the copies of fetched values to the host buffers (NOTE:
        [Fetches in the graph]); a value that does not fit its buffer is dropped from them."""
        self.prepared.run(work)
        for n, buf in list(self.host.items()):
            t = work.get(n)
            if torch.is_tensor(t) and t.shape == buf.shape and t.dtype == buf.dtype and not lod_of(t):
                buf.copy_(t, non_blocking=True)
            else:
                del self.host[n]

    def host_fetched(self, names) -> Optional[list]:
        """After a replay, the fetched values as the host buffers the graph copied them into (after one
        wait for the stream), or None when some fetched value is not among them."""
        if not self.replayed:
            return None
        host = self.host
        for n in names:
            if n not in host:
                return None
        if self.device is not None:
            from fluidcompat.places import current_stream

            current_stream(self.device, self._streams).synchronize()
        return [host[n] for n in names]

    def _hand_out(self, env, persist) -> None:
        """The replay's results into ``env`` as the graph's buffers: persistables for the scope (the next
        replay updates them as a step would), the rest for the fetch, which copies them to the host (a
        LoDTensor fetched with return_numpy=False is a copy: see ``own_fetched``)."""
        env.update(self.outputs)

    @staticmethod
    def own_fetched(env, names) -> None:
        """Fetched values that are graph buffers, as copies (the next replay overwrites the buffers):
        for a LoDTensor fetched with return_numpy=False, which keeps the tensor itself."""
        for n in names:
            t = env.get(n)
            if torch.is_tensor(t):
                env[n] = t.clone()
