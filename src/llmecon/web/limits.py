"""Bounds on what one client can make the web server do (issue 31, item 2): a request-size limit
(413), a Host-header allow-list (DNS rebinding), a concurrency limit on the CPU-heavy endpoints
(503) and an idle-connection timeout. Each is a small ASGI middleware or a uvicorn protocol
subclass, so the endpoints themselves are untouched.

Measured before these bounds (commit 1c3b70d, issue 31): a 100 MB ``model`` string took 57.8 s and
4.14 GB and blocked every other request; 100k unknown keys took 7.4 s and answered 8 MB; four
heaviest ``/api/plan`` at once peaked at 6.0 GB; a half-open connection was held for ever.
"""

from __future__ import annotations

import asyncio
import json

#: the largest request body accepted. The largest valid body of the schema (a /api/plan with six
#: systems, a TCO object and 16 acceptances, pretty-printed) is under 2 kB; 64 KiB leaves room
#: for any client's formatting and keeps the worst parse under a few ms.
MAX_BODY_BYTES = 64 * 1024

#: endpoints whose work is seconds of CPU and up to ~1.5 GB (the planner, the frontier, the
#: simulator, a training run); at most HEAVY_CONCURRENCY of them run at once, the rest get a 503.
HEAVY_PATHS = frozenset({"/api/plan", "/api/simulate", "/api/train", "/api/analyze", "/api/context"})
#: two at once: the CI machine has two cores, and two heaviest plans peak near 3 GB
HEAVY_CONCURRENCY = 2
#: requests that may wait for a slot (the page sends six heavy requests when it loads), and for how long;
#: a request beyond the queue, or one that waited HEAVY_WAIT_S, gets the 503
HEAVY_QUEUE = 8
HEAVY_WAIT_S = 60.0

#: seconds a connection may stay silent (no request, or a request's headers or body stalled) before
#: the server closes it (uvicorn's keep-alive timeout alone does not cover a connection that never
#: completes a request: a half-open connection was held for ever)
IDLE_TIMEOUT_S = 15.0

#: longest name accepted in a catalogue-name field (model, system, provider, ...); the longest name
#: in the catalogue is under 40 characters. Checked before any fuzzy matching (did-you-mean is
#: quadratic in the length), and an error quotes at most QUOTE_CHARS of what was sent.
MAX_NAME_CHARS = 100
QUOTE_CHARS = 40


def quote(text: str) -> str:
    """``repr`` of a client's string, cut to QUOTE_CHARS characters with its full length said."""
    if len(text) <= QUOTE_CHARS:
        return repr(text)
    return f"{text[:QUOTE_CHARS]!r}... ({len(text):,} characters)"


async def _send_json(send, status: int, detail, headers: tuple = ()) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


def _detail(field: str, msg: str, kind: str) -> list[dict]:
    return [{"loc": [field], "msg": msg, "type": kind}]


class BodyLimit:
    """413 for a body over ``max_bytes``: by its Content-Length before reading, else (chunked) as
    soon as the bytes read pass it; the app never sees an oversized body."""

    def __init__(self, app, max_bytes: int = MAX_BODY_BYTES):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        too_big = _detail("body", f"the request body is larger than the server's limit of {self.max_bytes:,} "
                                  "bytes; send a smaller body (every valid request is a few kB)", "request_too_large")
        length = dict(scope.get("headers", ())).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            return await _send_json(send, 413, too_big, ((b"connection", b"close"),))
        chunks, total, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return await self.app(scope, _replay([message]), send)
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > self.max_bytes:
                return await _send_json(send, 413, too_big, ((b"connection", b"close"),))
            chunks.append(chunk)
            more = message.get("more_body", False)
        await self.app(scope, _replay([{"type": "http.request", "body": b"".join(chunks), "more_body": False}],
                                      receive), send)


def _replay(messages: list, then=None):
    async def receive():
        if messages:
            return messages.pop(0)
        if then is not None:
            return await then()
        return {"type": "http.disconnect"}
    return receive


