"""``fluid.incubate``: fleet, fluid 1.8's API for distributed training."""


def __getattr__(name):  # fluid.incubate.fleet / .data_generator without importing them first
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.incubate")(name)
