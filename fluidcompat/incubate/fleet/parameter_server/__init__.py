"""``fluid.incubate.fleet.parameter_server``: the parameter-server fleet (``distribute_transpiler``)."""
