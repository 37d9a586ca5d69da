from fluidcompat.incubate.fleet.base.fleet_base import Mode  # noqa: F401