class HostAllowList:
    """400 unless the Host header names this server (DNS rebinding: a page on evil.example whose
    name resolves to 127.0.0.1 would otherwise read the API from a browser on this machine).
    ``hosts`` are names without port; ``None`` allows any (a wildcard bind)."""

    def __init__(self, app, hosts: frozenset[str] | None):
        self.app, self.hosts = app, hosts

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or self.hosts is None:
            return await self.app(scope, receive, send)
        host = _host_name(dict(scope.get("headers", ())).get(b"host", b"").decode("latin-1"))
        if host not in self.hosts:
            return await _send_json(send, 400, _detail(
                "host", f"Host {quote(host)} is not one this server answers to ({', '.join(sorted(self.hosts))}); "
                        "open the address llmecon web printed, or start it with --host set to the name you use",
                "host_not_allowed"))
        await self.app(scope, receive, send)


def _host_name(header: str) -> str:
    """'example.org:8000' -> 'example.org'; '[::1]:8000' -> '::1'."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def allowed_hosts(bind: str) -> frozenset[str] | None:
    """Host names a server bound to ``bind`` answers to: the address itself and, for a loopback
    bind, every loopback spelling; ``None`` (any) for a wildcard bind (0.0.0.0, ::), which serves
    every name the machine has (the CLI warns about it)."""
    import ipaddress

    bind = bind.strip().lower().strip("[]")
    if bind in ("0.0.0.0", "::", ""):
        return None
    names = {bind}
    try:
        loopback = ipaddress.ip_address(bind).is_loopback
    except ValueError:
        loopback = bind == "localhost"
    if loopback:
        names |= {"localhost", "127.0.0.1", "::1"}
    return frozenset(names)


class HeavyLimit:
    """At most ``limit`` requests to HEAVY_PATHS run at once and at most ``queue`` wait for a slot (no
    CPU: a poll of the count, loop-agnostic); one more, or one that waited ``wait_s``, is a 503 naming
    the limit (with Retry-After), answered at once rather than queued behind minutes of CPU."""

    def __init__(self, app, limit: int = HEAVY_CONCURRENCY, queue: int = HEAVY_QUEUE, wait_s: float = HEAVY_WAIT_S):
        self.app, self.limit, self.queue, self.wait_s = app, limit, queue, wait_s
        self.active = self.waiting = 0

    async def _busy(self, send) -> None:
        await _send_json(send, 503, _detail(
            "server", f"busy: {self.limit} requests to the CPU-heavy endpoints (plan, simulate, train, analyze, "
                      f"context) are running and {self.waiting} waiting, the server's concurrency limit; retry in a "
                      "few seconds", "too_many_requests"), ((b"retry-after", b"2"),))

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("path") not in HEAVY_PATHS or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        if self.active >= self.limit:
            if self.waiting >= self.queue:
                return await self._busy(send)
            self.waiting += 1
            try:
                loop = asyncio.get_running_loop()
                deadline = loop.time() + self.wait_s
                while self.active >= self.limit and loop.time() < deadline:
                    await asyncio.sleep(0.02)
            finally:
                self.waiting -= 1
            if self.active >= self.limit:
                return await self._busy(send)
        self.active += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1


def idle_timeout_protocol(idle_s: float = IDLE_TIMEOUT_S):
    """uvicorn's h11 protocol with a timer, armed on connect and re-armed on every read, that closes
    a connection silent for ``idle_s`` unless the app is working on its request (a request whose
    body has arrived). uvicorn alone times out only idle keep-alive connections after a response."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class IdleTimeoutH11(H11Protocol):
        _idle = None

        def connection_made(self, transport):
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._arm()

        def connection_lost(self, exc):
            if self._idle is not None:
                self._idle.cancel()
            super().connection_lost(exc)

        def _arm(self):
            if self._idle is not None:
                self._idle.cancel()
            self._idle = asyncio.get_running_loop().call_later(idle_s, self._fire)

        def _fire(self):
            working = (self.cycle is not None and not self.cycle.response_complete
                       and self.conn.their_state in (h11.DONE, h11.MUST_CLOSE))
            if working:
                return self._arm()
            if not self.transport.is_closing():
                self.transport.close()

    return IdleTimeoutH11
