"""A directory for the ``PYTHONPATH`` of the commands a dataset pipes its files through: its
``sitecustomize`` makes ``import paddle`` give fluidcompat there too (a data generator script
imports ``paddle.fluid.incubate.data_generator``)."""

import os

DIR = os.path.dirname(os.path.abspath(__file__))
