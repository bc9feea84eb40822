"""Entry point of a TaskExecutor process: ``python -m yarnflow.taskexecutor``."""
from __future__ import annotations

import argparse
import logging
import math
import faulthandler
import os
import signal
import sys
import threading
from pathlib import Path

# Arrow's allocator. A TaskExecutor streams batches far larger than its container
# through it, and YARN measures the process's resident memory, not what Arrow still
# uses: freed pages must go back to the system soon, whatever load the host is under.
# jemalloc (in pyarrow's Linux wheels) does that from a background thread, ARROW_DECAY_MS
# after a page was last used, and meanwhile hands freed pages to the next batch.
# mimalloc purges only when the allocating thread calls it: under load its delay let
# freed pages pile up to the container's limit, and without the delay every batch
# faults in fresh pages (single-threaded Arrow work took 1.6x as long: a chained task's
# operators run on one thread). jemalloc keeps a freed page in the arena of the thread
# that freed it, for that arena's next allocation: with its default of 8 arenas (4 per
# core) and an executor's dozens of threads (tasks, input gates, Flight), pages freed
# by one thread sat idle while others faulted in new ones, and when the host was busy
# enough to hold back the purging thread the join of test_spill.py peaked at 657 MB in a
# 512 MB container (CI, with 4 test workers on 2 cores; 499 MB in one of six local
# runs under load); two arenas, as for glibc's malloc below, keep reuse close. All of
# these must be set before pyarrow loads; an explicit setting in the environment wins.
if sys.platform.startswith("linux"):
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    os.environ.setdefault("JE_ARROW_MALLOC_CONF", "narenas:2")
os.environ.setdefault("MIMALLOC_PURGE_DELAY", "0")     # where it is mimalloc after all
ARROW_DECAY_MS = 100


def _return_freed_memory() -> None:
    """glibc's malloc (numpy's, gRPC's, Python's large objects) likewise: a freed large
    block goes back to the system at once instead of into one of up to 8 arenas per
    core, where it stays resident. Its default raises the mmap threshold after each
    large free, so an executor that handled batches of a few MB on a dozen threads kept
    ~150 MB it no longer used (issue 57). A fixed threshold (128 KB, glibc's start)
    and two arenas keep resident memory what is in use."""
    import ctypes
    import ctypes.util
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = getattr(libc, "mallopt", None)
    except OSError:
        return
    if mallopt is None:       # not glibc
        return
    m_mmap_threshold, m_arena_max = -3, -8
    mallopt(m_mmap_threshold, 128 * 1024)
    mallopt(m_arena_max, 2)


_return_freed_memory()

from yarnflow.conf.logs import grpc_core_logs_to_stderr  # noqa: E402

grpc_core_logs_to_stderr()     # this process's stderr is its log

from yarnflow.conf import Configuration  # noqa: E402
from yarnflow.core.resources import ResourceSpec  # noqa: E402
from yarnflow.rpc.security import TlsCredentials  # noqa: E402
from yarnflow.taskexecutor.runner import TaskExecutorRunner, configure_logging  # noqa: E402
from yarnflow.taskexecutor.settings import TaskExecutorSettings  # noqa: E402


