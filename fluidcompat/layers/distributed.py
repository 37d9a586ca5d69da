"""``fluid.layers`` for distributed and sparse training.

fluid 1.8's hand-built parameter-server layers (``fluid.layers.io.ListenAndServ``, ``Send``,
``Recv``): a server program whose ``listen_and_serv`` op runs a sub-block once per batch, and a client
program's ``send`` / ``recv`` ops with their barriers. They run on the parameter server of
fluidcompat/transpiler/rpc/, as DistributeTranspiler's programs do. fluid kept them in
``fluid.layers.io`` without exporting them (``from paddle.fluid.layers.io import ListenAndServ``); so
does fluidcompat.

Then the SelectedRows helpers (get_tensor_from_selected_rows, merge_selected_rows) and the CTR layers
of fleet's parameter server (continuous_value_model, filter_by_instag, hash).
"""

from __future__ import annotations

from fluidcompat import unique_name
from fluidcompat.dtypes import VarType
from fluidcompat.framework import OpRole, Variable, layer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable
from fluidcompat.layers._common import _one
from fluidcompat.layers.control_flow import _SubBlockGuard

__all__ = [
    "get_tensor_from_selected_rows",
    "merge_selected_rows",
    "continuous_value_model",
    "filter_by_instag",
    "hash",
]

_SYNC = 0  # DistributedMode.SYNC: the server runs its block once every client has sent


def _endpoint_list(endpoints, api: str) -> list:
    if not isinstance(endpoints, str):
        raise TypeError(f"{api}: endpoints is a comma-separated 'ip:port' string. Received: {endpoints!r}")
    return endpoints.split(",")


def _var_list(value, what: str, api: str, one_or_none: bool = False) -> list:
    """``value`` as a list of Variables (``one_or_none``: None and a lone Variable are accepted)."""
    if one_or_none and value is None:
        return []
    if one_or_none and isinstance(value, Variable):
        return [value]
    if type(value) is not list:  # fluid asserted it
        raise AssertionError(f"{api}: {what} must be a list of Variables. Received: {type(value).__name__}")
    return value


class ListenAndServ:
    """A server listening on ``endpoint`` (``"ip:0"``: a free port, written to
    ``/tmp/paddle.<pid>.port`` once the server listens): it takes the variables named ``inputs`` from
    ``fan_in`` clients, and after every client's send barrier runs the block built under ``do()``.
    ``optimizer_mode``: what ``get_params_and_grads`` looks for in that block."""

    def __init__(self, endpoint, inputs, fan_in=1, optimizer_mode=True) -> None:
        self.helper = LayerHelper("listen_and_serv")
        self.inputs = inputs
        self.outputs: list = []
        self.endpoint = endpoint
        self.fan_in = fan_in
        self.optimizer_mode = optimizer_mode

    def do(self) -> "BlockGuardServ":
        """``with serv.do():`` builds the server's block; leaving it appends ``listen_and_serv``."""
        return BlockGuardServ(self)

    def parent_block(self):
        program = self.helper.main_program
        parent_idx = program.current_block().parent_idx
        if parent_idx < 0:
            raise ValueError("ListenAndServ.parent_block: call it inside `with serv.do():` (the global block has none)")
        return program.block(parent_idx)

    def get_params_and_grads(self):
        """Optimizer mode: the names of the ``Param`` and ``Grad`` inputs of the block's optimizer ops;
        else every input variable of the block's ops (looked up in the parent block), twice."""
        block = self.helper.main_program.current_block()
        parent = self.parent_block()
        params, grads = [], []
        for op in block.ops:
            if self.optimizer_mode:
                if op.input("Param") and op.input("Grad"):
                    params.append(op.input("Param")[0])
                    grads.append(op.input("Grad")[0])
            else:
                for name in op.input_arg_names:
                    params.append(parent.var(name))
                    grads.append(parent.var(name))
        return params, grads

    def complete_op(self) -> None:
        """Append ``listen_and_serv`` (running the current block) to the parent block."""
        block = self.helper.main_program.current_block()
        self.parent_block().append_op(
            type="listen_and_serv",
            inputs={"X": self.inputs},
            outputs={},
            attrs={
                "endpoint": self.endpoint,
                "Fanin": self.fan_in,
                "optimize_blocks": [block.idx],
                "distributed_mode": _SYNC,
                "grad_to_block_id": [""],
            },
        )

    def complete(self) -> None:  # what the sub-block guard calls
        self.complete_op()


class BlockGuardServ(_SubBlockGuard):
    """The block of a ListenAndServ: on a clean exit its ``listen_and_serv`` op is appended."""

    def __init__(self, server) -> None:
        if not isinstance(server, ListenAndServ):
            raise TypeError(f"BlockGuardServ takes a ListenAndServ. Received: {type(server).__name__}")
        super().__init__(server)
        self.server = server


