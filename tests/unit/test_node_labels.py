"""Node labels per slot profile (issue 35, item 4): a ResourceSpec's node_label travels
with its profile from the pipeline to the Skein service of its containers, a slot
serves only profiles of its own label, and a label no host has is refused before
submitting."""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field

import pyarrow as pa
import pytest

import yarnflow.client as yf
from tests.unit.test_slot_manager import Actions, register, request
from yarnflow.appmaster.resourcemanager.slotmanager import SlotManager
from yarnflow.appmaster.yarn_application import load_worker_specs
from yarnflow.client.targets.node_python import NodePython
from yarnflow.client.targets.yarn import node_labels_asked, plan_containers
from yarnflow.client.targets.yarn_client import check_node_labels, container_services
from yarnflow.client.targets.yarn_errors import YarnError
from yarnflow.conf import Configuration
from yarnflow.core.container_ladder import ContainerLadder, NoContainerFits
from yarnflow.core.jobgraph import InvalidPipelineError
from yarnflow.core.resources import NodeLabelConflict, ResourceSpec as R
from yarnflow.core.worker_spec import WorkerSpec
from yarnflow.core.clock import ManualClock
from yarnflow.rpc.codec import fill_resource_spec, resource_spec_from_proto
from yarnflow.rpc.generated import common_pb2

HIGHMEM = R(1, "2g", node_label="highmem")


def config(*overrides: str) -> Configuration:
    return Configuration.load(overrides=["resourcemanager.max-worker.memory=8192",
                                         "resourcemanager.max-worker.cpu=8",
                                         "yarn.python=/opt/python/bin/python3", *overrides])


def labelled_job() -> yf.Pipeline:
    p = yf.Pipeline("labels", parallelism=2)
    p.from_arrow(pa.table({"x": [1, 2]}), name="read").resources(R(1, "512m")) \
        .rebalance().map(lambda b: b, name="big").resources(HIGHMEM).slot_sharing_group("mem") \
        .rebalance().write_parquet("/tmp/out", "overwrite").resources(R(1, "512m"))
    return p


def test_a_label_is_part_of_the_profile_and_of_what_a_slot_serves():
    plain = R(1, "2g")
    assert HIGHMEM != plain and hash(HIGHMEM) != hash(plain)
    assert HIGHMEM.label() == "1c-2048m@highmem" and "node_label='highmem'" in repr(HIGHMEM)
    assert not plain.fits_in(HIGHMEM) and not HIGHMEM.fits_in(plain)
    assert HIGHMEM.fits_in(R(2, "4g", node_label="highmem"))
    assert HIGHMEM.within(R(2, "4g"))           # a size limit knows no labels
    # a shared slot takes the one label its operators name
    assert (HIGHMEM + plain).node_label == "highmem" and (HIGHMEM * 3).node_label == "highmem"
    with pytest.raises(NodeLabelConflict, match="'highmem' and 'gpu' cannot share a slot"):
        HIGHMEM + R(1, 1024, node_label="gpu")


@pytest.mark.parametrize("bad", ["-x", "high mem", "a,b", "é"])
def test_a_label_yarn_would_not_take_is_refused_where_it_is_written(bad):
    with pytest.raises(ValueError, match="is not a YARN node label"):
        R(1, 1024, node_label=bad)
    with pytest.raises(ValueError, match="yarn.taskmanager.node-label"):
        config(f"yarn.taskmanager.node-label={bad}")


def test_two_labels_in_one_slot_sharing_group_name_the_operators_and_the_fix():
    p = yf.Pipeline("clash", parallelism=1)
    p.from_arrow(pa.table({"x": [1]}), name="read").resources(HIGHMEM) \
        .map(lambda b: b, name="gpu-map").resources(R(1, 1024, node_label="gpu")) \
        .write_parquet("/tmp/out", "overwrite")
    with pytest.raises(InvalidPipelineError) as err:
        p.job_graph(config()).validate(R(8, 8192), R(1, 1024))
    text = str(err.value)
    assert "gpu-map" in text and "'read'" in text and "slot_sharing_group" in text


