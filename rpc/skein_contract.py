"""What yarnflow's client, ApplicationMaster and TaskExecutors agree on inside a Skein
application: the environment variables a launch carries, the keys of Skein's
key-value store, and a lean reader of that store for TaskExecutors.

Small payloads travel in the launch environment rather than as localized files
because every localized file is one more upload to the cluster's file system
before YARN accepts the application (about 0.2 s each on the test cluster).
Environment values are base64: YARN's launch script does not keep quotes intact.
"""
from __future__ import annotations

import base64
import os
import time

# Skein's key-value store keys the ApplicationMaster publishes.
APPMASTER_ADDRESS_KEY = "yarnflow.appmaster.address"
JOB_ID_KEY = "yarnflow.job.id"

# The container-size plan (ApplicationMaster): base64 JSON list of {service, slot_cpu,
# slot_memory_mb, num_slots, overhead_mb, instances}.
SERVICES_ENV = "YARNFLOW_SERVICES"
# The configuration as JSON (ApplicationMaster and TaskExecutors).
CONF_ENV = "YARNFLOW_CONF"
# The serialized JobGraph when it is small enough for the environment (else job.pb).
JOB_ENV = "YARNFLOW_JOB"
# Linux refuses to exec with one environment string over 128 KiB (MAX_ARG_STRLEN);
# base64 grows a payload by 4/3, so a JobGraph up to 64 KiB fits with room to spare.
JOB_ENV_LIMIT = 64 * 1024

SKEIN_SERVER_NAME = "skein-internal"
_GET_RANGE = "/skein.AppMaster/GetRange"


def encode(payload: bytes) -> str:
    return base64.b64encode(payload).decode()


def decode_env(name: str) -> bytes:
    value = os.environ.get(name)
    if value is None:
        raise RuntimeError(f"${name} is not set: this process runs only inside a Skein "
                           "container of a yarnflow application")
    return base64.b64decode(value)


def wait_for_key(key: str, timeout: float, what: str, interval: float = 0.05) -> bytes:
    """Poll Skein's key-value store for ``key`` until it exists (Skein's ``kv.wait`` has
    no timeout). Talks to Skein's ApplicationMaster over the container's mutual TLS
    with two message types instead of Skein's Python client, whose import costs a
    TaskExecutor a tenth of a second of start-up on a busy node."""
    import grpc
    from yarnflow.rpc.generated import skein_kv_pb2
    address = os.environ.get("SKEIN_APPMASTER_ADDRESS")
    if not address:
        raise RuntimeError("SKEIN_APPMASTER_ADDRESS is not set: not inside a Skein container")
    with open(".skein.crt", "rb") as cert, open(".skein.pem", "rb") as key_file:
        cert_pem, key_pem = cert.read(), key_file.read()
    credentials = grpc.ssl_channel_credentials(cert_pem, key_pem, cert_pem)
    request = skein_kv_pb2.GetRangeRequest(start=key, end=key + "\x00")
    deadline = time.monotonic() + timeout
    with grpc.secure_channel(address, credentials, options=[
            ("grpc.ssl_target_name_override", SKEIN_SERVER_NAME)]) as channel:
        get_range = channel.unary_unary(
            _GET_RANGE, request_serializer=skein_kv_pb2.GetRangeRequest.SerializeToString,
            response_deserializer=skein_kv_pb2.GetRangeResponse.FromString)
        while True:
            remaining = deadline - time.monotonic()
            try:
                response = get_range(request, timeout=max(remaining, 0.1))
                for item in response.result:
                    if item.key == key:
                        return item.value
            except grpc.RpcError as err:
                if err.code() not in (grpc.StatusCode.UNAVAILABLE,
                                      grpc.StatusCode.DEADLINE_EXCEEDED):
                    raise RuntimeError(f"reading '{key}' from Skein's key-value store: "
                                       f"{err.details()}") from None
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{what} did not appear as '{key}' in Skein's key-value "
                                   f"store within {timeout:g} s")
            time.sleep(interval)
