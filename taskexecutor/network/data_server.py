"""Serves this TaskExecutor's subpartitions to consumers over Arrow Flight (DoGet),
with mutual TLS: only holders of the cluster's certificate can read data.

Flight was measured against grpcio streaming of IPC-serialized batches; see
``bench/exchange_throughput.py`` and DESIGN.md for the figures.
"""
from __future__ import annotations

import itertools
import logging
from typing import Iterator

import pyarrow as pa
import pyarrow.flight as flight

from yarnflow.core.streaming.events import Event, decode, encode
from yarnflow.rpc.security import CLUSTER_NAME, TlsCredentials
from yarnflow.taskexecutor.network.partition import PipelinedSubpartition
from yarnflow.taskexecutor.network.partition_manager import ResultPartitionManager

log = logging.getLogger(__name__)
EMPTY_SCHEMA = pa.schema([])


def ticket_for(partition_id: str, subpartition: int) -> flight.Ticket:
    return flight.Ticket(f"{partition_id}|{subpartition}".encode())


class DataServer(flight.FlightServerBase):  # type: ignore[misc]  # pyarrow is untyped
    def __init__(self, manager: ResultPartitionManager, tls: TlsCredentials, host: str,
                 request_timeout: float) -> None:
        super().__init__(location=f"grpc+tls://{host}:0",
                         tls_certificates=[flight.CertKeyPair(tls.cert_pem.decode(),
                                                              tls.key_pem.decode())],
                         verify_client=True, root_certificates=tls.ca_pem.decode())
        self._manager = manager
        self._timeout = request_timeout
        self.address = f"{host}:{self.port}"

    def do_get(self, context: flight.ServerCallContext, ticket: flight.Ticket) -> flight.FlightDataStream:
        partition_id, _, index = ticket.ticket.decode().rpartition("|")
        partition = self._manager.get(partition_id, self._timeout, context.is_cancelled)
        batches = partition.subpartitions[int(index)].read(context.is_cancelled)
        first = next(batches, None)
        if first is None:
            return flight.GeneratorStream(EMPTY_SCHEMA, iter(()))
        return flight.GeneratorStream(first.schema, itertools.chain([first], batches))

    def do_exchange(self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor,
                    reader: flight.MetadataRecordBatchReader,
                    writer: flight.MetadataRecordBatchWriter) -> None:
        """A streaming job's channel: its batches, and its events (barriers, watermarks)
        as metadata-only messages in their place between them."""
        partition_id, _, index = descriptor.command.decode().rpartition("|")
        partition = self._manager.get(partition_id, self._timeout, context.is_cancelled)
        sub = partition.subpartitions[int(index)]
        if not isinstance(sub, PipelinedSubpartition):
            raise flight.FlightServerError(f"{partition_id} is not a pipelined result")
        schema: pa.Schema | None = None
        for item in sub.read_items(context.is_cancelled):
            if isinstance(item, pa.RecordBatch):
                if schema is None:
                    schema = item.schema
                    writer.begin(schema)
                writer.write_batch(item)
            else:
                writer.write_metadata(pa.py_buffer(encode(item)))


class DataClients:
    """One Flight client per remote TaskExecutor."""

    def __init__(self, tls: TlsCredentials) -> None:
        self._tls = tls
        self._clients: dict[str, flight.FlightClient] = {}

    def get(self, address: str) -> flight.FlightClient:
        client = self._clients.get(address)
        if client is None:
            client = flight.FlightClient(
                f"grpc+tls://{address}", tls_root_certs=self._tls.ca_pem,
                cert_chain=self._tls.cert_pem, private_key=self._tls.key_pem,
                override_hostname=CLUSTER_NAME)
            self._clients[address] = client
        return client

    def read(self, address: str, partition_id: str, subpartition: int) -> Iterator[pa.RecordBatch]:
        reader = self.get(address).do_get(ticket_for(partition_id, subpartition))
        while True:
            try:
                chunk = reader.read_chunk()
            except StopIteration:
                return
            if chunk.data is not None:
                yield chunk.data

    def read_items(self, address: str, partition_id: str,
                   subpartition: int) -> Iterator[pa.RecordBatch | Event]:
        """A streaming channel from its producer's executor: batches and events in order."""
        descriptor = flight.FlightDescriptor.for_command(f"{partition_id}|{subpartition}".encode())
        writer, reader = self.get(address).do_exchange(descriptor)
        writer.done_writing()
        try:
            while True:
                try:
                    chunk = reader.read_chunk()
                except StopIteration:
                    return
                if chunk.data is not None:
                    yield chunk.data
                elif chunk.app_metadata is not None:
                    yield decode(chunk.app_metadata.to_pybytes())
        finally:
            writer.close()

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
