"""``fleet.utils.fleet_util.FleetUtil``: helpers of a fleet job, over the PSLib fleet (``mode="pslib"``,
the default) or the parameter-server fleet (``"transpiler"``): logs of worker 0, the job's AUC and
CTR metrics summed over the workers (the role maker's all-reduce; one worker needs none), the
online-training pass intervals, and the program tools of utils.py. What saves or loads PSLib's
tables raises as the PSLib fleet does (PSLib is not part of fluidcompat); the donefile and xbox
tools of PSLib's production pipeline are not supported."""

from __future__ import annotations

import logging
import math
import os
import re
import sys

import numpy as np

from fluidcompat.incubate.fleet.utils import utils

__all__ = ["FleetUtil"]

_logger = logging.getLogger(__name__)
_MODES = ("pslib", "transpiler")


def _expand(spec: str) -> list:
    """A shell word list with brace ranges expanded: ``"{20190720..20190722}"`` -> three days,
    ``"{0..23}"`` -> 24 hours (numbers keep the first bound's width)."""
    words = []
    for word in str(spec).split():
        m = re.fullmatch(r"(.*)\{(\d+)\.\.(\d+)\}(.*)", word)
        if m is None:
            words.append(word)
            continue
        head, lo, hi, tail = m.groups()
        width = len(lo) if lo.startswith("0") else 0
        step = 1 if int(hi) >= int(lo) else -1
        words += [f"{head}{str(n).zfill(width)}{tail}" for n in range(int(lo), int(hi) + step, step)]
    return words


