"""The ``yarn-per-job`` target: one YARN application per job, launched through Skein.

The client builds the JobGraph, plans one container size per slot profile, and
submits a Skein application whose master script starts yarnflow's
ApplicationMaster with the serialized JobGraph (user code travels inside it as
cloudpickle bytes) and the configuration, in the launch environment when they are
small and the JobGraph localized as ``job.pb`` when it is not. It returns as soon as YARN accepted the application; ``--attach``
follows the job through the ApplicationMaster's JobMaster instead.

How Python reaches the nodes: by default the containers run the client's own
interpreter path (``sys.executable``), which suits clusters whose nodes share that
path — the native test cluster does. On a real cluster pack an environment
(``venv-pack`` or ``conda-pack``) and set ``yarn.ship-environment`` to the archive:
YARN localizes it into every container as ``environment/`` and runs
``environment/bin/python``. ``yarn.python`` names any other interpreter on the nodes.
"""
from __future__ import annotations

import enum
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from yarnflow.core.contract import service_name
from yarnflow.core.worker_spec import (WorkerSpec, plan_worker_specs,
                                                                       slots_needed)
from yarnflow.conf import Configuration, options
from yarnflow.filesystems import use_cluster_filesystem
from yarnflow.core.jobgraph import InvalidPipelineError, JobGraph, ScheduleMode
from yarnflow.core.resources import ResourceSpec
from yarnflow.rpc.security import generate_application_credentials
from yarnflow.core.contract import CONF_ENV, JOB_ENV, JOB_ENV_LIMIT, SERVICES_ENV, encode
from yarnflow.targets.app_store import ApplicationStore
from yarnflow.targets.hadoop_conf import HadoopConf, HadoopConfigError
from yarnflow.targets.history import history_location
from yarnflow.targets.yarn_errors import YarnError
from yarnflow.rpc.codec import jobgraph_to_proto

T = TypeVar("T")
YARN_DEFAULT_UPSTREAM_GRACE = 10.0   # Skein learns of a dead container within ~5 s


def bounded(call: Callable[[], T], timeout: float, what: str) -> T:
    """Run a call that may block on an unreachable ResourceManager, with a deadline
    (Hadoop's client retries for minutes without a word)."""
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(call).result(timeout=timeout)
    except FutureTimeout:
        raise YarnError(f"{what} did not complete within {timeout:g} s (yarn.client.timeout): "
                        "is YARN's ResourceManager up and HADOOP_CONF_DIR pointing at it?") from None
    finally:
        pool.shutdown(wait=False)


def skein_client(timeout: float) -> Any:
    """A Skein client: through the user's global Skein driver when one runs (`skein
    driver start`, as Skein's own CLI does; saves starting a JVM per command), else
    through a private driver logging to ~/.yarnflow."""
    import skein
    try:
        return bounded(skein.Client.from_global_driver, timeout, "connecting to Skein's driver")
    except (skein.exceptions.DriverNotRunningError, skein.exceptions.ConnectionError):
        pass
    log = ApplicationStore().root / "skein-driver.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    return bounded(lambda: skein.Client(log=str(log)), timeout, "starting Skein's driver")


def load_hadoop_conf(config: Configuration) -> HadoopConf:
    try:
        hadoop = HadoopConf.load()
        hadoop.check_rm_reachable(config.get(options.YARN_CLIENT_TIMEOUT))
    except HadoopConfigError as err:
        raise YarnError(str(err)) from None
    return hadoop


def prepare_config(config: Configuration) -> Configuration:
    """The configuration the job is validated with and the ApplicationMaster gets: the
    largest container is what YARN's scheduler grants."""
    hadoop = load_hadoop_conf(config)
    config = config.copy()
    max_mb, max_vcores = hadoop.max_allocation
    config.set(options.MAX_WORKER_MEMORY, max_mb)
    config.set(options.MAX_WORKER_CPU, max_vcores)
    if not config.is_set(options.UPSTREAM_FAILURE_GRACE):
        config.set(options.UPSTREAM_FAILURE_GRACE, YARN_DEFAULT_UPSTREAM_GRACE)
    use_cluster_filesystem(config, hadoop)   # a path without a scheme is on fs.defaultFS
    return config


