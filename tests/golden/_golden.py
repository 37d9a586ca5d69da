# Shared by golden scripts (run under fluid 1.8.5 and under fluidcompat alike).
import numpy as np
import paddle.fluid as fluid


def errors_of(calls):
    """Per callable: None if it ran, else [exception type name, message]."""
    found = []
    for call in calls:
        try:
            call()
            found.append(None)
        except Exception as e:
            found.append([type(e).__name__, str(e)])
    return found


def attempt(fn):
    """What ``fn()`` returns, or ["error", its exception's type name]."""
    try:
        return fn()
    except Exception as e:
        return ["error", type(e).__name__]


def set_params(program, scope):
    """Every parameter of ``program`` set from numpy (seeded by its rank in name order), so that both
    runs start alike."""
    for k, p in enumerate(sorted(p.name for p in program.global_block().all_parameters())):
        shape = np.array(scope.find_var(p).get_tensor()).shape
        value = np.random.RandomState(k).uniform(-0.5, 0.5, shape).astype("float32")
        scope.find_var(p).get_tensor().set(value, fluid.CPUPlace())


def flat(value):
    """[LoD, shape, values rounded to 5 places] of a fetched LoDTensor (or array: no LoD)."""
    lod = value.lod() if hasattr(value, "lod") else []
    a = np.array(value)
    return [lod, list(a.shape)] + np.round(a.reshape(-1).astype("float64"), 5).tolist()
