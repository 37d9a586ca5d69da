"""Commands started as from a terminal. A background job of a non-interactive shell (as CI may be)
ignores SIGINT, and a process started from it keeps SIGINT ignored. ``as_from_a_terminal(cmd)``
puts SIGINT back to its default and execs ``cmd`` (the same process) from a small Python trampoline,
rather than from a ``preexec_fn``: that makes subprocess fork the test process and run Python in the
child before exec, where threads a library started at fork (gRPC's poller, in a worker that ran a
parameter server) meet the descriptors subprocess closed, and abort the child."""

import sys

_TRAMPOLINE = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])"
)


def as_from_a_terminal(cmd):
    return [sys.executable, "-c", _TRAMPOLINE, *[str(c) for c in cmd]]
