"""``fluid.layers.metric_op``: the module fluid 1.8 defined ``accuracy`` and ``auc`` in (they live in
``layers.metrics`` here; ``layers/__init__`` puts them in this module's namespace)."""

__all__: list = []  # accuracy and auc, set by layers/__init__