def plan_containers(graph: JobGraph, config: Configuration) -> dict[ResourceSpec, WorkerSpec]:
    """One container size per slot profile; refuse, before YARN sees anything, a
    profile whose container exceeds the scheduler's maximum allocation."""
    largest = ResourceSpec(config.get(options.MAX_WORKER_CPU), config.get(options.MAX_WORKER_MEMORY))
    default_slot = ResourceSpec(config.get(options.DEFAULT_SLOT_CPU),
                                config.get(options.DEFAULT_SLOT_MEMORY))
    specs = plan_worker_specs(graph, default_slot, config.get(options.NUM_TASK_SLOTS),
                              config.get(options.WORKER_OVERHEAD_MEMORY), largest)
    for group, members in graph.slot_sharing_groups().items():
        spec = specs[graph.slot_profile(group, default_slot)]
        if spec.container.memory_mb > largest.memory_mb or spec.vcores > largest.cpu:
            heaviest = max(members, key=lambda v: v.resources.memory_mb if v.resources else -1)
            raise InvalidPipelineError(
                heaviest.name,
                f"slot sharing group '{group}' needs a container of {spec.container.memory_mb} MB "
                f"and {spec.vcores} vcores (its slot profile {spec.slot_profile} plus the "
                f"TaskExecutor's {spec.overhead_mb} MB), more than YARN grants "
                f"(yarn.scheduler.maximum-allocation-mb={largest.memory_mb:d}, "
                f"yarn.scheduler.maximum-allocation-vcores={largest.cpu:g})",
                "lower the operator's ResourceSpec, split heavy operators into slot sharing "
                "groups of their own, or ask the cluster's administrator for larger containers")
    return specs


class RunStatus(enum.Enum):
    """How a YARN run ended for the client (the names of a local JobResult's status)."""
    SUBMITTED = "SUBMITTED"      # detached: the job runs on in YARN
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"


@dataclass
class Submission:
    """What a detached run returns: the job runs on, in YARN."""
    app_id: str
    job_id: str
    tracking_url: str
    status: RunStatus = RunStatus.SUBMITTED


def python_and_files(config: Configuration) -> tuple[str, dict[str, Any]]:
    import skein
    packed = config.get(options.YARN_SHIP_ENVIRONMENT)
    if packed:
        if not Path(packed).exists():
            raise YarnError(f"yarn.ship-environment {packed} does not exist. Fix: pack the "
                            "environment first, e.g. `venv-pack -o env.tar.gz`")
        return "environment/bin/python", {"environment": skein.File(source=str(Path(packed).resolve()),
                                                                     type="archive")}
    return config.get(options.YARN_PYTHON) or sys.executable, {}


