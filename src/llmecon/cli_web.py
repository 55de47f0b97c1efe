"""``llmecon web``: serve the JSON API and the page (extra ``[web]``). Thin: it only starts uvicorn."""

from __future__ import annotations

from typing import Annotated

import typer

from .cli import _fail, app


@app.command("web")
def web_cmd(
    host: Annotated[str, typer.Option("--host", help="Address to bind; the default serves this machine only.")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8000,
) -> None:
    """Serve the web page (live plots of a deployment) and its JSON API (OpenAPI at /openapi.json)."""
    if not 1 <= port <= 65535:
        _fail(f"--port {port}: must be 1-65535, e.g. --port 8000")
    try:
        import uvicorn

        from .web import create_app

        application = create_app()
    except ImportError as exc:
        _fail(f"llmecon web needs the [web] extra ({exc.name} is missing): pip install -e '.[web]'")
    typer.echo(f"llmecon web: open http://{host}:{port}/ (API schema at /openapi.json); Ctrl-C stops it")
    uvicorn.run(application, host=host, port=port, log_level="warning")
