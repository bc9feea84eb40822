"""gRPC-backed gateways: one component's handle on another, returning futures; a
module per peer, so a process loads only the stubs of the peers it talks to (the
client: the Dispatcher's).

Calls never block the caller's main thread. A refusal (a status carrying a refusal
kind, or an ``Ack`` with ``ok=false`` from a service that still answers that way)
surfaces as a ``yarnflow.core.errors.Refused``; a transport failure as ``grpc.RpcError``.
"""
