"""``fluid.metrics``: metrics accumulated in Python over the batches' fetched values (numpy)."""

from __future__ import annotations

import copy
import warnings

import numpy as np

__all__ = [
    "MetricBase",
    "CompositeMetric",
    "Precision",
    "Recall",
    "Accuracy",
    "ChunkEvaluator",
    "EditDistance",
    "DetectionMAP",
    "Auc",
]


def _is_number_or_matrix(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating, np.ndarray))


class MetricBase:
    """A metric's state is its public attributes: ``reset`` zeroes them, ``get_config`` returns them."""

    def __init__(self, name):
        self._name = str(name) if name is not None else self.__class__.__name__

    def __str__(self) -> str:
        return self._name

    def reset(self) -> None:
        for attr, value in self.__dict__.items():
            if attr.startswith("_"):
                continue
            if isinstance(value, (int, np.integer)):
                setattr(self, attr, 0)
            elif isinstance(value, (float, np.floating)):
                setattr(self, attr, 0.0)
            elif isinstance(value, np.ndarray):
                setattr(self, attr, np.zeros_like(value))
            else:
                setattr(self, attr, None)

    def get_config(self) -> dict:
        states = {a: v for a, v in self.__dict__.items() if not a.startswith("_")}
        config = {"name": self._name}
        config.update(copy.deepcopy(states))
        return config

    def update(self, preds, labels):
        raise NotImplementedError(f"{self.__class__.__name__} must implement update")

    def eval(self):
        raise NotImplementedError(f"{self.__class__.__name__} must implement eval")


class CompositeMetric(MetricBase):
    """Several metrics updated with the same predictions and labels."""

    def __init__(self, name=None):
        super().__init__(name)
        self._metrics = []

    def add_metric(self, metric) -> None:
        if not isinstance(metric, MetricBase):
            raise ValueError("SubMetric should be inherit from MetricBase.")
        self._metrics.append(metric)

    def update(self, preds, labels):
        for m in self._metrics:
            m.update(preds, labels)

    def eval(self):
        return [m.eval() for m in self._metrics]


def _binary(preds, labels, name):
    preds, labels = np.asarray(preds), np.asarray(labels)
    if preds.shape[0] != labels.shape[0] or preds.size != labels.size:
        raise ValueError(
            f"{name}: preds and labels must hold one value per sample, as many of each (preds [N, 1] of "
            f"probabilities, labels [N, 1]). Received: preds {preds.shape}, labels {labels.shape}"
        )
    return np.rint(preds).astype("int32").reshape(-1), labels.astype("int32").reshape(-1)


class Precision(MetricBase):
    """Binary precision: true positives / predicted positives (predictions rounded)."""

    def __init__(self, name=None):
        super().__init__(name)
        self.tp = 0
        self.fp = 0

    def update(self, preds, labels):
        p, y = _binary(preds, labels, "Precision")
        self.tp += int(np.sum((p == 1) & (y == 1)))
        self.fp += int(np.sum((p == 1) & (y != 1)))

    def eval(self):
        ap = self.tp + self.fp
        return float(self.tp) / ap if ap != 0 else 0.0


class Recall(MetricBase):
    """Binary recall: true positives / actual positives (predictions rounded)."""

    def __init__(self, name=None):
        super().__init__(name)
        self.tp = 0
        self.fn = 0

    def update(self, preds, labels):
        p, y = _binary(preds, labels, "Recall")
        self.tp += int(np.sum((p == 1) & (y == 1)))
        self.fn += int(np.sum((p != 1) & (y == 1)))

    def eval(self):
        recall = self.tp + self.fn
        return float(self.tp) / recall if recall != 0 else 0.0


class Accuracy(MetricBase):
    """The weighted mean of per-batch accuracies (``layers.accuracy``'s output, batch size as weight)."""

    def __init__(self, name=None):
        super().__init__(name)
        self.value = 0.0
        self.weight = 0.0

    def update(self, value, weight):
        if not _is_number_or_matrix(value):
            raise ValueError("The 'value' must be a number(int, float) or a numpy ndarray.")
        if not _is_number_or_matrix(weight):
            raise ValueError("The 'weight' must be a number(int, float) or a numpy ndarray.")
        if isinstance(weight, np.ndarray):  # compat: per-sample weights
            value, weight = np.sum(np.asarray(value) * weight), float(np.sum(weight))
        elif weight < 0:
            raise ValueError("The 'weight' can not be negative")
        # as fluid: an ndarray value keeps its dtype and shape (eval gives array([0.75], dtype=float32))
        self.value = self.value + value * weight
        self.weight += weight

    def eval(self):
        if self.weight == 0:
            raise ValueError(
                "There is no data in Accuracy Metrics. Please check layers.accuracy output has added to Accuracy."
            )
        return _as_number_array(self.value / self.weight)