def test_the_labelled_profile_gets_a_service_in_its_partition_without_host_services():
    cfg = config()
    graph = labelled_job().job_graph(cfg)
    specs = plan_containers(graph, cfg)
    node = NodePython(python="/usr/bin/python3")
    services, plan = container_services(list(specs.values()), {}, node, {},
                                        ["nm1", "nm2"])
    labelled = [s.slot_profile for s in specs.values() if s.slot_profile.node_label]
    shared = HIGHMEM + R(1, "512m")    # the sink shares the slot and the label of its input
    assert labelled == [shared] and shared.node_label == "highmem"
    by_label = {svc.node_label: name for name, svc in services.items() if not svc.nodes}
    assert set(by_label) == {"", "highmem"}
    assert "--slot-node-label highmem" in services[by_label["highmem"]].script
    # YARN takes a label only on a request for any host: no strict per-host service
    assert not any(svc.nodes and svc.node_label for svc in services.values())
    assert sum(1 for svc in services.values() if svc.nodes) == 2     # the plain size's
    loaded = load_worker_specs(base64.b64decode(plan))
    assert shared in loaded.specs and not any(
        spec == loaded.specs[shared].name for spec, _ in loaded.host_services)
    assert json.loads(base64.b64decode(plan))[0].keys() >= {"slot_node_label"}


def test_executors_without_a_label_of_their_own_go_where_the_configuration_says():
    cfg = config("yarn.taskmanager.node-label=batch")
    spec = WorkerSpec(R(1, 1024), 1, 256)
    node = NodePython(python="/usr/bin/python3")
    services, _ = container_services([spec], {}, node, {}, ["nm1"], "batch")
    assert [svc.node_label for svc in services.values()] == ["batch"]
    assert node_labels_asked(labelled_job().job_graph(cfg), cfg) == {
        "batch": "yarn.taskmanager.node-label", "highmem": "operator 'big' (its ResourceSpec)"}


@dataclass
class Node:
    id: str
    labels: set[str] = field(default_factory=set)


def test_a_label_no_host_has_is_refused_naming_the_labels_there_are():
    nodes = [Node("nm1:8041"), Node("nm2:8041", {"highmem"}), Node("nm3:8041", {"gpu"})]
    check_node_labels(nodes, {"highmem": "operator 'big' (its ResourceSpec)"})
    with pytest.raises(YarnError) as err:
        check_node_labels(nodes, {"bigmem": "operator 'big' (its ResourceSpec)"})
    assert str(err.value).startswith("operator 'big' (its ResourceSpec) names node label "
                                     "'bigmem', which no running NodeManager")
    assert "its labels: gpu, highmem" in str(err.value)


def test_a_session_refuses_a_labelled_profile_in_one_line():
    ladder = ContainerLadder([R(2, 4096)], 256)
    with pytest.raises(NoContainerFits, match="yarn-per-job"):
        ladder.spec_for(HIGHMEM)


def test_a_labelled_request_never_takes_a_plain_slot():
    actions, clock = Actions(), ManualClock()
    sm = SlotManager(actions, 1, 256, 8, 30.0, clock=clock)
    register(sm, "plain", R(4, 8192))
    sm.request_slot(request("a1", HIGHMEM))
    assert actions.allocations == []
    assert [spec.slot_profile for _, spec in actions.started] == [HIGHMEM]
    register(sm, "worker-0", HIGHMEM)
    assert actions.allocations == [("worker-0", 0, "a1")]


def test_the_label_crosses_the_wire():
    message = common_pb2.ResourceSpec()
    fill_resource_spec(HIGHMEM, message)
    assert resource_spec_from_proto(message) == HIGHMEM


def test_the_application_label_places_the_appmaster_and_by_default_the_executors(tmp_path):
    import skein
    from yarnflow.client.targets.yarn import build_spec
    from yarnflow.rpc.security import generate_application_credentials
    cfg = config("yarn.application.node-label=batch")
    graph = labelled_job().job_graph(cfg)
    creds = generate_application_credentials()
    spec = build_spec(graph, cfg, plan_containers(graph, cfg), tmp_path,
                      skein.Security(cert_bytes=creds.cert_pem, key_bytes=creds.key_pem),
                      ["nm1", "nm2"])
    assert spec.node_label == "batch"
    assert sorted(svc.node_label for svc in spec.services.values()) == ["batch", "highmem"]
    assert not any(svc.nodes for svc in spec.services.values())
