"""The ``yarn-per-job`` target: one YARN application per job, launched through Skein.

The client builds the JobGraph, plans one container size per slot profile, and
submits a Skein application whose master script starts yarnflow's
ApplicationMaster with the serialized JobGraph (user code travels inside it as
cloudpickle bytes) and the configuration, in the launch environment when they are
small and the JobGraph localized as ``job.pb`` when it is not. It returns as soon as
YARN accepted the application; ``--attach`` follows the job through the
application's Dispatcher instead. How Python reaches the nodes: ``yarn_client``.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from yarnflow.client.targets.appmaster_conf import appmaster_conf
from yarnflow.conf import Configuration, options
from yarnflow.core.contract import (CONF_ENV, JOB_ENV, JOB_ENV_LIMIT, SERVICES_ENV, encode,
                                    web_page_url)
from yarnflow.client.planner.chaining import head_operator
from yarnflow.core.jobgraph import InvalidPipelineError, JobGraph, ScheduleMode
from yarnflow.core.operators.sources import FileSource
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.appmaster_size import appmaster_memory_mb
from yarnflow.core.worker_spec import WorkerSpec, executors_needed, slots_needed
from yarnflow.rpc.codec import jobgraph_to_proto
from yarnflow.rpc.security import generate_application_credentials
from yarnflow.client.targets.app_store import ApplicationStore
from yarnflow.client.targets.base import JobHandle, Target, planned_worker_specs
from yarnflow.client.targets.history import history_location
from yarnflow.client.targets.kerberos import KerberosLogin
from yarnflow.client.targets.node_python import node_python
from yarnflow.client.targets.yarn_client import (application_ended, bounded, client_login, cluster_acls,
                                          configured_node_labels, container_services, executor_node_label,
                                          prepare_config, skein_client, worker_hosts)
from yarnflow.client.targets.yarn_job import YarnJobHandle


def plan_containers(graph: JobGraph, config: Configuration) -> dict[ResourceSpec, WorkerSpec]:
    """One container size per slot profile; refuse, before YARN sees anything, a
    profile whose container exceeds the scheduler's maximum allocation."""
    largest = options.largest_worker(config)
    default_slot = options.default_slot_profile(config)
    specs = planned_worker_specs(graph, config)
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


def initial_instances(graph: JobGraph, config: Configuration,
                      specs: dict[ResourceSpec, WorkerSpec], hosts: list[str]) -> dict[str, int]:
    """An EAGER job needs all its slots at once, and per-job mode knows them before
    YARN does: declaring those containers as the services' instances lets YARN
    allocate them while the ApplicationMaster is still starting. LAZY jobs ask as
    their stages come (instances 0), and so does a job that reads files where
    executors can be asked on their hosts: only the ApplicationMaster knows where the
    blocks are (it lists the splits), and a container YARN placed anywhere would read
    them across the network."""
    counts = {spec.name: 0 for spec in specs.values()}
    if hosts and any(isinstance(head_operator(v), FileSource) for v in graph.sources()):
        return counts
    if graph.schedule_mode is ScheduleMode.EAGER:
        for profile, executors in executors_needed(
                graph, specs, options.default_slot_profile(config)).items():
            counts[specs[profile].name] = executors
    return counts


def node_labels_asked(graph: JobGraph, config: Configuration) -> dict[str, str]:
    """The node labels the job and its configuration name, each with who names it."""
    asked = configured_node_labels(config)
    for vertex in graph.topological_order():
        label = vertex.resources.node_label if vertex.resources else ""
        if label and label not in asked:
            asked[label] = f"operator '{vertex.name}' (its ResourceSpec)"
    return asked


