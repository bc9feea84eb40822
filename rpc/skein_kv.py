"""A lean reader of Skein's key-value store for TaskExecutors: two message types over
the container's mutual TLS instead of Skein's Python client, whose import costs a
TaskExecutor a tenth of a second of start-up on a busy node."""
from __future__ import annotations

import os

from yarnflow.core.clock import SYSTEM_CLOCK, Clock, Deadline

SKEIN_SERVER_NAME = "skein-internal"
_GET_RANGE = "/skein.AppMaster/GetRange"


def wait_for_key(key: str, timeout: float, what: str, interval: float = 0.05,
                 clock: Clock = SYSTEM_CLOCK) -> bytes:
    """Poll Skein's key-value store for ``key`` until it exists (Skein's ``kv.wait`` has
    no timeout)."""
    import grpc
    from yarnflow.rpc.generated import skein_kv_pb2
    address = os.environ.get("SKEIN_APPMASTER_ADDRESS")
    if not address:
        raise RuntimeError("SKEIN_APPMASTER_ADDRESS is not set: not inside a Skein container")
    with open(".skein.crt", "rb") as cert, open(".skein.pem", "rb") as key_file:
        cert_pem, key_pem = cert.read(), key_file.read()
    credentials = grpc.ssl_channel_credentials(cert_pem, key_pem, cert_pem)
    request = skein_kv_pb2.GetRangeRequest(start=key, end=key + "\x00")
    deadline = Deadline(clock, timeout)
    with grpc.secure_channel(address, credentials, options=[
            ("grpc.ssl_target_name_override", SKEIN_SERVER_NAME)]) as channel:
        get_range = channel.unary_unary(
            _GET_RANGE, request_serializer=skein_kv_pb2.GetRangeRequest.SerializeToString,
            response_deserializer=skein_kv_pb2.GetRangeResponse.FromString)
        while True:
            try:
                response = get_range(request, timeout=max(deadline.left(), 0.1))
                for item in response.result:
                    if item.key == key:
                        return bytes(item.value)
            except grpc.RpcError as err:
                if err.code() not in (grpc.StatusCode.UNAVAILABLE,
                                      grpc.StatusCode.DEADLINE_EXCEEDED):
                    raise RuntimeError(f"reading '{key}' from Skein's key-value store: "
                                       f"{err.details()}") from None
            if deadline.passed():
                raise TimeoutError(f"{what} did not appear as '{key}' in Skein's key-value "
                                   f"store within {timeout:g} s")
            clock.sleep(interval)