def Send(endpoints, send_vars, dummy_output=None, sync=True):  # noqa: N802  (fluid's name)
    """Send each of ``send_vars`` to its server (``endpoints``: one ``ip:port`` per variable, comma
    separated); ``sync``: then a send barrier, after which the servers run their blocks."""
    send_vars = _var_list(send_vars, "send_vars", "Send")
    dummy_output = _var_list(dummy_output, "dummy_output", "Send", one_or_none=True)
    epmap = _endpoint_list(endpoints, "Send")
    helper = LayerHelper("Send")
    helper.append_op(
        type="send",
        inputs={"X": send_vars},
        outputs={"Out": dummy_output},
        attrs={"epmap": epmap, "op_role": OpRole.RPC},
    )
    if sync:
        helper.append_op(
            type="send_barrier",
            inputs={"X": dummy_output},
            outputs={"Out": []},
            attrs={"endpoints": list(dict.fromkeys(epmap))},
        )


def Recv(endpoints, get_vars, dummy_input=None, sync=True):  # noqa: N802  (fluid's name)
    """Receive each of ``get_vars`` from its server (``endpoints`` as Send's); ``sync``: then a fetch
    barrier. Returns ``get_vars``."""
    get_vars = _var_list(get_vars, "get_vars", "Recv")
    dummy_input = _var_list(dummy_input, "dummy_input", "Recv", one_or_none=True)
    epmap = _endpoint_list(endpoints, "Recv")
    helper = LayerHelper("Recv")
    helper.append_op(type="recv", inputs={"X": dummy_input}, outputs={"Out": get_vars}, attrs={"epmap": epmap})
    if sync:
        helper.append_op(
            type="fetch_barrier", outputs={"Out": get_vars}, attrs={"endpoints": list(dict.fromkeys(epmap))}
        )
    return get_vars


# -- SelectedRows, and the CTR layers of fleet's parameter server -------------------------------------
@layer
def get_tensor_from_selected_rows(x, name=None):
    return _one("get_tensor_from_selected_rows", {"X": [x]}, name=name)


@layer
def merge_selected_rows(x, name=None):
    helper = LayerHelper("merge_selected_rows", name=name)
    out = helper.create_variable(
        dtype=x.dtype, type=VarType.SELECTED_ROWS, name=unique_name.generate("merge_selected_rows.tmp")
    )
    helper.append_op(type="merge_selected_rows", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


@layer
def continuous_value_model(input, cvm, use_cvm=True):
    """CVM features (op ``cvm``): log(show + 1), log(click + 1) - log(show + 1), then the rest, or
    only the rest without ``use_cvm``; the gradient of the first two columns is ``cvm`` (fluid 1.8)."""
    return _one("cvm", {"X": [input], "CVM": [cvm]}, {"use_cvm": use_cvm}, out_slot="Y")


@layer
def filter_by_instag(ins, ins_tag, filter_tag, is_lod, out_val_if_empty=0):
    """The instances of ``ins`` (its LoD sequences with ``is_lod``, else its rows) whose tags
    (``ins_tag``, int64 LoD per instance) include one of ``filter_tag``: returns (them, with their LoD;
    a loss weight [kept, 1] of ones). With none: one row of ``out_val_if_empty`` and weight 0."""
    for value, what in ((ins, "ins"), (ins_tag, "ins_tag"), (filter_tag, "filter_tag")):
        check_variable(value, what, "filter_by_instag")
    helper = LayerHelper("filter_by_instag")
    out = helper.create_variable_for_type_inference(dtype=ins.dtype)
    loss_weight = helper.create_variable_for_type_inference(dtype="float32")
    mmap = helper.create_variable_for_type_inference(dtype="int64")
    helper.append_op(
        type="filter_by_instag",
        inputs={"Ins": [ins], "Ins_tag": [ins_tag], "Filter_tag": [filter_tag]},
        outputs={"Out": [out], "LossWeight": [loss_weight], "IndexMap": [mmap]},
        attrs={"is_lod": is_lod, "out_val_if_empty": out_val_if_empty},
    )
    return out, loss_weight


@layer
def hash(input, hash_size, num_hash=1, name=None):
    """``num_hash`` XXH64 hashes (seeds 0, 1, ...) of each row of an int tensor, modulo ``hash_size``:
    [rows, num_hash, 1] (op ``hash``; fluid 1.8.5's layer rejected every call, its op is reproduced)."""
    check_variable(input, "input", "hash")
    check_dtype(input.dtype, "input", ["int32", "int64"], "hash")
    if not isinstance(hash_size, int) or not isinstance(num_hash, int):
        raise TypeError(f"hash_size and num_hash must be ints. Received: {hash_size!r}, {num_hash!r}")
    out = _one("hash", {"X": [input]}, {"num_hash": num_hash, "mod_by": hash_size}, name=name)
    out.stop_gradient = True
    return out
