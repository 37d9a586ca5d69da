"""``paddle.fluid.proto.profiler``: holds ``profiler_pb2``, fluid 1.8's ``profiler.proto`` messages."""
