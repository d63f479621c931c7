"""kafka-python clients that never leak their IO thread or a socket.

kafka-python 3 starts a client's background IO thread *before* it bootstraps, and when the bootstrap
fails the constructor raises with that thread still running: it keeps retrying the unreachable broker
for the life of the process (and draws jitter from the global ``random`` module while it does). A
console polling a dead broker, or ``ensure_topics`` retrying every half second, would pile up threads.

:func:`open_client` builds a client and, if its constructor raises, stops whatever it had started.
Every kafka-python admin client and consumer of ours is built through it.

kafka-python 3 also leaves the socket of a connection attempt that failed for the garbage collector
(``KafkaNetSocket.sock_connect`` in ``kafka/net/inet.py``): a refused connection, and one whose
deadline passed while the connect was under way, which on a loaded machine is a *connected* socket.
Until it is collected it holds a file descriptor (and the broker a connection), and when it is, Python
reports it as an unclosed socket at some random later point. :func:`close_failed_connects` (applied
by :func:`open_client`) closes such a socket when its connect fails.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, TypeVar

log = logging.getLogger(__name__)

C = TypeVar("C")
_CLOSES_FAILED = "_anonstream_closes_failed_connects"


def close_failed_connects() -> None:
    """Make kafka-python close the socket of a connect that fails or times out (idempotent; a no-op for
    a kafka-python without ``kafka.net.inet``, which closes its own)."""
    try:
        from kafka.net.inet import KafkaNetSocket
    except ImportError:
        return
    connect = KafkaNetSocket.sock_connect
    if getattr(connect, _CLOSES_FAILED, False):
        return

    async def sock_connect(self: Any, net: Any, sock: Any, sockaddr: Any, timeout_at: Any = None) -> Any:
        try:
            return await connect(self, net, sock, sockaddr, timeout_at=timeout_at)
        except BaseException:
            sock.close()
            raise

    setattr(sock_connect, _CLOSES_FAILED, True)
    KafkaNetSocket.sock_connect = sock_connect


def open_client(cls: type[C], **config: Any) -> C:
    """``cls(**config)``; if the constructor raises, the network client it built (its connections, its
    selector and wake-up sockets, its IO thread) is closed before the error propagates. A socket whose
    connect fails is closed at once (:func:`close_failed_connects`)."""
    close_failed_connects()
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
