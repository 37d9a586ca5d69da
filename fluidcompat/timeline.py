"""``python -m fluidcompat.timeline``: see ``fluidcompat.profiler.timeline``."""

import sys

from fluidcompat.profiler.timeline import chrome_trace, main

__all__ = ["chrome_trace", "main"]

if __name__ == "__main__":
    sys.exit(main())