def _count(value, arg: str):
    """A count as given (a number, or an array such as a fetched [1] one), checked to be one."""
    a = np.asarray(value)
    if a.dtype.kind not in "iuf":
        raise ValueError(f"The '{arg}' must be a number(int) or a numpy ndarray. Received: {value!r}")
    return a if a.ndim else a.item()


def _plain(value):
    """A 0-d result as a Python float; arrays (from [1] counts) as they are (see _as_number_array)."""
    return float(value) if np.ndim(value) == 0 else _as_number_array(value)


def _as_number_array(value):
    """A metric's array result (shape [1] where fluid gave one) that converts to a Python number with
    ``float()`` / ``int()`` / ``'%f' %``, as numpy arrays of one element did before numpy 2.4 (fluid-era
    scripts print metrics that way); like a fetched value (executor.FetchedArray)."""
    if type(value) is not np.ndarray:
        return value
    from fluidcompat.executor.executor import fetched

    return fetched(value)


class ChunkEvaluator(MetricBase):
    """Precision, recall and F1 of chunks from ``chunk_eval``'s counts."""

    def __init__(self, name=None):
        super().__init__(name)
        self.num_infer_chunks = 0
        self.num_label_chunks = 0
        self.num_correct_chunks = 0

    def update(self, num_infer_chunks, num_label_chunks, num_correct_chunks):
        # summed as given, as fluid 1.8: counts fetched as [1] arrays give [1] arrays from eval()
        self.num_infer_chunks = self.num_infer_chunks + _count(num_infer_chunks, "num_infer_chunks")
        self.num_label_chunks = self.num_label_chunks + _count(num_label_chunks, "num_label_chunks")
        self.num_correct_chunks = self.num_correct_chunks + _count(num_correct_chunks, "num_correct_chunks")

    def eval(self):
        correct = np.asarray(self.num_correct_chunks, "float64")
        precision = correct / self.num_infer_chunks if np.any(self.num_infer_chunks) else 0.0
        recall = correct / self.num_label_chunks if np.any(self.num_label_chunks) else 0.0
        f1 = 2 * precision * recall / (precision + recall) if np.any(self.num_correct_chunks) else 0.0
        return _plain(precision), _plain(recall), _plain(f1)


class EditDistance(MetricBase):
    """Average edit distance and the fraction of sequences with any error."""

    def __init__(self, name):
        super().__init__(name)
        self.total_distance = 0.0
        self.seq_num = 0
        self.instance_error = 0

    def update(self, distances, seq_num):
        distances = np.asarray(distances)
        self.total_distance += float(np.sum(distances))
        self.seq_num = self.seq_num + _count(seq_num, "seq_num")  # a [1] array stays one, as fluid's
        self.instance_error += int(np.sum(distances != 0))

    def eval(self):
        if not np.any(self.seq_num):
            raise ValueError(
                "There is no data in EditDistance Metric. Please check layers.edit_distance output has "
                "been added to EditDistance."
            )
        return _plain(self.total_distance / self.seq_num), _plain(self.instance_error / self.seq_num)


