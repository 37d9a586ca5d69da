"""``fluid.incubate.fleet.utils``: FleetUtil (fleet_util.py), the program tools (utils.py), the
trainers' barrier through files (fleet_barrier_util.py) and an HDFS client (hdfs.py)."""
