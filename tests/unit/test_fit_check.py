"""A worker YARN cannot place, checked against YARN's node reports (issue 81, item 2):
the decision on its own, then the ResourceManager acting on it on a manual clock.

The issue's cluster: two live hosts of 4 vcores each with 3 free (the
ApplicationMaster holds one on nm2, an idle executor kept for --min-executors one on
nm1), and a job asking for 4-vcore containers."""
from __future__ import annotations

from tests.unit.test_resource_manager import Cluster, run_now
from yarnflow.appmaster.resourcemanager.drivers.base import NodeReport
from yarnflow.appmaster.resourcemanager.drivers.yarn_nodes import parse_nodes
from yarnflow.appmaster.resourcemanager.fit_check import Fit, IdleExecutor, check_fit
from yarnflow.core.ids import ResourceID
from yarnflow.core.resources import ResourceSpec as R
from yarnflow.core.worker_spec import WorkerSpec

FOUR = WorkerSpec(R(4, 5888), 1, 256)          # 4 vcores, 6144 MB: the issue's te-1x4c-5888m
ISSUE_HOSTS = [NodeReport("nm1", 3, 8192, 4, 10240), NodeReport("nm2", 3, 8192, 4, 10240)]
IDLE_ON_NM1 = [IdleExecutor(ResourceID("te-idle"), "nm1", 1, 1280)]
INTERVAL = 10.0


def test_a_container_a_live_host_has_free_fits():
    roomy = [NodeReport("nm1", 4, 8192, 4, 10240)]
    assert check_fit(FOUR, roomy, [], releasable=0).fit is Fit.FITS


def test_idle_executors_that_make_room_are_released_unless_min_executors_keeps_them():
    release = check_fit(FOUR, ISSUE_HOSTS, IDLE_ON_NM1, releasable=1)
    assert (release.fit, release.release) == (Fit.RELEASE_IDLE, ("te-idle",))
    kept = check_fit(FOUR, ISSUE_HOSTS, IDLE_ON_NM1, releasable=0, min_executors=3)
    assert kept.fit is Fit.KEPT_BY_MIN_EXECUTORS and kept.release == ()
    assert "--min-executors 3" in kept.reason and "fix:" in kept.reason
    # an idle executor elsewhere makes no room on nm1
    elsewhere = [IdleExecutor(ResourceID("te-far"), "nm9", 4, 8192)]
    assert check_fit(FOUR, ISSUE_HOSTS, elsewhere, releasable=1).fit is Fit.WAIT


def test_room_in_use_is_waited_for_and_room_no_host_has_never_comes():
    wait = check_fit(FOUR, ISSUE_HOSTS, [], releasable=5)
    assert wait.fit is Fit.WAIT and "nm1: 3 of 4 vcores" in wait.reason
    small = [NodeReport("nm1", 2, 4096, 2, 4096), NodeReport("nm2", 1, 1024, 2, 4096)]
    never = check_fit(FOUR, small, [], releasable=5)
    assert never.fit is Fit.NEVER
    assert "4-vcore, 6144 MB container" in never.reason
    assert "nm1: 2 of 2 vcores and 4096 of 4096 MB free" in never.reason
    assert "nm2: 1 of 2 vcores and 1024 of 4096 MB free" in never.reason
    assert check_fit(FOUR, [], [], releasable=5).fit is Fit.WAIT, "no live host: hosts return"


def test_a_labelled_container_counts_only_its_partition():
    labelled = WorkerSpec(R(1, 512, node_label="highmem"), 1, 256)
    plain_hosts = [NodeReport("nm1", 8, 16384, 8, 16384)]
    assert check_fit(labelled, plain_hosts, [], 0).fit is Fit.NEVER
    highmem = plain_hosts + [NodeReport("nm3", 8, 16384, 8, 16384, frozenset({"highmem"}))]
    assert check_fit(labelled, highmem, [], 0).fit is Fit.FITS
    only_labelled = [NodeReport("nm3", 8, 16384, 8, 16384, frozenset({"highmem"}))]
    assert check_fit(WorkerSpec(R(1, 512), 1, 256), only_labelled, [], 0).fit is Fit.NEVER


