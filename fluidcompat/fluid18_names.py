"""fluid 1.8.5's public names per module, read from ``fluid18_api.json`` (beside this file).

A floor-1 module (it imports nothing of fluidcompat): ``fluidcompat.layers`` reads it while the
package is imported, and ``fluidcompat.coverage`` (the report, ``python -m fluidcompat.coverage``)
builds on it. Imported by the package, the report module itself is not, so running it with ``-m``
gets no runpy warning about a module found in ``sys.modules`` before it ran.
"""

from __future__ import annotations

import json
import os
from typing import Dict, List

NAMES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fluid18_api.json")

_names_cache: Dict[str, List[str]] = {}


def fluid_names() -> Dict[str, List[str]]:
    """fluid 1.8.5's public names per module."""
    if not _names_cache:
        with open(NAMES_FILE) as f:
            _names_cache.update(json.load(f))
    return _names_cache
