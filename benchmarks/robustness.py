"""Robustness and streaming figures (issues 31 and 36 item 4), each printed against its target.

    python benchmarks/robustness.py [--rows 100000 1000000] [--skip-web] [--skip-before]

1. ``llmecon predict CASES.csv --out OUT.csv`` and ``--out OUT.parquet`` at each row count, each in a fresh
   process: peak resident memory (ru_maxrss), wall and CPU seconds, rows per CPU-second (target: >= 200k
   rows/s at 10^6 rows, memory flat in rows). Beside it, the in-memory path of commit 1c3b70d (the library
   calls ``predict_cases`` + ``write_cases`` that ``predict --out`` made then) at the smallest row count,
   measured in the same run. Cases: ``predict_speed.cases_csv``'s mix (4 models x 2 systems x plans x
   decode/prefill/serving, seed 0).
2. The web server (uvicorn on 127.0.0.1, the ``llmecon web`` configuration): latency of a small request
   (POST /api/step) alone, then while a client streams a 100 MB body that the server refuses (413).

Rates are per CPU-second of the measured process (the CI machine is shared: wall time includes other
engineers' load; both are printed).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

CHILD = """
import resource, sys, time
t0 = time.perf_counter()
{body}
u = resource.getrusage(resource.RUSAGE_SELF)
print("RESULT", time.perf_counter() - t0, u.ru_utime + u.ru_stime, u.ru_maxrss * 1024, file=sys.stderr)
"""
CLI = """
from llmecon.cli import main
sys.argv = ["llmecon", "predict", {cases!r}, "--out", {out!r}, "--json"]
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
"""
BEFORE = """
from llmecon.fidelity.predict import predict_cases, read_cases, write_cases
write_cases(predict_cases(read_cases({cases!r})), {out!r})
"""


def write_cases_file(path: Path, n: int) -> None:
    sys.path.insert(0, str(HERE))
    from predict_speed import cases_csv

    step = 100_000
    with open(path, "w") as f:
        for i in range(0, n, step):
            text = cases_csv(min(step, n - i), seed=i)
            f.write(text if i == 0 else text.split("\n", 1)[1])


def child(body: str) -> tuple[float, float, float]:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-c", CHILD.format(body=body)], capture_output=True, text=True, env=env)
    if proc.returncode:
        raise SystemExit(f"child failed: {proc.stderr[-2000:]}")
    line = next(x for x in proc.stderr.splitlines() if x.startswith("RESULT"))
    wall, cpu, rss = map(float, line.split()[1:])
    return wall, cpu, rss


def predict_section(rows: list[int], before: bool) -> None:
    print("predict (fresh process each; peak RSS = ru_maxrss)")
    print(f"  {'rows':>9} {'output':<8} {'peak RSS':>9} {'wall s':>7} {'CPU s':>7} {'rows/CPU-s':>11}")
    with tempfile.TemporaryDirectory() as d:
        results = {}
        for n in rows:
            cases = Path(d) / f"cases_{n}.csv"
            write_cases_file(cases, n)
            for fmt in ("csv", "parquet"):
                out = Path(d) / f"out_{n}.{fmt}"
                wall, cpu, rss = child(CLI.format(cases=str(cases), out=str(out)))
                results[n, fmt] = (rss, cpu)
                print(f"  {n:>9,} {fmt:<8} {rss / 1e6:>7.0f} MB {wall:>7.2f} {cpu:>7.2f} {n / cpu:>11,.0f}")
            if before and n == min(rows):
                wall, cpu, rss = child(BEFORE.format(cases=str(cases), out=str(Path(d) / "before.csv")))
                print(f"  {n:>9,} {'csv':<8} {rss / 1e6:>7.0f} MB {wall:>7.2f} {cpu:>7.2f} {n / cpu:>11,.0f}"
                      "   <- in-memory path of commit 1c3b70d, same run")
            cases.unlink()
        big, small = max(rows), min(rows)
        for fmt in ("csv", "parquet"):
            rate = big / results[big, fmt][1]
            growth = results[big, fmt][0] / results[small, fmt][0]
            print(f"  {fmt}: {rate:,.0f} rows/CPU-s at {big:,} rows -> {'meets' if rate >= 200e3 else 'MISSES'} the "
                  f"200k target; peak RSS x{growth:.2f} from {small:,} to {big:,} rows "
                  f"({'flat' if growth < 1.5 else 'GROWS'})")


def _post(port: int, path: str, body: dict) -> tuple[int | None, float]:
    """(HTTP status, seconds) of one request on a fresh connection; a server that answers before the
    whole body is sent (413) and closes is read, not an error."""
    data = json.dumps(body).encode()
    t0 = time.perf_counter()
    reply = b""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as c:
        try:
            c.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
        except OSError:
            pass
        try:
            while chunk := c.recv(65536):
                reply += chunk
        except OSError:
            pass
    return (int(reply.split(b" ", 2)[1]) if reply else None), time.perf_counter() - t0


def _huge(port: int, size: int, out: dict) -> None:
    """Stream a ``size``-byte chunked body; record the status and how much was sent before the answer."""
    t0 = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as c:
        c.sendall(b"POST /api/analyze HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        piece = b"%x\r\n" % (1 << 20) + b" " * (1 << 20) + b"\r\n"
        sent = 0
        try:
            while sent < size:
                c.sendall(piece)
                sent += 1 << 20
        except OSError:
            pass
        try:
            reply = c.recv(200)
        except OSError:
            reply = b""
    out.update(status=int(reply.split(b" ", 2)[1]) if reply else None, sent=sent, seconds=time.perf_counter() - t0)


def web_section() -> None:
    import uvicorn

    from llmecon.web import create_app
    from llmecon.web.limits import allowed_hosts, idle_timeout_protocol

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(allowed_hosts=allowed_hosts("127.0.0.1")), log_level="error",
                                           http=idle_timeout_protocol(), limit_concurrency=64))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    small = {"model": "llama-3.1-8b", "system": "hgx-h100", "batch": 8, "context": 2048}
    _post(port, "/api/step", small)  # warm
    alone = [_post(port, "/api/step", small)[1] for _ in range(20)]
    huge: dict = {}
    t = threading.Thread(target=_huge, args=(port, 100 << 20, huge))
    t.start()
    during = []
    while t.is_alive() and len(during) < 200:
        during.append(_post(port, "/api/step", small)[1])
    t.join()
    big_cl = _post(port, "/api/analyze", {"model": "x" * (100 << 20)})
    server.should_exit = True
    print("web server (loopback, POST /api/step llama-3.1-8b on hgx-h100)")
    print(f"  small request alone: median {statistics.median(alone) * 1e3:.1f} ms, max {max(alone) * 1e3:.1f} ms "
          f"({len(alone)} requests)")
    if during:
        print(f"  while a 100 MB chunked body is refused: median {statistics.median(during) * 1e3:.1f} ms, max "
              f"{max(during) * 1e3:.1f} ms ({len(during)} requests)")
    print(f"  the 100 MB chunked body: HTTP {huge.get('status')} after {huge.get('sent', 0) / 1e6:.1f} MB sent, "
          f"{huge.get('seconds', 0):.2f} s")
    print(f"  a 100 MB model name with Content-Length: HTTP {big_cl[0]} in {big_cl[1]:.2f} s (before: 57.8 s, 4.14 GB, "
          "a 100 MB 422; issue 31)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--skip-web", action="store_true")
    ap.add_argument("--skip-before", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(SRC))
    from _machine import cpu_name

    print(f"robustness: {cpu_name()}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    predict_section(sorted(args.rows), not args.skip_before)
    if not args.skip_web:
        web_section()


if __name__ == "__main__":
    main()