def test_the_resource_managers_web_services_answer_is_read_as_node_reports():
    page = {"nodes": {"node": [
        {"nodeHostName": "nm2", "state": "RUNNING", "availableVirtualCores": 3,
         "availMemoryMB": 8192, "usedVirtualCores": 1, "usedMemoryMB": 2048},
        {"nodeHostName": "nm1", "state": "RUNNING", "availableVirtualCores": 4,
         "availMemoryMB": 10240, "usedVirtualCores": 0, "usedMemoryMB": 0,
         "nodeLabels": ["highmem"]},
        {"nodeHostName": "nm3", "state": "LOST"}]}}
    assert parse_nodes(page) == [NodeReport("nm1", 4, 10240, 4, 10240, frozenset({"highmem"})),
                                 NodeReport("nm2", 3, 8192, 4, 10240)]
    assert parse_nodes({"nodes": None}) == []


# --- the ResourceManager acting on the decision ------------------------------------------
def _cluster(reports: list[NodeReport], min_workers: int = 0) -> Cluster:
    c = Cluster(f"resourcemanager.node-report.interval={INTERVAL}",
                "resourcemanager.worker.start-timeout=120", min_workers=min_workers)
    c.main.call(c.rm.register_job_master, "job-1", "jm-1", "jm:1")
    c.rm.capacity.run_blocking = run_now
    c.driver.node_reports = lambda: reports        # type: ignore[method-assign]
    c.register("te-idle", host="nm1")               # an idle warm executor on nm1
    return c


def test_the_resource_manager_releases_an_idle_executor_whose_host_the_worker_needs():
    c = _cluster(ISSUE_HOSTS)
    c.request("a1", profile=R(4, 5888))
    assert [spec.name for _, spec in c.driver.requested] == ["1x4c-5888m"]
    c.main.advance(INTERVAL - 1)
    assert c.executors["te-idle"].shutdown_reasons == [], "checked only once it waited"
    c.main.advance(1.5)
    assert len(c.executors["te-idle"].shutdown_reasons) == 1
    assert "releasing 1 idle executor(s) on nm1" in c.executors["te-idle"].shutdown_reasons[0]
    assert "te-idle" in c.driver.released
    assert len(c.driver.requested) == 1, "the request stays with YARN: nothing asked again"


def test_min_executors_keeping_the_room_is_said_and_the_worker_waits_without_asking_again():
    c = _cluster(ISSUE_HOSTS, min_workers=1)
    c.request("a1", profile=R(4, 5888))
    c.main.advance(INTERVAL + 1)
    assert c.executors["te-idle"].shutdown_reasons == []
    waiting = {d.resource_id: d.waiting for d in c.main.call(c.rm.executor_details)
               if d.state == "STARTING"}
    assert "--min-executors 1 keeps them" in waiting["container-0"]
    # past resourcemanager.worker.start-timeout it is not released and asked again:
    # YARN still holds the request, and asking again would change nothing
    c.main.advance(200)
    assert len(c.driver.requested) == 1 and "container-0" not in c.driver.released
    assert c.job_master.allocation_failures == []


def test_without_node_reports_a_worker_is_asked_again_after_its_start_timeout():
    c = _cluster(ISSUE_HOSTS)
    c.driver.node_reports = lambda: None            # type: ignore[method-assign]
    c.request("a1", profile=R(4, 5888))
    c.main.advance(125)
    assert "container-0" in c.driver.released and len(c.driver.requested) == 2


def test_a_container_no_live_host_can_ever_hold_fails_its_requests_in_one_line():
    small = [NodeReport("nm1", 2, 4096, 3, 8192), NodeReport("nm2", 3, 8192, 3, 8192)]
    c = _cluster(small)
    c.request("a1", profile=R(4, 5888))
    c.main.advance(INTERVAL + 1)
    [(allocation, cause)] = c.job_master.allocation_failures
    assert allocation == "a1" and "\n" not in cause
    assert "no live YARN host can ever hold a 4-vcore, 6144 MB container" in cause
    assert "nm1: 2 of 3 vcores" in cause and "nm2: 3 of 3 vcores" in cause
    assert "container-0" in c.driver.released
    assert c.executors["te-idle"].shutdown_reasons == [], "no room it could make"