def build_spec(graph: JobGraph, config: Configuration, specs: dict[ResourceSpec, WorkerSpec],
               staging: Path, tls: Any, hosts: list[str],
               login: KerberosLogin | None = None, acls: Any = None) -> Any:
    """``hosts``: the worker hosts executors may be asked on (yarn_client.worker_hosts);
    ``login``: the client's Kerberos login, whose keytab the ApplicationMaster gets;
    ``acls``: who else may view or kill it (yarn_client.cluster_acls; None: Skein's
    default, none)."""
    import skein
    node = node_python(config)
    instances = initial_instances(graph, config, specs, hosts)
    # Each localized file is one more upload before YARN accepts the application: the
    # configuration and plan travel in the environment, and so does a small JobGraph.
    env = {"PYTHONUNBUFFERED": "1", CONF_ENV: encode(config.to_json().encode())}
    planned = slots_needed(graph, options.default_slot_profile(config))
    services, plan = container_services(list(specs.values()), instances, node, env, hosts,
                                        executor_node_label(config),
                                        frozenset(s.name for p, s in specs.items() if p not in planned))
    conf_files, conf_env = appmaster_conf(config)
    master_env = {**env, **conf_env, SERVICES_ENV: plan}
    master_files = {**node.files, **conf_files, **(login.appmaster_files() if login else {})}
    job = jobgraph_to_proto(graph).SerializeToString()
    if len(job) <= JOB_ENV_LIMIT:
        master_env[JOB_ENV] = encode(job)
        master_script = node.script("yarnflow.appmaster")
    else:
        (staging / "job.pb").write_bytes(job)
        master_files["job.pb"] = skein.File(source=str(staging / "job.pb"))
        master_script = node.script("yarnflow.appmaster --job job.pb")
    memory = config.get(options.JOBMANAGER_PROCESS_MEMORY) or appmaster_memory_mb(
        graph, specs, options.default_slot_profile(config), options.largest_worker(config).memory_mb)
    master = skein.Master(
        resources=skein.Resources(memory=memory,
                                  vcores=config.get(options.YARN_AM_VCORES)),
        files=master_files, env=master_env, security=tls, script=master_script)
    return skein.ApplicationSpec(
        name=config.get(options.YARN_APP_NAME) or graph.name, queue=config.get(options.YARN_QUEUE),
        node_label=config.get(options.YARN_APP_NODE_LABEL),
        master=master, services=services, tags=["yarnflow"], acls=acls or skein.ACLs(),
        max_attempts=config.get(options.YARN_APPLICATION_ATTEMPTS))


def submit_per_job(graph: JobGraph, config: Configuration) -> YarnJobHandle:
    """Submit the job as its own YARN application; returns once YARN accepted it.
    ``config`` has been through ``prepare_config``."""
    timeout = config.get(options.YARN_CLIENT_TIMEOUT)
    specs = plan_containers(graph, config)
    # The ApplicationMaster archives the ended job there, so its final figures outlive it;
    # a copy: the caller's configuration submits more jobs, each to its own application.
    config = config.copy().set(options.SESSION_HISTORY_DIR, history_location(config))
    import skein
    credentials = generate_application_credentials()
    security = skein.Security(cert_bytes=credentials.cert_pem, key_bytes=credentials.key_pem)
    with tempfile.TemporaryDirectory(prefix="yarnflow-submit-") as staging:
        login = client_login(config)
        client = skein_client(timeout, login)
        spec = build_spec(graph, config, specs, Path(staging), security,
                          worker_hosts(client, config, node_labels_asked(graph, config)),
                          login, cluster_acls(config))
        app_id = bounded(lambda: client.submit(spec), timeout, "submitting to YARN")
        report = bounded(lambda: client.application_report(app_id), timeout,
                         "reading the application report")
    ApplicationStore().save(app_id, credentials, {
        "job_id": graph.job_id, "name": graph.name, "submitted": time.time(),
        "history": config.get(options.SESSION_HISTORY_DIR)})
    return YarnJobHandle(app_id, graph.job_id, timeout, report.tracking_url or "",
                         owns_application=True,
                         history_dir=config.get(options.SESSION_HISTORY_DIR))


class YarnPerJobTarget(Target):
    name = "yarn-per-job"

    def __init__(self, config: Configuration) -> None:
        super().__init__(prepare_config(config))
        self.attached = self.config.get(options.ATTACHED)

    def submit(self, graph: JobGraph) -> JobHandle:
        return submit_per_job(graph, self.config)

    def application_ended(self, application_id: str) -> bool:
        return application_ended(application_id, self.config)

    def submitted(self, handle: JobHandle) -> list[str]:
        lines = [f"submitted job {handle.job_id} as YARN application "
                 f"[bold]{handle.application_id}[/]", f"tracking URL: {handle.tracking_url}"]
        if handle.tracking_url:
            lines.append(f"web UI: {web_page_url(handle.tracking_url)}")
        if not self.attached:
            lines.append(f"follow it with: yarnflow status {handle.application_id}")
        return lines
