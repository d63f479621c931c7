"""kafka-python clients that never leak their IO thread or a socket.

kafka-python 3 starts a client's background IO thread *before* it bootstraps, and when the bootstrap
fails the constructor raises with that thread still running: it keeps retrying the unreachable broker
for the life of the process (and draws jitter from the global ``random`` module while it does). A
console polling a dead broker, or ``ensure_topics`` retrying every half second, would pile up threads.

:func:`open_client` builds a client and, if its constructor raises, stops whatever it had started.
Every kafka-python admin client, consumer and producer of ours is built through it
(:func:`make_producer` builds the producers).

kafka-python 3 also leaves sockets for the garbage collector (``kafka/net/inet.py``,
``kafka/net/transport.py``): the socket of a connect that failed (refused, or whose deadline passed
while the connect was under way, which on a loaded machine is a *connected* socket), and that of a
connection closed with requests still unsent when its client stopped. Until collected, each holds a
file descriptor (and the broker a connection); when collected, Python reports an unclosed socket at
some random later point. :func:`close_kafka_sockets` (applied by :func:`open_client`) closes a failed
connect's socket at once, and makes every socket kafka-python opens close itself, quietly, when it is
collected: a library's leak we cannot reach, where an unclosed socket of ours is still reported.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from typing import Any, TypeVar

log = logging.getLogger(__name__)

C = TypeVar("C")
_PATCHED = "_anonstream_closes_its_sockets"


class KafkaSocket(socket.socket):
    """A socket kafka-python opened: closed without a warning if it is collected still open."""

    def __del__(self) -> None:
        if self.fileno() != -1:
            self.close()


def close_kafka_sockets() -> None:
    """kafka-python opens :class:`KafkaSocket` sockets, and closes the socket of a connect that fails or
    times out (idempotent; a no-op for a kafka-python without ``kafka.net.inet``, which closes its own)."""
    try:
        from kafka.net.inet import KafkaNetSocket
    except ImportError:
        return
    if getattr(KafkaNetSocket, _PATCHED, False):
        return
    connect = KafkaNetSocket.sock_connect

    def new_socket(self: Any, family: int = socket.AF_UNSPEC, sock_type: int = socket.SOCK_STREAM,
                   proto: int = socket.IPPROTO_TCP) -> socket.socket:
        return KafkaSocket(family, sock_type, proto)

    async def sock_connect(self: Any, net: Any, sock: Any, sockaddr: Any, timeout_at: Any = None) -> Any:
        try:
            return await connect(self, net, sock, sockaddr, timeout_at=timeout_at)
        except BaseException:
            sock.close()
            raise

    KafkaNetSocket.socket = new_socket
    KafkaNetSocket.sock_connect = sock_connect
    setattr(KafkaNetSocket, _PATCHED, True)


def open_client(cls: type[C], **config: Any) -> C:
    """``cls(**config)``; if the constructor raises, the network client it built (its connections, its
    selector and wake-up sockets, its IO thread) is closed before the error propagates. A socket whose
    connect fails is closed at once (:func:`close_kafka_sockets`)."""
    close_kafka_sockets()
    factory = config.get("kafka_client") or getattr(cls, "DEFAULT_CONFIG", {}).get("kafka_client")
    if factory is None:
        return cls(**config)
    built: list[Any] = []

    def capture(*args: Any, **kwargs: Any) -> Any:
        built.append(factory(*args, **kwargs))
        return built[-1]

    try:
        return cls(**{**config, "kafka_client": capture})
    except BaseException:
        for net_client in built:
            with contextlib.suppress(Exception):
                net_client.close()
            log.debug("closed the network client of a %s that failed to start", cls.__name__)
        raise


def make_producer(bootstrap: list[str] | str, **overrides: Any) -> Any:
    """A kafka-python producer for ``bootstrap`` (every acknowledgement waited for, batches of up to 256 KiB),
    built through :func:`open_client`; ``overrides`` replace any of its settings."""
    from kafka import KafkaProducer

    config: dict[str, Any] = {"bootstrap_servers": bootstrap, "acks": "all", "linger_ms": 20,
                              "batch_size": 256 * 1024, "enable_idempotence": False,
                              "max_in_flight_requests_per_connection": 5, "client_id": "anonstream-push"}
    config.update(overrides)
    return open_client(KafkaProducer, **config)