def test_a_worker_that_fits_is_left_to_yarn():
    c = _cluster([NodeReport("nm1", 8, 16384, 8, 16384)])
    c.request("a1", profile=R(2, 2048))
    c.main.advance(INTERVAL + 1)
    assert c.rm.capacity.waits == {} and c.job_master.allocation_failures == []
    assert c.executors["te-idle"].shutdown_reasons == [] and len(c.driver.requested) == 1


def test_a_waiting_worker_no_request_needs_any_more_is_released():
    """Its request was served by a slot a finished region gave back: YARN would keep a
    host reserved for a container nobody needs, and the job's next, smaller
    containers would wait behind it (found by the docker test of issue 81)."""
    c = _cluster(ISSUE_HOSTS, min_workers=1)
    c.request("a1", profile=R(4, 5888))
    c.main.call(c.rm.cancel_slot_request, "a1")
    c.main.advance(INTERVAL + 1)
    assert "container-0" in c.driver.released
    assert c.main.call(lambda: list(c.rm.slot_manager.pending_workers)) == []
    assert c.job_master.allocation_failures == []


class _Reader:
    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)

    def read(self) -> list[NodeReport]:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]


def test_a_new_attempt_does_not_ask_executors_on_a_host_yarn_no_longer_runs():
    """The next ApplicationMaster attempt after its host died: the client planned
    per-host services on three hosts, YARN runs two; the lost one is left out of the
    hosts executors are asked on, and out of the reports the fit check reads. A read
    that fails is no news (None), and the next one is read again."""
    from tests.unit.test_yarn_parts import _SkeinApp
    from yarnflow.appmaster.resourcemanager.drivers.yarn import YarnDriver
    from yarnflow.conf import Configuration
    spec = WorkerSpec(R(1, 1024), 1, 256)
    two = [NodeReport("nm1", 4, 8192, 8, 16384), NodeReport("nm2", 4, 8192, 8, 16384)]
    reader = _Reader(two, OSError("connection refused"), two + [NodeReport("nm3", 8, 16384, 8, 16384)])
    driver = YarnDriver(Configuration.load(), _SkeinApp(), {spec.name: "te-a"}, R(8, 8192),
                        {(spec.name, h): f"te-a-{h}" for h in ("nm1", "nm2", "nm3")},
                        nodes=reader)
    driver.forget_hosts_not_running(driver.node_reports() or [])
    assert driver.worker_hosts() == {"nm1", "nm2"}
    assert driver.node_reports() is None
    assert [r.host for r in driver.node_reports() or []] == ["nm1", "nm2"], \
        "nm3 stays lost until a container of the application runs there"
    assert YarnDriver(Configuration.load(), _SkeinApp(), {}, R(8, 8192)).node_reports() is None


def test_a_session_keeps_its_smallest_size_warm_not_the_large_executors_a_job_left():
    """--min-executors 2 with a 6-core executor a job left idle: it goes, and a warm
    executor of the session's smallest size takes its place (kept as a warm one, the
    6 cores left the next job's 1-core containers no room: the docker test of
    issue 81)."""
    from tests.unit.test_resource_manager import TM_TIMEOUT
    from yarnflow.core.container_ladder import ContainerLadder
    ladder = ContainerLadder([R(1, 1536), R(6, 6144)], 256)
    c = Cluster(min_workers=2, ladder=ladder)
    c.register("te-warm", slot=R(1, 1280))
    c.register("te-big", slot=R(6, 5888))
    c.main.advance(TM_TIMEOUT + 2)
    assert c.executors["te-warm"].shutdown_reasons == []
    assert len(c.executors["te-big"].shutdown_reasons) == 1
    assert [spec.name for _, spec in c.driver.requested] == ["1x1c-1280m"]
    c.heartbeat("te-warm")
    c.main.advance(10)
    assert len(c.driver.requested) == 1, "the warm one starting counts toward the two"
