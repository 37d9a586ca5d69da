# The lod_level each layer's output gets when built, from sequence (lod_level 1 and 2) inputs.
import json
import sys

from _layer_zoo import build

json.dump({k: v.lod_level for k, v in build().items() if v is not None}, sys.stdout, indent=0, sort_keys=True)
