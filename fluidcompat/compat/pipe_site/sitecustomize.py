# Imported by Python at start-up in a dataset's pipe command (fluidcompat.compat.pipe_site).
try:
    from fluidcompat.compat import install

    install()
except ImportError:  # fluidcompat not importable here: leave the interpreter as it is
    pass
