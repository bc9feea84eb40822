"""gRPC servers and channels, always over mutual TLS."""
from __future__ import annotations

import logging
import threading
from concurrent import futures
from typing import Callable

import grpc

from yarnflow.rpc.gateways.calls import flush_outgoing_calls
from yarnflow.rpc.security import CLUSTER_NAME, TlsCredentials

log = logging.getLogger(__name__)

_MAX_MESSAGE = 256 * 1024 * 1024
_OPTIONS = [
    ("grpc.max_send_message_length", _MAX_MESSAGE),
    ("grpc.max_receive_message_length", _MAX_MESSAGE),
]


def start_server(tls: TlsCredentials, register: Callable[[grpc.Server], None],
                 host: str = "127.0.0.1", port: int = 0, workers: int = 16) -> tuple[grpc.Server, str]:
    """Start a server that refuses any caller without a certificate from our CA.

    Returns the server and its ``host:port`` address.
    """
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers,
                                                    thread_name_prefix="grpc"),
                         options=_OPTIONS)
    register(server)
    bound = server.add_secure_port(f"{host}:{port}", tls.server_credentials())
    if bound == 0:
        raise RuntimeError(f"could not bind a gRPC server to {host}:{port}")
    server.start()
    return server, f"{host}:{bound}"


class ChannelCache:
    """One mutual-TLS channel per address, shared by every stub that dials it.
    ``interceptor``: the test-only fault injector (``yarnflow.rpc.testing.faults``), on every
    call through these channels."""

    def __init__(self, tls: TlsCredentials, interceptor: grpc.UnaryUnaryClientInterceptor | None = None
                 ) -> None:
        self._tls = tls
        self._interceptor = interceptor
        self._channels: dict[str, grpc.Channel] = {}
        self._lock = threading.Lock()

    def get(self, address: str) -> grpc.Channel:
        with self._lock:
            channel = self._channels.get(address)
            if channel is None:
                channel = grpc.secure_channel(
                    address, self._tls.channel_credentials(),
                    options=_OPTIONS + [("grpc.ssl_target_name_override", CLUSTER_NAME)])
                if self._interceptor is not None:
                    channel = grpc.intercept_channel(channel, self._interceptor)
                self._channels[address] = channel
            return channel

    def drop(self, address: str) -> None:
        with self._lock:
            channel = self._channels.pop(address, None)
        if channel is not None:
            channel.close()

    def close(self) -> None:
        """Close every channel, once the calls already made through them have started."""
        if not flush_outgoing_calls():
            log.warning("outgoing calls were still waiting to start after 5 s; closing anyway")
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            channel.close()
