"""The operator console: a small aiohttp app beside the worker (HTML pages + a JSON API behind each).

Start it standalone with ``anonstream console [--port 6067]`` (against the configured database), or
in-process from the worker or the demo::

    from stream.console.server import start_console

    runner = await start_console(settings, db, status_provider=lambda: service.stats)
    ...                      # serve until shutdown
    await runner.cleanup()   # stop it

A synchronous caller (such as ``anonstream demo``) can use a background thread instead::

    from stream.console.server import ConsoleThread

    with ConsoleThread(settings, port=6067) as console:
        print("console on", console.url)
        ...

See docs/console.md for the pages, the API, the controls and their token. This package's ``__init__``
imports nothing, so its modules can import one another without a circle through it.
"""
