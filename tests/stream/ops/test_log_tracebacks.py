"""A framework error that only says the broker is unreachable is one log line; other errors keep their traceback."""

from __future__ import annotations

import io
import logging

from aiokafka.errors import KafkaConnectionError

from stream.ops.logs import ConnectionTracebackFilter, TextFormatter


def _logged(exc: BaseException, verbose: bool) -> str:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(TextFormatter())
    handler.addFilter(ConnectionTracebackFilter(verbose))
    logger = logging.getLogger(f"test.tracebacks.{type(exc).__name__}.{verbose}")
    logger.propagate = False
    logger.addHandler(handler)
    try:
        raise exc
    except BaseException:
        logger.exception("Error: %r", exc)
    finally:
        logger.removeHandler(handler)
    return out.getvalue()


def test_unreachable_broker_is_one_line_unless_verbose() -> None:
    quiet = _logged(KafkaConnectionError("Unable to bootstrap from [('127.0.0.1', 1)]"), verbose=False)
    assert "Unable to bootstrap" in quiet and "Traceback" not in quiet and quiet.count("\n") == 1
    assert "Traceback" in _logged(KafkaConnectionError("Unable to bootstrap"), verbose=True)
    assert "Traceback" not in _logged(ConnectionRefusedError(111, "refused"), verbose=False)


def test_other_errors_keep_their_traceback() -> None:
    assert "Traceback" in _logged(ValueError("a real bug"), verbose=False)
