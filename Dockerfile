# anonstream worker / CLI image. Settings come from ANONSTREAM_* environment variables or, for
# secrets, files named by ANONSTREAM_*_FILE (see stream/config/settings.py, docs/operations.md); production
# mode refuses to start without the broker, database and key. The image carries no test broker
# (the `embedded` extra): it always talks to the configured Kafka.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    ANONSTREAM_MODE=production ANONSTREAM_HOME=/var/lib/anonstream ANONSTREAM_LOG_FORMAT=json \
    ANONSTREAM_CACHE_DIR=/var/lib/anonstream/cache NUMBA_CACHE_DIR=/var/lib/anonstream/cache/numba

WORKDIR /app
COPY pyproject.toml README.md ./
COPY core ./core
COPY stream ./stream
COPY db ./db
COPY migrations ./migrations
# No [embedded] extra: the production image has no bundled broker.
# Compile every engine's numba kernels at build time, so no engine compiles inside its time budget.
RUN pip install . \
    && useradd --system --uid 10001 --home-dir /var/lib/anonstream --create-home anonstream \
    && anonstream warmup \
    && chown -R anonstream /var/lib/anonstream/cache

USER anonstream
WORKDIR /var/lib/anonstream
# the worker's web port: /metrics, /ready, /live (bind address from ANONSTREAM_WEB_HOST, 127.0.0.1 unless set)
EXPOSE 6066
CMD ["anonstream", "run", "--no-migrate"]