def initial_instances(graph: JobGraph, config: Configuration,
                      specs: dict[ResourceSpec, WorkerSpec]) -> dict[str, int]:
    """An EAGER job needs all its slots at once, and per-job mode knows them before
    YARN does: declaring those containers as the services' instances lets YARN
    allocate them while the ApplicationMaster is still starting. LAZY jobs ask as
    their stages come (instances 0)."""
    counts = {spec.name: 0 for spec in specs.values()}
    if graph.schedule_mode is ScheduleMode.EAGER:
        default_slot = ResourceSpec(config.get(options.DEFAULT_SLOT_CPU),
                                    config.get(options.DEFAULT_SLOT_MEMORY))
        for profile, slots in slots_needed(graph, default_slot).items():
            spec = specs[profile]
            counts[spec.name] = -(-slots // spec.num_slots)
    return counts


def services_plan(specs: list[WorkerSpec], instances: dict[str, int]) -> str:
    """The container sizes as the ApplicationMaster reads them ($YARNFLOW_SERVICES)."""
    return encode(json.dumps([
        {"service": service_name(s), "slot_cpu": s.slot_profile.cpu,
         "slot_memory_mb": s.slot_profile.memory_mb, "num_slots": s.num_slots,
         "overhead_mb": s.overhead_mb, "instances": instances.get(s.name, 0)}
        for s in specs]).encode())


def taskexecutor_service(spec: WorkerSpec, instances: int, python: str, files: dict[str, Any],
                         env: dict[str, str]) -> Any:
    """One container size: a Skein service whose containers run a TaskExecutor. Skein
    neither restarts nor gives up on them; the ResourceManager decides."""
    import skein
    return skein.Service(
        resources=skein.Resources(memory=spec.container.memory_mb, vcores=spec.vcores),
        instances=instances, max_restarts=0, allow_failures=True, files=files, env=env,
        script=(f"exec {python} -m yarnflow.taskexecutor --yarn "
                f"--slots {spec.num_slots} --slot-cpu {spec.slot_profile.cpu:g} "
                f"--slot-memory {spec.slot_profile.memory_mb} --worker-spec {spec.name}"))


def build_spec(graph: JobGraph, config: Configuration, specs: dict[ResourceSpec, WorkerSpec],
               staging: Path, tls: Any) -> Any:
    import skein
    python, files = python_and_files(config)
    instances = initial_instances(graph, config, specs)
    # Each localized file is one more upload before YARN accepts the application: the
    # configuration and plan travel in the environment, and so does a small JobGraph.
    env = {"PYTHONUNBUFFERED": "1", CONF_ENV: encode(config.to_json().encode())}
    master_env = {**env, SERVICES_ENV: services_plan(list(specs.values()), instances)}
    master_files = dict(files)
    job = jobgraph_to_proto(graph).SerializeToString()
    if len(job) <= JOB_ENV_LIMIT:
        master_env[JOB_ENV] = encode(job)
        master_script = f"exec {python} -m yarnflow.appmaster"
    else:
        (staging / "job.pb").write_bytes(job)
        master_files["job.pb"] = skein.File(source=str(staging / "job.pb"))
        master_script = f"exec {python} -m yarnflow.appmaster --job job.pb"
    master = skein.Master(
        resources=skein.Resources(memory=config.get(options.YARN_AM_MEMORY),
                                  vcores=config.get(options.YARN_AM_VCORES)),
        files=master_files, env=master_env, security=tls, script=master_script)
    services = {service_name(spec): taskexecutor_service(spec, instances[spec.name], python,
                                                         files, env)
                for spec in specs.values()}
    return skein.ApplicationSpec(
        name=config.get(options.YARN_APP_NAME) or graph.name, queue=config.get(options.YARN_QUEUE),
        master=master, services=services, tags=["yarnflow"], max_attempts=1)


def submit_per_job(graph: JobGraph, config: Configuration) -> Submission:
    """Submit the job as its own YARN application; returns once YARN accepted it.
    ``config`` has been through ``prepare_config``."""
    timeout = config.get(options.YARN_CLIENT_TIMEOUT)
    specs = plan_containers(graph, config)
    # The ApplicationMaster archives the ended job there, so its final figures outlive it.
    config.set(options.SESSION_HISTORY_DIR, history_location(config))
    import skein
    credentials = generate_application_credentials()
    security = skein.Security(cert_bytes=credentials.cert_pem, key_bytes=credentials.key_pem)
    with tempfile.TemporaryDirectory(prefix="yarnflow-submit-") as staging:
        spec = build_spec(graph, config, specs, Path(staging), security)
        client = skein_client(timeout)
        try:
            app_id = bounded(lambda: client.submit(spec), timeout, "submitting to YARN")
            report = bounded(lambda: client.application_report(app_id), timeout,
                             "reading the application report")
        finally:
            client.close()        # stops a private driver; a global one stays up
    ApplicationStore().save(app_id, credentials, {
        "job_id": graph.job_id, "name": graph.name, "submitted": time.time(),
        "history": config.get(options.SESSION_HISTORY_DIR)})
    return Submission(app_id, graph.job_id, report.tracking_url or "")
