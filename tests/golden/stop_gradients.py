# The stop_gradient flag of each layer's output when built (lod_levels.py's layers and the creation,
# index, comparison and random layers): the flag decides which grad ops backward appends.
import json
import sys

from _layer_zoo import build

json.dump(
    {k: v.stop_gradient for k, v in build(more=True).items() if v is not None}, sys.stdout, indent=0, sort_keys=True
)
