"""``llmecon web``: serve the JSON API and the page (extra ``[web]``). Thin: it only starts uvicorn."""

from __future__ import annotations

from typing import Annotated

import typer

from .options import _fail, app


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

        from ..web import create_app
        from ..web.limits import allowed_hosts, idle_timeout_protocol

        application = create_app(allowed_hosts=allowed_hosts(host))
    except ImportError as exc:
        _fail(f"llmecon web needs the [web] extra ({exc.name} is missing): pip install -e '.[web]'")
    sock = _bind(host, port)  # bound before announcing: a taken port is a one-line error, not a traceback
    if not _local(host):
        typer.echo(f"warning: --host {host} serves the API beyond this machine, and it has no authentication: "
                   "anyone who can reach the port can use it (and its CPU); use --host 127.0.0.1 unless that is "
                   "what you want (any Host header is accepted on a wildcard bind)", err=True)
    typer.echo(f"llmecon web: open http://{host}:{port}/ (API schema at /openapi.json); Ctrl-C stops it")
    # idle connections closed (web.limits.IDLE_TIMEOUT_S); at most 64 open connections (uvicorn answers 503 beyond)
    server = uvicorn.Server(uvicorn.Config(application, log_level="warning", http=idle_timeout_protocol(),
                                           limit_concurrency=64))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def _local(host: str) -> bool:
    """Whether ``host`` is a loopback address (reachable from this machine only)."""
    import ipaddress
    import socket

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(ipaddress.ip_address(info[4][0]).is_loopback for info in socket.getaddrinfo(host, None))
        except (OSError, ValueError):
            return False


def _bind(host: str, port: int):
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        _fail(f"--host {host}: cannot resolve it ({exc.strerror}); use an address such as 127.0.0.1")
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        _fail(f"--port {port}: cannot listen on {host}:{port} ({exc.strerror}); pick another port, e.g. "
              f"--port {port + 1 if port < 65535 else 8000}")
    return sock
