"""The ops of fluid 1.8's PSLib fleet (``fluid.incubate.fleet.parameter_server.pslib``):
``pull_sparse`` and ``pull_sparse_v2`` look embeddings up in PSLib's tables. Programs holding them
build (their outputs' shapes as fluid's); they have no kernel, so running one is refused, naming
PSLib (Baidu's C++ parameter server), which is not part of fluidcompat."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat_ops.registry import OpDef, register

_ATTRS = {
    "EmbeddingDim": 11,
    "TableId": 0,
    "AccessorClass": "",
    "CtrLabelName": "",
    "PaddingId": 0,
    "ScaleSparseGrad": True,
    "InputNames": [],
    "is_distributed": False,
}


def _infer(v2: bool):
    def infer(ins, attrs):
        outs = []
        for ids in ins.get("Ids") or ():
            if ids.dtype not in (VarType.INT64, VarType.INT32):
                raise TypeError(f"pull_sparse: Ids must be int64 or int32. Received: {ids.name} is {ids.dtype}")
            lead = tuple(ids.shape) if v2 else tuple(ids.shape[:-1])
            outs.append((lead + (int(attrs["EmbeddingDim"]),), VarType.FP32))
        return {"Out": outs}

    return infer


for _type, _v2 in (("pull_sparse", False), ("pull_sparse_v2", True)):
    register(
        OpDef(
            _type,
            ("Ids", "W"),
            ("Out",),
            dict(_ATTRS),
            _infer(_v2),
            None,  # no kernel: the table is PSLib's
            doc=(
                "Out = the embeddings of Ids in a table of PSLib, Baidu's C++ parameter server, which fluidcompat "
                "does not have: build the embedding with fluid.layers.embedding(is_sparse=True) outside "
                "fleet_embedding and train with the parameter-server fleet of "
                "fluid.incubate.fleet.parameter_server.distribute_transpiler"
            ),
        )
    )
