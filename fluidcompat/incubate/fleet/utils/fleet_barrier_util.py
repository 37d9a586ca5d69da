"""``fleet.utils.fleet_barrier_util.check_all_trainers_ready(ready_path, epoch)``: a barrier of the
parameter-server fleet's trainers through files: each trainer puts ``ready.<epoch>.<id>.done`` in
``ready_path`` and waits until every trainer's is there. ``ready_path`` is on HDFS when
``HADOOP_HOME`` is set (``FS_NAME`` / ``FS_UGI``: its name and user, as fluid 1.8 read them), else a
directory every trainer shares."""

from __future__ import annotations

import os
import shutil
import time

from fluidcompat.incubate.fleet.parameter_server.distribute_transpiler import fleet

__all__ = ["check_all_trainers_ready"]


def check_all_trainers_ready(ready_path, epoch, poll_seconds=10) -> None:
    trainer_num, trainer_id = fleet.worker_num(), fleet.worker_index()
    node_ready = f"ready.{epoch}.{trainer_id}.done"
    with open(node_ready, "w"):
        pass
    hadoop_home = os.getenv("HADOOP_HOME")
    if hadoop_home:
        from fluidcompat.incubate.fleet.utils.hdfs import HDFSClient

        client = HDFSClient(
            hadoop_home, {"fs.default.name": os.getenv("FS_NAME"), "hadoop.job.ugi": os.getenv("FS_UGI")}
        )
        if not client.is_dir(ready_path):
            client.makedirs(ready_path)
        client.upload(hdfs_path=ready_path, local_path=node_ready, overwrite=True, retry_times=0)
        listing = lambda: [os.path.basename(p) for p in client.ls(ready_path)]  # noqa: E731
    else:
        os.makedirs(ready_path, exist_ok=True)
        shutil.copy(node_ready, os.path.join(ready_path, node_ready))
        listing = lambda: os.listdir(ready_path)  # noqa: E731
    print(f"PUT {node_ready} ON {'HDFS ' if hadoop_home else ''}{ready_path} OK")
    prefix = f"ready.{epoch}."
    while True:
        ready = sum(1 for name in listing() if name.startswith(prefix) and name.endswith(".done"))
        if ready >= trainer_num:
            break
        print(f"have {trainer_num - ready} trainers need to be ready")
        time.sleep(poll_seconds)
    print("All trainers are ready, continue training")