class FleetUtil:
    """``FleetUtil(mode="pslib" | "transpiler")``: the fleet its helpers work with."""

    def __init__(self, mode="pslib") -> None:
        if mode not in _MODES:
            raise ValueError(f'Please choose one mode from ["pslib", "transpiler"]. Received: {mode!r}')
        self._mode = mode

    @property
    def _fleet(self):
        if self._mode == "pslib":
            from fluidcompat.incubate.fleet.parameter_server.pslib import fleet
        else:
            from fluidcompat.incubate.fleet.parameter_server.distribute_transpiler import fleet
        return fleet

    # -- logs of worker 0 ---------------------------------------------------------------------------
    def rank0_print(self, s) -> None:
        if self._fleet.worker_index() != 0:
            return
        print(s)
        sys.stdout.flush()

    def rank0_info(self, s) -> None:
        if self._fleet.worker_index() == 0:
            _logger.info(s)

    def rank0_error(self, s) -> None:
        if self._fleet.worker_index() == 0:
            _logger.error(s)

    # -- metrics --------------------------------------------------------------------------------------
    def set_zero(self, var_name, scope=None, place=None, param_type="int64") -> None:
        """The tensor of ``var_name`` in ``scope`` (default: the global scope) set to zeros."""
        import fluidcompat as fluid

        scope = fluid.global_scope() if scope is None else scope
        place = fluid.CPUPlace() if place is None else place
        tensor = scope.var(var_name).get_tensor()
        tensor.set(np.zeros(tensor._get_dims()).astype(param_type), place)

    def _barrier_worker(self) -> None:
        role = self._fleet._role_maker
        if role is not None and hasattr(role, "_barrier_worker") and self._fleet.worker_num() > 1:
            role._barrier_worker()

    def _all_reduce(self, value: np.ndarray) -> np.ndarray:
        """``value`` summed over the workers (the role maker's ``_all_reduce``)."""
        shape, flat = value.shape, value.reshape(-1)
        if self._fleet.worker_num() <= 1:
            return flat.copy().reshape(shape)
        role = self._fleet._role_maker
        if not hasattr(role, "_all_reduce"):
            raise RuntimeError(
                f"FleetUtil: summing over {self._fleet.worker_num()} workers needs a role maker with collectives "
                f"(GeneralRoleMaker or MPISymetricRoleMaker). Received: {type(role).__name__}"
            )
        out = flat * 0
        role._all_reduce(flat, out)
        return np.asarray(out).reshape(shape)

    def _global(self, scope, name) -> np.ndarray:
        return self._all_reduce(np.array(scope.find_var(name).get_tensor()))

    def print_global_auc(self, scope=None, stat_pos="_generated_var_2", stat_neg="_generated_var_3", print_prefix=""):
        auc = self.get_global_auc(scope, stat_pos, stat_neg)
        self.rank0_print(f"{print_prefix} global auc = {auc}")

    def get_global_auc(self, scope=None, stat_pos="_generated_var_2", stat_neg="_generated_var_3"):
        """The AUC of the workers' summed positive and negative buckets (fluid.layers.auc's stat
        variables); None when they are not in the scope."""
        import fluidcompat as fluid

        scope = fluid.global_scope() if scope is None else scope
        if scope.find_var(stat_pos) is None or scope.find_var(stat_neg) is None:
            self.rank0_print("not found auc bucket")
            return None
        self._barrier_worker()
        pos_b, neg_b = self._global(scope, stat_pos)[0], self._global(scope, stat_neg)[0]
        area = pos = neg = 0.0
        total = 0
        for p, n in zip(pos_b[::-1], neg_b[::-1]):  # from the highest threshold down
            total += p + n
            area += n * (2 * pos + p) / 2
            pos, neg = pos + p, neg + n
        self._barrier_worker()
        return 0.5 if pos * neg == 0 or total == 0 else area / (pos * neg)

    def get_global_metrics(self, scope=None, stat_pos_name="_generated_var_2", stat_neg_name="_generated_var_3",
                           sqrerr_name="sqrerr", abserr_name="abserr", prob_name="prob", q_name="q",
                           pos_ins_num_name="pos", total_ins_num_name="total"):  # fmt: skip
        """[auc, bucket_error, mae, rmse, actual_ctr, predicted_ctr, copc, mean_predict_qvalue,
        total_ins_num] of the workers together (the variables of fluid.layers.auc and
        fluid.contrib.layers.ctr_metric_bundle); nine None when one is not in the scope."""
        import fluidcompat as fluid

        scope = fluid.global_scope() if scope is None else scope
        for what, name in (("auc bucket", stat_pos_name), ("auc bucket", stat_neg_name),
                           ("sqrerr_name", sqrerr_name), ("abserr_name", abserr_name), ("prob_name", prob_name),
                           ("q_name", q_name), ("pos_ins_num_name", pos_ins_num_name),
                           ("total_ins_num_name", total_ins_num_name)):  # fmt: skip
            if scope.find_var(name) is None:
                self.rank0_print("not found auc bucket" if what == "auc bucket" else f"not found {what}={name}")
                return [None] * 9
        self._barrier_worker()
        auc = self.get_global_auc(scope, stat_pos_name, stat_neg_name)
        pos_b, neg_b = self._global(scope, stat_pos_name)[0], self._global(scope, stat_neg_name)[0]
        sqrerr, abserr, prob, q, pos_ins, total = (
            float(self._global(scope, n).reshape(-1)[0])
            for n in (sqrerr_name, abserr_name, prob_name, q_name, pos_ins_num_name, total_ins_num_name)
        )
        actual_ctr, predicted_ctr = pos_ins / total, prob / total
        copc = actual_ctr / predicted_ctr if abs(predicted_ctr) > 1e-6 else 0.0
        return [auc, self._bucket_error(pos_b, neg_b), abserr / total, math.sqrt(sqrerr / total), actual_ctr,
                predicted_ctr, copc, q / total, int(total)]  # fmt: skip

    @staticmethod
    def _bucket_error(pos_b, neg_b, max_span=0.01, bound=0.05) -> float:
        """The impression-weighted relative error of the predicted CTR over groups of neighbouring
        buckets, each group closed once its estimate is within ``bound``."""
        last, shows, ctrs, clicks = -1.0, 0.0, 0.0, 0.0
        error_sum = error_count = 0.0
        n = len(pos_b)
        for i in range(n):
            ctr = float(i) / n
            if abs(ctr - last) > max_span:
                last, shows, ctrs, clicks = ctr, 0.0, 0.0, 0.0
            show = pos_b[i] + neg_b[i]
            shows += show
            ctrs += ctr * show
            clicks += pos_b[i]
            if shows == 0:
                continue
            adjust = ctrs / shows
            if adjust == 0:
                continue
            if math.sqrt((1 - adjust) / (adjust * shows)) < bound:
                error_sum += abs(clicks / shows / adjust - 1) * shows
                error_count += shows
                last = -1
        return error_sum / error_count if error_count > 0 else 0.0

    def print_global_metrics(self, scope=None, stat_pos_name="_generated_var_2", stat_neg_name="_generated_var_3",
                             sqrerr_name="sqrerr", abserr_name="abserr", prob_name="prob", q_name="q",
                             pos_ins_num_name="pos", total_ins_num_name="total", print_prefix=""):  # fmt: skip
        metrics = self.get_global_metrics(scope, stat_pos_name, stat_neg_name, sqrerr_name, abserr_name, prob_name,
                                          q_name, pos_ins_num_name, total_ins_num_name)  # fmt: skip
        if metrics[0] is None:
            return
        auc, bucket_error, mae, rmse, actual_ctr, predicted_ctr, copc, mean_q, total = metrics
        self.rank0_print(
            f"{print_prefix} global AUC={auc:.6f} BUCKET_ERROR={bucket_error:.6f} MAE={mae:.6f} RMSE={rmse:.6f} "
            f"Actural_CTR={actual_ctr:.6f} Predicted_CTR={predicted_ctr:.6f} COPC={copc:.6f} "
            f"MEAN Q_VALUE={mean_q:.6f} Ins number={total}"
        )

    def get_online_pass_interval(self, days, hours, split_interval, split_per_pass, is_data_hourly_placed):
        """The passes of a training day: each a list of ``split_per_pass`` data splits ("HHMM", or "HH"
        when ``is_data_hourly_placed``) every ``split_interval`` minutes within ``hours`` (a shell
        range such as "{0..23}"; ``days`` is read the same way)."""
        hours = _expand(hours)
        split_interval, split_per_pass = int(split_interval), int(split_per_pass)
        if split_interval <= 0 or split_per_pass <= 0:
            raise ValueError(
                f"split_interval and split_per_pass must be > 0. Received: {split_interval}, {split_per_pass}"
            )
        first, last = int(hours[0]), int(hours[-1])
        splits = []
        for start in range(0, 24 * 60, split_interval):
            h, m = divmod(start, 60)
            if first <= h <= last:
                splits.append(f"{h:02d}" if is_data_hourly_placed else f"{h:02d}{m:02d}")
        passes = (24 * 60 // split_interval) // split_per_pass
        return [splits[i * split_per_pass : (i + 1) * split_per_pass] for i in range(passes)
                if len(splits) >= (i + 1) * split_per_pass]  # fmt: skip

    # -- PSLib's model (the fleet's own methods) ----------------------------------------------------
    def load_fleet_model_one_table(self, table_id, path):
        self._fleet.load_one_table(table_id, path)

    def load_fleet_model(self, path, mode=0):
        self._fleet.init_server(path, mode=mode)

    def save_fleet_model(self, path, mode=0):
        self._fleet.save_persistables(None, path, mode=mode)

    def _pslib_only(self, what: str):
        from fluidcompat.incubate.fleet.parameter_server.pslib.optimizer_factory import unavailable

        raise unavailable(f"FleetUtil.{what}")

    def load_model(self, output_path, day, pass_id):
        self._pslib_only("load_model")

    def save_model(self, output_path, day, pass_id):
        self._pslib_only("save_model")

    def save_batch_model(self, output_path, day):
        self._pslib_only("save_batch_model")

    def save_delta_model(self, output_path, day, pass_id):
        self._pslib_only("save_delta_model")

    def save_xbox_base_model(self, output_path, day):
        self._pslib_only("save_xbox_base_model")

    def save_cache_model(self, output_path, day, pass_id, mode=1, **kwargs):
        self._pslib_only("save_cache_model")

    def save_cache_base_model(self, output_path, day, **kwargs):
        self._pslib_only("save_cache_base_model")

    def pull_all_dense_params(self, scope, program):
        self._pslib_only("pull_all_dense_params")

    def save_paddle_inference_model(self, executor, scope, program, feeded_vars, target_vars, output_path, day,
                                    pass_id, hadoop_fs_name, hadoop_fs_ugi, hadoop_home="$HADOOP_HOME",
                                    save_combine=True):  # fmt: skip
        self._pslib_only("save_paddle_inference_model")

    def save_paddle_params(self, executor, scope, program, model_name, output_path, day, pass_id, hadoop_fs_name,
                           hadoop_fs_ugi, hadoop_home="$HADOOP_HOME", var_names=None, save_combine=True):  # fmt: skip
        self._pslib_only("save_paddle_params")

    def _pipeline(self, what: str):
        raise NotImplementedError(
            f"FleetUtil.{what}: the donefiles of PSLib's online-training (xbox) pipeline are not supported by "
            "fluidcompat"
        )

    def write_model_donefile(self, *args, **kwargs):
        self._pipeline("write_model_donefile")

    def write_xbox_donefile(self, *args, **kwargs):
        self._pipeline("write_xbox_donefile")

    def write_cache_donefile(self, *args, **kwargs):
        self._pipeline("write_cache_donefile")

    def get_last_save_xbox_base(self, *args, **kwargs):
        self._pipeline("get_last_save_xbox_base")

    def get_last_save_xbox(self, *args, **kwargs):
        self._pipeline("get_last_save_xbox")

    def get_last_save_model(self, *args, **kwargs):
        self._pipeline("get_last_save_model")

    # -- programs (utils.py) --------------------------------------------------------------------------
    def program_type_trans(self, prog_dir, prog_fn, is_text):
        return utils.program_type_trans(prog_dir, prog_fn, is_text)

    def draw_from_program_file(self, model_filename, is_text, output_dir, output_filename):
        utils.graphviz(utils.load_program(model_filename, is_text).global_block(), output_dir, output_filename)

    def draw_from_program(self, program, output_dir, output_name):
        utils.graphviz(program.global_block(), output_dir, output_name)

    def check_two_programs(self, config) -> bool:
        """Whether the pruned program's persistables match the training program's (``config``:
        ``train_prog_path``, ``is_text_train_program``, ``pruned_prog_path``,
        ``is_text_pruned_program``, ``draw``, ``draw_out_name``)."""
        train = utils.load_program(config.train_prog_path, config.is_text_train_program)
        pruned = utils.load_program(config.pruned_prog_path, config.is_text_pruned_program)
        if config.draw:
            self.draw_from_program(pruned, os.path.dirname(config.pruned_prog_path), config.draw_out_name)
        ok = utils.check_pruned_program_vars(train, pruned)
        _logger.info("check_programs succeed." if ok else "check_programs failed. pruned program and train "
                     "program not match!")  # fmt: skip
        return ok

    def check_vars_and_dump(self, config):
        """Run the saved inference model of ``config.dump_model_dir`` once (utils.try_load_model_vars)."""
        return utils.check_saved_vars_try_dump(
            config.dump_model_dir, config.dump_program_filename, config.is_text_dump_program, config.feed_config,
            config.fetch_config, config.batch_size, config.save_params_filename,
        )  # fmt: skip

    def parse_program_proto(self, prog_path, is_text, output_dir) -> None:
        utils.parse_program(utils.load_program(prog_path, is_text), output_dir)
