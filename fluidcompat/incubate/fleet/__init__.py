"""``fluid.incubate.fleet``: ``fleet.collective`` (data parallel over launched workers) and
``fleet.base.role_maker`` (who this process is in the job)."""
