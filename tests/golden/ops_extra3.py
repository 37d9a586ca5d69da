# Golden script: similarity_focus, continuous_value_model (with and without cvm), center_loss, chunk_eval (IOB,
# padded with seq_length), roi_pool and roi_align (rois_lod) as fluid 1.8.5 computed them; prints a JSON dict.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

rng = np.random.RandomState(7)
out = {}


def fetch(names_vars, return_numpy=True):
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    res = exe.run(fetch_list=[v for _, v in names_vars], return_numpy=False)
    for (n, _), r in zip(names_vars, res):
        a = np.array(r)
        out[n] = [str(a.dtype), np.round(a.astype("float64"), 5).tolist(), r.recursive_sequence_lengths()]


# hash
ids = L.assign(np.array([[1, 2], [3, 4], [1, 2]], "int64"))

# similarity_focus
sf_in = L.assign(rng.uniform(0, 1, (2, 3, 2, 2)).astype("float32"))
sf = L.similarity_focus(sf_in, axis=1, indexes=[0])
# data_norm
dn_in = L.assign(rng.uniform(-1, 1, (3, 4)).astype("float32"))

# cvm
cvm_in = L.assign(np.abs(rng.uniform(0, 3, (3, 5))).astype("float32"))
cvm_c = L.assign(np.ones((3, 2), "float32"))
cv1 = L.continuous_value_model(cvm_in, cvm_c, use_cvm=True)
cv0 = L.continuous_value_model(cvm_in, cvm_c, use_cvm=False)
# center_loss
cl_in = L.assign(rng.uniform(-1, 1, (4, 3)).astype("float32"))
cl_lab = L.assign(np.array([[0], [2], [0], [1]], "int64"))
cl = L.center_loss(
    cl_in,
    cl_lab,
    num_classes=3,
    alpha=0.5,
    param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)),
    update_center=True,
)
# chunk_eval IOB, padded with seq_length
inf = L.assign(np.array([[0, 1, 4, 2, 3, 4], [2, 3, 0, 1, 1, 4]], "int64"))
lab = L.assign(np.array([[0, 1, 4, 2, 4, 4], [2, 3, 0, 1, 4, 4]], "int64"))
slen = L.assign(np.array([6, 5], "int64"))
ce = L.chunk_eval(inf, lab, chunk_scheme="IOB", num_chunk_types=2, seq_length=slen)
# roi_pool / roi_align with rois_lod
feat = L.assign(rng.uniform(-1, 1, (2, 2, 6, 6)).astype("float32"))
rois = L.assign(np.array([[0, 0, 3, 3], [1, 1, 5, 4], [0.5, 2, 5.5, 5.5]], "float32"))
rois_lod = L.assign(np.array([0, 2, 3], "int64"))
rp = L.roi_pool(feat, rois, pooled_height=2, pooled_width=2, spatial_scale=1.0, rois_lod=rois_lod)
ra = L.roi_align(feat, rois, pooled_height=2, pooled_width=2, spatial_scale=1.0, sampling_ratio=2, rois_lod=rois_lod)
fetch(
    [("sf", sf), ("cv1", cv1), ("cv0", cv0), ("cl", cl)]
    + [("ce%d" % i, v) for i, v in enumerate(ce)]
    + [("rp", rp), ("ra", ra)]
)
print(json.dumps(out))
