"""kafka-python clients that never leak their IO thread.

kafka-python 3 starts a client's background IO thread *before* it bootstraps, and when the bootstrap
fails the constructor raises with that thread still running: it keeps retrying the unreachable broker
for the life of the process (and draws jitter from the global ``random`` module while it does). A
console polling a dead broker, or ``ensure_topics`` retrying every half second, would pile up threads.

:func:`open_client` builds a client and, if its constructor raises, stops whatever it had started.
Every kafka-python admin client and consumer of ours is built through it.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, TypeVar

log = logging.getLogger(__name__)

C = TypeVar("C")


def open_client(cls: type[C], **config: Any) -> C:
    """``cls(**config)``; if the constructor raises, the network client it built (its connections, its
    selector and wake-up sockets, its IO thread) is closed before the error propagates."""
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
