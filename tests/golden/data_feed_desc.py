"""fluid.DataFeedDesc as fluid 1.8.5 had it: a data feed description read from its protobuf text file,
set_batch_size / set_dense_slots / set_use_slots, and desc()'s text. Prints the texts; run under fluid
1.8.5 (tools/fluid18) it wrote data_feed_desc.txt."""

import os
import tempfile

import paddle.fluid as fluid

folder = tempfile.mkdtemp()
path = os.path.join(folder, "data.proto")
with open(path, "w") as f:
    f.write(
        'name: "MultiSlotDataFeed"\n'
        "batch_size: 2\n"
        "multi_slot_desc {\n"
        '    slots {\n        name: "words"\n        type: "uint64"\n'
        "        is_dense: false\n        is_used: true\n    }\n"
        '    slots {\n        name: "label"\n        type: "uint64"\n'
        "        is_dense: false\n        is_used: false\n    }\n"
        '    slots { name: "dense" type: "float" shape: 3 shape: 1 }\n'
        "}\n"
    )
desc = fluid.DataFeedDesc(path)
print(desc.desc())
desc.set_batch_size(128)
desc.set_dense_slots(["dense"])
desc.set_use_slots(["label", "dense"])
print(desc.desc())
with open(path, "w") as f:
    f.write('name: "OtherFeed"\nthread_num: 4\n')  # (fluid 1.8.5 failed to read a file with pipe_command)
other = fluid.DataFeedDesc(path)
print(other.desc())
try:
    other.set_use_slots(["words"])
except ValueError as e:
    print("ValueError:", e)
