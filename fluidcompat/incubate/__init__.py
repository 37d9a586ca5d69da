"""``fluid.incubate``: fleet, fluid 1.8's API for distributed training."""
