# anonstream worker / CLI image. Settings come from ANONSTREAM_* environment variables (see
# stream/settings.py); production mode refuses to start without the broker, database and key.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    ANONSTREAM_MODE=production ANONSTREAM_WEB_HOST=0.0.0.0 ANONSTREAM_DATA_DIR=/var/lib/anonstream \
    ANONSTREAM_CACHE_DIR=/var/lib/anonstream/cache NUMBA_CACHE_DIR=/var/lib/anonstream/cache/numba

WORKDIR /app
COPY pyproject.toml README.md ./
COPY core ./core
COPY stream ./stream
COPY db ./db
COPY migrations ./migrations
# Compile every engine's numba kernels at build time, so no engine compiles inside its time budget.
RUN pip install . \
    && useradd --system --uid 10001 --home-dir /var/lib/anonstream --create-home anonstream \
    && anonstream warmup \
    && chown -R anonstream /var/lib/anonstream/cache

USER anonstream
WORKDIR /var/lib/anonstream
EXPOSE 6066
CMD ["anonstream", "run", "--no-migrate"]