# Batches from the network are not 64-byte aligned; Acero would warn once per batch.
os.environ.setdefault("ACERO_ALIGNMENT_HANDLING", "ignore")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="yarnflow-taskexecutor")
    parser.add_argument("--yarn", action="store_true",
                        help="run in a YARN container: ids, TLS and addresses come from it")
    parser.add_argument("--resource-id")
    parser.add_argument("--rm-address")
    parser.add_argument("--tls-dir")
    parser.add_argument("--conf", help="configuration file (on YARN: from the launch environment)")
    parser.add_argument("--slots", type=int, default=1)
    parser.add_argument("--slot-cpu", type=float, required=True)
    parser.add_argument("--slot-memory", type=int, required=True)
    parser.add_argument("--slot-node-label", default="",
                        help="the YARN node label of its slots' profile")
    parser.add_argument("--worker-spec", default="")
    parser.add_argument("--workdir")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--log-file", default=None)
    args = parser.parse_args(argv)
    if args.yarn:
        from yarnflow.taskexecutor.yarn_container import (ContainerEnvironment, find_appmaster,
                                                          launch_configuration)
        config = Configuration.from_file(args.conf) if args.conf else launch_configuration()
        container = ContainerEnvironment.from_environment()
        container.check_fits(args.slots, args.slot_memory)
        args.resource_id, args.host = container.resource_id, container.host
        args.log_file, args.workdir = str(container.log_file), str(container.workdir)
        tls = container.tls
    elif not (args.resource_id and args.rm_address and args.tls_dir and args.workdir
              and args.conf):
        parser.error("--resource-id, --rm-address, --tls-dir, --workdir and --conf are "
                     "required outside YARN")
    else:
        config = Configuration.from_file(args.conf)
        tls = TlsCredentials.read(args.tls_dir)
    configure_logging(args.log_file)
    settings = TaskExecutorSettings.of(config)   # read once, where the executor starts
    log_stream = open(args.log_file, "a") if args.log_file else None
    # `kill -USR1 <pid>` writes every thread's stack to the log, like jstack.
    faulthandler.register(signal.SIGUSR1, file=log_stream or sys.stderr, all_threads=True)
    if args.yarn:
        logging.getLogger("yarnflow.taskexecutor").info(
            "YARN container %s: %d MB, %d vcores, %d slots of %g cores / %d MB%s",
            container.resource_id, container.memory_mb, container.vcores, args.slots,
            args.slot_cpu, args.slot_memory,
            f", node label {args.slot_node_label}" if args.slot_node_label else "")
        args.rm_address = find_appmaster(settings.registration_timeout)
    limit_compute_threads(args.slots, args.slot_cpu)
    return_freed_arrow_memory()
    te = TaskExecutorRunner(args.resource_id, args.rm_address, tls, settings, args.slots,
                      ResourceSpec(args.slot_cpu, args.slot_memory,
                                   node_label=args.slot_node_label), args.worker_spec,
                      Path(args.workdir), args.host)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(
        target=te.stop, args=("SIGTERM",), daemon=True).start())
    parent = os.getppid()
    te.start()

    def orphan_watch() -> None:   # a local executor must not outlive its cluster process
        while not te.stopped.wait(1.0):
            if os.getppid() != parent:
                te.stop("the process that started this executor is gone")
    if not args.yarn:             # on YARN the NodeManager owns the container's lifetime
        threading.Thread(target=orphan_watch, daemon=True).start()
    te.wait()
    te.stopped_cleanly.wait(10.0)
    logging.shutdown()
    # Everything is stopped and flushed; skip interpreter finalization, where gRPC's and
    # Flight's native threads can hold the exit for seconds.
    os._exit(0)


def return_freed_arrow_memory(decay_ms: int = ARROW_DECAY_MS) -> None:
    """jemalloc's own decay is a second (Arrow's setting): a tenth of that keeps what
    an executor holds close to what its operators use, at no cost in speed measured."""
    import pyarrow as pa
    backend = pa.default_memory_pool().backend_name
    if backend == "jemalloc":
        pa.jemalloc_set_decay_ms(decay_ms)
    logging.getLogger("yarnflow.taskexecutor").info(
        "Arrow allocates with %s%s", backend,
        f", freed pages returned {decay_ms} ms after their last use" if backend == "jemalloc"
        else "")


def limit_compute_threads(slots: int, slot_cpu: float) -> None:
    """Arrow's compute pool (Parquet decoding and encoding, joins, kernels) gets the
    executor's cores, ceil(slots x slot cores), as its Spark gets local[n]: an executor
    must not take the cores of its neighbours on the same machine."""
    import pyarrow as pa
    pa.set_cpu_count(max(1, math.ceil(slots * slot_cpu)))


if __name__ == "__main__":
    raise SystemExit(main())
