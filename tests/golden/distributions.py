"""fluid.layers.distributions as fluid 1.8.5 computed them: Uniform, Normal, Categorical and
MultivariateNormalDiag from floats, lists, numpy arrays and Variables: entropy, log_prob,
kl_divergence, the shapes of samples, and the errors for mixed or mistyped arguments. Prints JSON; run
under fluid 1.8.5 (tools/fluid18) it wrote distributions.json."""

import json

import numpy as np
import paddle.fluid as fluid
from _golden import errors_of

L = fluid.layers
results = {}
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    value = fluid.data("value", [2], "float32")
    vb = fluid.data("vb", [None, 2], "float32")
    lo = fluid.data("lo", [None, 2], "float32")
    hi = fluid.data("hi", [None, 2], "float32")
    u = L.Uniform([1.0, 2.0], np.array([3.0, 2.5], "float32"))
    uf = L.Uniform(0.5, 4.0)
    uv = L.Uniform(lo, hi)
    n = L.Normal(np.array([0.5, -1.0], "float32"), np.array([2.0, 0.3], "float32"))
    n2 = L.Normal([0.0, 0.0], [1.0, 1.5])
    nf = L.Normal(1.0, 2.0)
    nv = L.Normal(lo, hi)
    c = L.Categorical(np.array([[0.1, 0.5, -0.2], [2.0, 0.0, 1.0]], "float32"))
    c2 = L.Categorical(np.array([[0.3, 0.3, 0.3], [-1.0, 0.5, 0.2]], "float32"))
    m = L.MultivariateNormalDiag(np.array([0.3, 0.8], "float32"), np.array([[2.0, 0.0], [0.0, 0.5]], "float32"))
    m2 = L.MultivariateNormalDiag(np.array([0.0, 1.0], "float32"), np.array([[1.0, 0.0], [0.0, 3.0]], "float32"))
    fetch = [
        u.entropy(),
        u.log_prob(value),
        uf.entropy(),
        uv.entropy(),
        uv.log_prob(vb),
        n.entropy(),
        n.log_prob(value),
        n.kl_divergence(n2),
        nf.entropy(),
        nf.log_prob(value),
        nv.entropy(),
        nv.log_prob(vb),
        nv.kl_divergence(n),
        c.entropy(),
        c.kl_divergence(c2),
        m.entropy(),
        m.kl_divergence(m2),
    ]
    samples = [u.sample([3]), uf.sample([4, 2]), uv.sample([3]), n.sample([5]), nf.sample([6]), nv.sample([2])]
feed = {
    "value": np.array([1.5, 2.7], "float32"),
    "vb": np.array([[0.5, 5.0], [2.2, 3.1], [-0.5, 0.6]], "float32"),
    "lo": np.array([[0.0, 1.0], [2.0, 3.0], [-1.0, 0.5]], "float32"),
    "hi": np.array([[1.0, 4.0], [2.5, 3.5], [0.0, 0.7]], "float32"),
}
exe = fluid.Executor(fluid.CPUPlace())
got = exe.run(main, feed=feed, fetch_list=fetch + samples)
results["values"] = [
    [list(np.shape(g))] + np.round(np.array(g, "float64").ravel(), 5).tolist() for g in got[: len(fetch)]
]
results["declared"] = [list(v.shape) for v in fetch + samples]
results["sample_shapes"] = [list(np.shape(g)) for g in got[len(fetch) :]]


def guarded(build):
    """``build`` in programs of its own."""

    def call():
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            build()

    return call


results["errors"] = errors_of(
    guarded(build)
    for build in (
        lambda: L.Uniform(lo, 1.0),
        lambda: L.Uniform(1, 2),
        lambda: L.Normal(0.0, "x"),
        lambda: L.Categorical(1.0),
        lambda: L.MultivariateNormalDiag(1.0, 2.0),
        lambda: n.kl_divergence(u),
        lambda: L.Uniform(0.0, 1.0).sample((2,)),
    )
)
print(json.dumps(results, sort_keys=True))
