"""Every server refuses a caller without a certificate from the cluster's CA."""
from __future__ import annotations

import grpc
import pyarrow.flight as flight
import pytest

from tests.conftest import wait_until
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.core.resources import ResourceSpec
from yarnflow.rpc.generated import (common_pb2, jobmaster_pb2, jobmaster_pb2_grpc,
                                    resourcemanager_pb2_grpc, taskexecutor_pb2,
                                    taskexecutor_pb2_grpc)
from yarnflow.rpc.security import CLUSTER_NAME, generate_cluster_credentials
from yarnflow.client.targets.local import LocalCluster
from yarnflow.taskexecutor.network.data_server import ticket_for


@pytest.fixture(scope="module")
def cluster():
    from yarnflow.conf import Configuration
    from tests.conftest import FAST
    with LocalCluster(Configuration.load(overrides=FAST)) as c:
        c.driver.request_worker(WorkerSpec(ResourceSpec(1, 512), 1, 0))
        wait_until(lambda: c.overview().workers, 30, "a TaskExecutor registered")
        yield c


def _channels(address: str, cluster: LocalCluster) -> dict[str, grpc.Channel]:
    other = generate_cluster_credentials()
    override = [("grpc.ssl_target_name_override", CLUSTER_NAME)]
    return {
        "plaintext": grpc.insecure_channel(address),
        "server-auth only": grpc.secure_channel(
            address, grpc.ssl_channel_credentials(root_certificates=cluster.tls.ca_pem), override),
        "other CA": grpc.secure_channel(address, grpc.ssl_channel_credentials(
            root_certificates=cluster.tls.ca_pem, private_key=other.key_pem,
            certificate_chain=other.cert_pem), override),
        "cluster certificate": grpc.secure_channel(
            address, cluster.tls.channel_credentials(), override),
    }


def _calls(cluster: LocalCluster) -> dict[str, tuple[str, object]]:
    te = cluster.overview().workers[0]
    return {
        "ResourceManager": (cluster.address, lambda ch: resourcemanager_pb2_grpc
                            .ResourceManagerStub(ch).GetClusterOverview(common_pb2.Empty(), timeout=5)),
        "JobMaster": (cluster.address, lambda ch: jobmaster_pb2_grpc.JobMasterStub(ch)
                      .OfferSlots(jobmaster_pb2.OfferSlotsRequest(job_master_id="x"), timeout=5)),
        "TaskExecutor": (te.rpc_address, lambda ch: taskexecutor_pb2_grpc.TaskExecutorStub(ch)
                         .CancelTask(taskexecutor_pb2.CancelTaskMessage(attempt_id="x"), timeout=5)),
    }


@pytest.mark.parametrize("server", ["ResourceManager", "JobMaster", "TaskExecutor"])
def test_grpc_servers_require_a_client_certificate_from_the_cluster_ca(cluster, server):
    address, call = _calls(cluster)[server]
    channels = _channels(address, cluster)
    for name in ("plaintext", "server-auth only", "other CA"):
        with pytest.raises(grpc.RpcError) as refused:
            call(channels[name])
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, name
    try:   # the same call with our certificate reaches the server: an answer, or a refusal
        call(channels["cluster certificate"])
    except grpc.RpcError as answered:
        assert answered.code() == grpc.StatusCode.FAILED_PRECONDITION, answered.details()


def test_data_server_requires_a_client_certificate_from_the_cluster_ca(cluster):
    address = cluster.overview().workers[0].data_address
    other = generate_cluster_credentials()
    strangers = {
        "plaintext": flight.FlightClient(f"grpc://{address}"),
        "other CA": flight.FlightClient(f"grpc+tls://{address}", tls_root_certs=cluster.tls.ca_pem,
                                        cert_chain=other.cert_pem, private_key=other.key_pem,
                                        override_hostname=CLUSTER_NAME),
    }
    options = flight.FlightCallOptions(timeout=5)
    for name, client in strangers.items():
        with pytest.raises(flight.FlightError):
            client.do_get(ticket_for("no-such-partition", 0), options).read_all()
    member = flight.FlightClient(f"grpc+tls://{address}", tls_root_certs=cluster.tls.ca_pem,
                                 cert_chain=cluster.tls.cert_pem, private_key=cluster.tls.key_pem,
                                 override_hostname=CLUSTER_NAME)
    with pytest.raises(flight.FlightError) as answered:   # authenticated: the server answers
        member.do_get(ticket_for("no-such-partition", 0), options).read_all()
    assert "did not appear" in str(answered.value) or "deadline" in str(answered.value).lower()
