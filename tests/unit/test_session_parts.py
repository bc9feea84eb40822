"""Session mode's client-side parts: the history archive, where it lives, finding a session."""
from __future__ import annotations

import os

from concurrent.futures import Future
from pathlib import Path

import grpc
import pytest

from yarnflow.core.history import JobArchive
from yarnflow.rpc.codec import JOB_DETAILS
from yarnflow.core.details import JobDetails
from yarnflow.core.status import JobStatus
from yarnflow.rpc.generated import jobmaster_pb2
from yarnflow.client.targets.app_store import ApplicationStore
from yarnflow.core.hadoop_conf import HadoopConf
from yarnflow.client.targets.history import webhdfs_url
from yarnflow.client.targets.session import resolve_session
from yarnflow.client.targets.yarn_errors import YarnError


def details(job_id: str, status: str, start: float) -> JobDetails:
    return JobDetails(job_id, "j", JobStatus(status), start)


def test_archive_keeps_every_job_and_a_rewrite_replaces_it(tmp_path):
    archive = JobArchive(tmp_path / "history", JOB_DETAILS)
    assert archive.job_ids() == []                     # no directory yet: empty, not an error
    archive.store(details("b", "FAILED", 2.0))
    archive.store(details("a", "RUNNING", 1.0))
    archive.store(details("a", "FINISHED", 1.0))
    assert [d.job_id for d in archive.all()] == ["a", "b"]
    assert archive.load("a").status is JobStatus.FINISHED
    assert not [p for p in Path(tmp_path / "history").iterdir() if p.name.startswith(".")]
    with pytest.raises(KeyError, match="archived: a, b"):
        archive.load("c")


def test_an_archive_from_before_the_status_enum_still_reads(tmp_path):
    """Histories outlive upgrades: a job archived when the status travelled as a name."""
    (tmp_path / "old.pb").write_bytes(jobmaster_pb2.JobDetails(
        job_id="old", name="j", legacy_status="CANCELED", start_time=1.0).SerializeToString())
    old = JobArchive(tmp_path, JOB_DETAILS).load("old")
    assert (old.job_id, old.status, old.start_time) == ("old", JobStatus.CANCELED, 1.0)


def test_hdfs_locations_go_through_the_namenodes_http_address(tmp_path):
    hadoop = HadoopConf({"fs.defaultFS": "hdfs://nn.example:9000",
                         "dfs.namenode.http-address": "nn.example:9870"}, tmp_path)
    assert webhdfs_url("hdfs://nn.example:9000/user/u/h", hadoop) == "webhdfs://nn.example:9870/user/u/h"
    assert webhdfs_url("hdfs:///user/u/h", hadoop) == "webhdfs://nn.example:9870/user/u/h"
    wildcard = HadoopConf({"fs.defaultFS": "hdfs://nn.example:9000",
                           "dfs.namenode.http-address": "0.0.0.0:9870"}, tmp_path)
    assert webhdfs_url("hdfs:///h", wildcard) == "webhdfs://nn.example:9870/h"


def test_a_session_is_found_by_id_as_given_and_an_unknown_name_says_how_to_start_one(tmp_path):
    store = ApplicationStore(tmp_path)
    assert resolve_session("application_1_0001", 1.0, store) == "application_1_0001"
    with pytest.raises(YarnError, match="session start --name etl"):
        resolve_session("etl", 1.0, store)


class _Cancelled(grpc.RpcError):
    """What a call in flight gets when the server it went to stops."""

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.CANCELLED

    def details(self) -> str:
        return "CANCELLED"


class _StoppingDispatcher:
    def __init__(self, channel: object, timeout: float) -> None:
        pass

    def request_job_details(self, job_id: str) -> Future[JobDetails]:
        answer: Future[JobDetails] = Future()
        answer.set_exception(_Cancelled())
        return answer


class _Store:
    def credentials(self, app_id: str) -> None:
        return None

    def info(self, app_id: str) -> dict[str, str]:
        return {"dispatcher": "10.0.0.5:4000"}


def test_a_call_cancelled_by_a_stopping_dispatcher_asks_yarn_instead_of_failing(monkeypatch):
    """A per-job ApplicationMaster stops its server as it ends: the attached client's
    poll in flight is CANCELLED, and must read the outcome, not report a failed job."""
    from yarnflow.client.targets import dispatcher_client
    monkeypatch.setattr(dispatcher_client, "ChannelCache", lambda creds: type(
        "Channels", (), {"get": lambda self, a: a, "close": lambda self: None})())
    monkeypatch.setattr(dispatcher_client, "GrpcDispatcherGateway", _StoppingDispatcher)
    asked: list[str] = []

    def lookup(self: dispatcher_client.DispatcherClient) -> str:
        asked.append(self.app_id)
        raise dispatcher_client.ApplicationEnded("application application_1_0001 is FINISHED")

    monkeypatch.setattr(dispatcher_client.DispatcherClient, "_lookup_address", lookup)
    client = dispatcher_client.DispatcherClient("application_1_0001", 1.0, _Store())  # type: ignore[arg-type]
    with pytest.raises(dispatcher_client.ApplicationEnded):
        client.details("job-1")
    assert asked == ["application_1_0001"]