class Auc(MetricBase):
    """Area under the ROC curve from per-threshold positive/negative counts (``preds``: [N, 2]
    probabilities, column 1 the positive class)."""

    def __init__(self, name, curve="ROC", num_thresholds=4095):
        super().__init__(name=name)
        if curve != "ROC":
            warnings.warn(
                f"Auc(curve={curve!r}) computes the area under the ROC curve: fluid 1.8's Auc did so for every curve",
                stacklevel=2,
            )
        self._curve = curve
        self._num_thresholds = num_thresholds
        self._stat_pos = [0] * (num_thresholds + 1)
        self._stat_neg = [0] * (num_thresholds + 1)

    def update(self, preds, labels):
        preds, labels = np.asarray(preds), np.asarray(labels).reshape(-1)
        for i, label in enumerate(labels):
            bucket = int(preds[i, 1] * self._num_thresholds)
            if not 0 <= bucket <= self._num_thresholds:
                raise ValueError(f"Auc: predictions must lie in [0, 1]. Received: {preds[i, 1]}")
            if label:
                self._stat_pos[bucket] += 1
            else:
                self._stat_neg[bucket] += 1

    def reset(self) -> None:
        self._stat_pos = [0] * (self._num_thresholds + 1)
        self._stat_neg = [0] * (self._num_thresholds + 1)

    @staticmethod
    def trapezoid_area(x1, x2, y1, y2):
        return abs(x1 - x2) * (y1 + y2) / 2.0

    def eval(self):
        tot_pos = tot_neg = 0.0
        auc = 0.0
        for idx in range(self._num_thresholds, -1, -1):
            tot_pos_prev, tot_neg_prev = tot_pos, tot_neg
            tot_pos += self._stat_pos[idx]
            tot_neg += self._stat_neg[idx]
            auc += self.trapezoid_area(tot_neg, tot_neg_prev, tot_pos, tot_pos_prev)
        return auc / tot_pos / tot_neg if tot_pos > 0.0 and tot_neg > 0.0 else 0.0


class DetectionMAP:
    """Mean average precision of a detection program, computed by ops in it: ``get_map_var()``
    gives (the mAP of the batch, the mAP of all batches since the last ``reset``). ``input``: the
    detections (LoD rows [label, score, box], e.g. from ``detection_output``); ``gt_label``,
    ``gt_box`` and optional ``gt_difficult``: the ground truth of each image (LoD)."""

    def __init__(
        self,
        input,
        gt_label,
        gt_box,
        gt_difficult=None,
        class_num=None,
        background_label=0,
        overlap_threshold=0.5,
        evaluate_difficult=True,
        ap_version="integral",
    ):
        from fluidcompat import layers, unique_name
        from fluidcompat.layer_helper import LayerHelper

        helper = LayerHelper("map_eval")
        gt_label = layers.cast(gt_label, gt_box.dtype)
        parts = [gt_label, layers.cast(gt_difficult, gt_box.dtype), gt_box] if gt_difficult else [gt_label, gt_box]
        label = layers.concat(parts, axis=1)
        kw = dict(
            class_num=class_num,
            background_label=background_label,
            overlap_threshold=overlap_threshold,
            evaluate_difficult=evaluate_difficult,
            ap_version=ap_version,
        )
        self.cur_map = layers.detection.detection_map(input, label, **kw)

        def state_name(suffix):
            return "_".join([unique_name.generate(helper.name), suffix])

        def state(suffix, dtype):
            return helper.create_global_variable(name=state_name(suffix), persistable=True, dtype=dtype)

        states = [
            state("accum_pos_count", "int32"),
            state("accum_true_pos", "float32"),
            state("accum_false_pos", "float32"),
        ]
        self.has_state = layers.create_global_var([1], 0, "int32", persistable=True, name=state_name("has_state"))
        self.accum_map = layers.detection.detection_map(
            input, label, has_state=self.has_state, input_states=states, out_states=states, **kw
        )
        layers.fill_constant(shape=[1], value=1, dtype="int32", out=self.has_state)

    def get_map_var(self):
        """(mAP of the current batch, mAP accumulated since the last reset)."""
        return self.cur_map, self.accum_map

    def reset(self, executor, reset_program=None):
        """Start accumulating afresh: runs ``reset_program`` (a new one if None) setting the state flag to 0."""
        zero_states(executor, reset_program, [self.has_state])


def state_in(block, var):
    """``var`` (a persistable state of the main program) declared in ``block`` of another program."""
    return block.create_var(
        name=var.name, shape=var.shape, dtype=var.dtype, type=var.type, lod_level=var.lod_level, persistable=True
    )


def zero_states(executor, reset_program, states) -> None:
    """Run ``reset_program`` (a new program when None) after adding to it ops setting ``states`` to 0."""
    from fluidcompat import framework, layers

    if reset_program is None:
        reset_program = framework.Program()
    with framework.program_guard(main_program=reset_program):
        for var in states:
            state = state_in(reset_program.current_block(), var)
            layers.fill_constant(shape=state.shape, value=0, dtype=state.dtype, out=state)
    executor.run(reset_program)


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.metrics")(name)
