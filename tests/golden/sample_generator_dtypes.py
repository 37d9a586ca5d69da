# Golden script: DataLoader / PyReader sample and sample-list generators in static mode convert each
# field as fluid's DataFeeder did: float64 images to the variable's float32, int labels to int64,
# a scalar label to the variable's [batch, 1], each field a LoDTensor. Prints a JSON report.
import json

import numpy as np
import paddle.fluid as fluid

image = fluid.data(name="image", shape=[None, 2, 3], dtype="float32")
label = fluid.data(name="label", shape=[None, 1], dtype="int64")


def samples():
    rng = np.random.RandomState(0)
    for i in range(6):
        yield rng.uniform(0, 1, [2, 3]), i % 3


def sample_lists():
    batch = []
    for s in samples():
        batch.append(s)
        if len(batch) == 3:
            yield batch
            batch = []


def describe(data):
    feed = data[0]
    return {
        name: [type(v).__name__, str(np.array(v).dtype), list(np.array(v).shape), np.array(v).ravel()[:4].tolist()]
        for name, v in sorted(feed.items())
    }


report = {}
for api in ("DataLoader", "PyReader"):
    for kind in ("sample", "sample_list"):
        if api == "DataLoader":
            loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=4, iterable=True)
        else:
            loader = fluid.io.PyReader(feed_list=[image, label], capacity=4, iterable=True)
        prefix = "set" if api == "DataLoader" else "decorate"
        if kind == "sample":
            getattr(loader, prefix + "_sample_generator")(samples, batch_size=3, places=[fluid.CPUPlace()])
        else:
            getattr(loader, prefix + "_sample_list_generator")(sample_lists, places=[fluid.CPUPlace()])
        report[f"{api} {kind}"] = [describe(d) for d in loader()]
print(json.dumps(report))
