"""Data-plane throughput: one producer subtask -> one consumer subtask on two
TaskExecutor processes, at least 2 GB of Arrow batches, against the ceiling of a bare
Arrow Flight DoGet between two processes (same mutual TLS), measured in the same run.
Also measures grpcio server streaming of IPC-serialized batches, the alternative
transport. Prints one JSON object.

    python bench/exchange_throughput.py [--gb 2]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent import futures

import grpc
import numpy as np
import pyarrow as pa
import pyarrow.flight as flight

from yarnflow.conf import Configuration
from yarnflow.core.clock import poll_until
from yarnflow.rpc.security import CLUSTER_NAME, TlsCredentials, generate_cluster_credentials

BATCH_ROWS = 1 << 20          # 1 Mi rows x 1 int64 column = 8 MiB per batch


def batch() -> pa.RecordBatch:
    return pa.record_batch([pa.array(np.arange(BATCH_ROWS, dtype=np.int64))], names=["x"])


# --- the yarnflow job ----------------------------------------------------------------
from yarnflow.core.operators import Operator, Source  # noqa: E402


class RepeatSource(Source):
    def __init__(self, count: int) -> None:
        self.count = count

    def create_input_splits(self, parallelism: int, max_split_bytes: int = 0) -> list:
        return [self.count]

    def read_split(self, split: int, batch_rows: int):
        b = batch()
        for _ in range(split):
            yield b


class CountSink(Operator):
    def __init__(self, path: str) -> None:
        self.path = path

    def run(self, ctx) -> None:
        total, first = 0, None
        for b in ctx.input(0):
            first = first or time.perf_counter()
            total += b.nbytes
        with open(self.path, "w") as out:
            json.dump({"bytes": total, "seconds": time.perf_counter() - first}, out)


def ours(count: int) -> float:
    import yarnflow.client as yf
    from yarnflow.client.targets.local import LocalCluster
    result_file = tempfile.mktemp(suffix=".json")
    p = yf.Pipeline("exchange", parallelism=1)
    src = p._source(RepeatSource(count), "producer").slot_sharing_group("a")
    src._unary(CountSink(result_file), "consumer").slot_sharing_group("b")
    config = Configuration.load()
    with LocalCluster(config) as cluster:
        result = cluster.submit(p.job_graph(config)).wait(600)
        assert result.status.value == "FINISHED", result.failure
        assert len(cluster.overview().workers) == 2, "producer and consumer must be on two executors"
    with open(result_file) as f:
        measured = json.load(f)
    return measured["bytes"] * 8 / measured["seconds"] / 1e9


# --- bare transports in a second process ----------------------------------------------
class BareFlight(flight.FlightServerBase):
    def __init__(self, location: str, count: int, **tls: object) -> None:
        super().__init__(location, **tls)
        self.count = count

    def do_get(self, context, ticket):
        b = batch()
        return flight.GeneratorStream(b.schema, (b for _ in range(self.count)))


def serve(kind: str, tls_dir: str, count: int, port_file: str) -> None:
    tls = TlsCredentials.read(tls_dir)
    if kind == "grpc":
        payload = batch().serialize().to_pybytes()

        def stream(request, context):
            for _ in range(count):
                yield payload
        handler = grpc.method_handlers_generic_handler("bench.Exchange", {
            "Get": grpc.unary_stream_rpc_method_handler(stream)})
        server = grpc.server(futures.ThreadPoolExecutor(4), options=[
            ("grpc.max_send_message_length", 64 << 20)])
        server.add_generic_rpc_handlers((handler,))
        port = server.add_secure_port("127.0.0.1:0", tls.server_credentials())
        server.start()
    else:
        secure = kind == "flight"
        kw = dict(tls_certificates=[flight.CertKeyPair(tls.cert_pem.decode(), tls.key_pem.decode())],
                  verify_client=True, root_certificates=tls.ca_pem.decode()) if secure else {}
        server = BareFlight(f"grpc{'+tls' if secure else ''}://127.0.0.1:0", count, **kw)
        port = server.port
    with open(port_file, "w") as f:
        f.write(str(port))
    time.sleep(3600)   # serves until the parent kills it


def measure_bare(kind: str, tls: TlsCredentials, tls_dir: str, count: int) -> float:
    port_file = tempfile.mktemp()
    proc = subprocess.Popen([sys.executable, __file__, "--serve", kind, "--tls-dir", tls_dir,
                             "--count", str(count), "--port-file", port_file])
    try:
        def started() -> bool | None:
            if proc.poll() is not None:
                raise RuntimeError(f"bare {kind} server exited before it started")
            return (os.path.exists(port_file) and bool(open(port_file).read())) or None
        if not poll_until(started, 60, 0.05):
            raise RuntimeError(f"bare {kind} server did not start within 60 s")
        port = int(open(port_file).read())
        total = 0
        if kind == "grpc":
            channel = grpc.secure_channel(f"127.0.0.1:{port}", tls.channel_credentials(), options=[
                ("grpc.ssl_target_name_override", CLUSTER_NAME),
                ("grpc.max_receive_message_length", 64 << 20)])
            get = channel.unary_stream("/bench.Exchange/Get")
            start = time.perf_counter()
            schema = batch().schema
            for message in get(b""):
                total += pa.ipc.read_record_batch(pa.py_buffer(message), schema).nbytes
        else:
            if kind == "flight":
                client = flight.FlightClient(f"grpc+tls://127.0.0.1:{port}",
                                             tls_root_certs=tls.ca_pem, cert_chain=tls.cert_pem,
                                             private_key=tls.key_pem, override_hostname=CLUSTER_NAME)
            else:
                client = flight.FlightClient(f"grpc://127.0.0.1:{port}")
            reader = client.do_get(flight.Ticket(b"x"))
            start = time.perf_counter()
            for chunk in reader:
                total += chunk.data.nbytes
        return total * 8 / (time.perf_counter() - start) / 1e9
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3, help="median of this many runs each")
    parser.add_argument("--serve", choices=["flight", "flight-plaintext", "grpc"])
    parser.add_argument("--tls-dir")
    parser.add_argument("--count", type=int)
    parser.add_argument("--port-file")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.tls_dir, args.count, args.port_file)
        return
    count = int(np.ceil(args.gb * 2**30 / batch().nbytes))
    tls = generate_cluster_credentials()
    tls_dir = tempfile.mkdtemp()
    tls.write(tls_dir)
    runs: dict[str, list[float]] = {"ours": [], "flight": [], "grpc": [], "flight-plaintext": []}
    for _ in range(args.repeats):   # interleaved, so drift on a shared machine hits all alike
        runs["ours"].append(ours(count))
        for kind in ("flight", "grpc", "flight-plaintext"):
            runs[kind].append(measure_bare(kind, tls, tls_dir, count))
    ours_gbps, ceiling, grpc_gbps, plaintext = (float(np.median(runs[k])) for k in
                                                ("ours", "flight", "grpc", "flight-plaintext"))
    print(json.dumps({
        "bytes": count * batch().nbytes, "ours_gbps": round(ours_gbps, 2),
        "ceiling_gbps": round(ceiling, 2), "ratio": round(ours_gbps / ceiling, 3),
        "grpc_stream_gbps": round(grpc_gbps, 2), "flight_plaintext_gbps": round(plaintext, 2),
        "repeats": args.repeats, "runs_gbps": {k: [round(x, 2) for x in v] for k, v in runs.items()},
    }))


if __name__ == "__main__":
    main()
