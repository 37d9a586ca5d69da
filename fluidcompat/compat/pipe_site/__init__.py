"""A directory for the ``PYTHONPATH`` of the commands a dataset pipes its files through and of the
Python processes a script run by ``fluidcompat run`` starts: its ``sitecustomize`` makes ``import
paddle`` give fluidcompat there too (a data generator script imports
``paddle.fluid.incubate.data_generator``; a distributed test starts its servers with
``sys.executable``)."""

import os

DIR = os.path.dirname(os.path.abspath(__file__))