def test_a_session_whose_appmaster_does_not_answer_yet_is_asked_again_not_a_traceback():
    """YARN may call the application RUNNING before its ApplicationMaster answers (or
    after it stopped answering): the client keeps asking until the report says how it
    ended, and says that in one line."""
    import skein

    from yarnflow.client.targets.session import _wait_for_dispatcher
    from yarnflow.client.targets.yarn_errors import YarnError

    class Report:
        def __init__(self, state: str) -> None:
            self.state, self.diagnostics, self.tracking_url = state, "AM exited 1", "http://t/"

    class KV:
        def __init__(self, answers: list) -> None:
            self.answers = answers

        def get(self, key: str):
            answer = self.answers.pop(0)
            if isinstance(answer, Exception):
                raise answer
            return answer

    class Client:
        def __init__(self, states: list[str], kv: list) -> None:
            self.states, self.kv, self.connects = states, KV(kv), 0

        def application_report(self, app_id: str) -> Report:
            return Report(self.states.pop(0) if len(self.states) > 1 else self.states[0])

        def connect(self, app_id: str, wait: bool, security: object):
            self.connects += 1
            return self

    refused = skein.exceptions.ConnectionError("Unable to connect to application")
    client = Client(["RUNNING", "RUNNING", "RUNNING"], [refused, None, b"am:1"])
    assert _wait_for_dispatcher(client, "app_1", None, 5.0, 30.0) == ("am:1", "http://t/")
    assert client.connects == 2                      # connected afresh after the refusal
    gone = Client(["RUNNING", "FAILED"], [refused])
    with pytest.raises(YarnError, match="ended FAILED while starting: AM exited 1"):
        _wait_for_dispatcher(gone, "app_1", None, 5.0, 30.0)


def test_an_applications_info_is_never_seen_half_written_by_another_reader(tmp_path):
    """An attached run and `yarnflow status` both record a new ApplicationMaster
    attempt's address while the other reads it (the JSONDecodeError of the AM-recovery
    test): a reader sees the old info or the new, whole."""
    import threading
    store = ApplicationStore(tmp_path)
    (tmp_path / "applications" / "application_1_0001").mkdir(parents=True)
    store.update("application_1_0001", kind="per-job", dispatcher="h:1")
    done, failures = threading.Event(), []

    def write() -> None:
        for n in range(3000):
            store.update("application_1_0001", dispatcher=f"h:{n}")
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    while not done.is_set():
        try:
            assert store.info("application_1_0001")["kind"] == "per-job"
        except Exception as err:    # noqa: BLE001 - counted, not raised in the loop
            failures.append(repr(err))
    writer.join()
    assert failures == []
    assert store.info("application_1_0001") == {"kind": "per-job", "dispatcher": "h:2999"}
    assert os.listdir(tmp_path / "applications" / "application_1_0001") == ["info.json"]


class _CancelledButRunning:
    """A YarnApplication's YARN side whose ApplicationMaster takes the cancel and then
    never ends the application (too busy, or stuck): only YARN's kill ends it."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []
        self.killed = False

    def status(self, with_details: bool = True):
        from yarnflow.client.targets.yarn_report import ApplicationStatus
        state = "KILLED" if self.killed else "RUNNING"
        return ApplicationStatus("application_1_0001", state, state if self.killed else "UNDEFINED",
                                 "", "")

    def cancel(self, job_id: str) -> None:
        self.cancelled.append(job_id)


def test_a_cancel_the_application_master_does_not_carry_out_ends_in_yarns_kill(monkeypatch):
    from yarnflow.client.targets.yarn_apps import YarnApplication
    yarn = _CancelledButRunning()
    app = object.__new__(YarnApplication)
    app.app_id, app.timeout, app.job_id = "application_1_0001", 0.2, "job-1"
    monkeypatch.setattr(app, "status", yarn.status)
    monkeypatch.setattr(app, "_dispatcher_client", lambda: yarn)
    monkeypatch.setattr(app, "kill", lambda: setattr(yarn, "killed", True))
    ended = app.cancel()
    assert yarn.cancelled == ["job-1"], "the cancel went to the Dispatcher first"
    assert yarn.killed and ended.state == "KILLED"
