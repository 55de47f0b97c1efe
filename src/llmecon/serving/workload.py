"""Request streams for the serving simulator: arrival processes, length distributions, traces.

Everything random draws from one ``numpy.random.Generator`` seeded by the caller, so a workload
is a pure function of its arguments and the seed.

Arrival processes (inter-arrival times X, rate lambda = 1/E[X]):
* ``poisson``  X ~ Exp(lambda)                      (memoryless; coefficient of variation 1)
* ``gamma``    X ~ Gamma(k = 1/cv^2, theta = cv^2/lambda)  (cv > 1 bursty, < 1 smoother;
  the renewal model of bursty LLM traffic used by e.g. AlpaServe, Li et al. OSDI 2023)
* ``constant`` X = 1/lambda                          (deterministic)
Traces replay recorded arrivals from CSV or JSONL with columns ``arrival_s``, ``prompt_tokens``,
``output_tokens`` and optional ``class`` and ``prefix_id``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field as dataclass_field, replace
from pathlib import Path

import numpy as np

from ..errors import SpecError, did_you_mean, require_number, require_whole

ARRIVALS = ("poisson", "gamma", "constant")
MAX_LENGTH_TOKENS = 1 << 40  # no request is longer (10^12 tokens); keeps lengths and their sums inside int64
TRACE_REQUIRED = ("arrival_s", "prompt_tokens", "output_tokens")
TRACE_OPTIONAL = ("class", "prefix_id")


@dataclass(frozen=True, kw_only=True)
class Workload:
    """One request per index, sorted by arrival. ``output_tokens`` >= 1 counts the first token
    (made by prefill). ``class_id`` indexes ``class_names``; ``prefix_id`` -1 means none.
    ``length_fields`` names the inputs the prompt and output lengths came from (``parse_lengths``'
    fields for a synthetic workload, ``trace`` for a replayed one), for errors about them."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    class_id: np.ndarray
    class_names: tuple[str, ...] = ("default",)
    prefix_id: np.ndarray | None = None
    duration_s: float | None = None
    source: str = ""
    length_fields: tuple[str, str] = ("prompt_tokens", "output_tokens")

    def __post_init__(self) -> None:
        arr = np.asarray(self.arrival_s, dtype=float)
        n = arr.shape[0] if arr.ndim == 1 else -1
        fields = {"arrival_s": arr, "prompt_tokens": np.asarray(self.prompt_tokens),
                  "output_tokens": np.asarray(self.output_tokens), "class_id": np.asarray(self.class_id)}
        if self.prefix_id is not None:
            fields["prefix_id"] = np.asarray(self.prefix_id)
        for name, a in fields.items():
            if a.ndim != 1 or a.shape[0] != n:
                raise SpecError(f"must be a 1-D array of {max(n, 0)} values (one per request), got shape {a.shape}",
                                field=name, value=a, show_value=False)
        if n and (not np.all(np.isfinite(arr)) or arr.min() < 0 or np.any(np.diff(arr) < 0)):
            raise SpecError("must be finite, >= 0 and sorted ascending", field="arrival_s", value=arr, show_value=False,
                            fix="sort the trace by time")
        for name in ("prompt_tokens", "output_tokens"):
            a = fields[name]
            if n and (not np.issubdtype(a.dtype, np.integer) or a.min() < 1):
                raise SpecError(f"must be whole numbers >= 1, got min {a.min()!r}", field=name, value=a,
                                show_value=False)
        cid = fields["class_id"]
        if n and (not np.issubdtype(cid.dtype, np.integer) or cid.min() < 0 or cid.max() >= len(self.class_names)):
            raise SpecError(f"must index class_names ({len(self.class_names)} classes)", field="class_id", value=cid,
                            show_value=False)
        for name, a in fields.items():
            object.__setattr__(self, name, a)

    @property
    def n(self) -> int:
        return int(self.arrival_s.shape[0])

    def require_within_context(self, max_context: int, *, model_name: str) -> None:
        """Every request fits the model's context: prompt + output <= ``max_context`` tokens (vLLM's
        rule, prompt + max_tokens <= max_model_len: the last output token is never fed back, so a
        request holds at most prompt + output - 1 tokens). ``max_context`` 0 (unknown) checks
        nothing. Raises SpecError naming the input the lengths came from (``length_fields``)."""
        if not max_context or not self.n:
            return
        total = self.prompt_tokens + self.output_tokens
        bad = np.nonzero(total > max_context)[0]
        if not bad.size:
            return
        i = int(bad[0])
        p, o = int(self.prompt_tokens[i]), int(self.output_tokens[i])
        rule = (f"{bad.size:,} of {self.n:,} requests longer than {model_name}'s {max_context:,}-token context "
                f"(prompt + output; max_position_embeddings), the first at {self.arrival_s[i]:.6g} s: prompt {p:,} + "
                f"output {o:,} = {p + o:,} tokens")
        prompt_field, output_field = self.length_fields
        if prompt_field == output_field:  # a trace: both columns come from one file
            raise SpecError(rule, field=prompt_field, fix=f"drop or shorten those requests (prompt_tokens + "
                                                          f"output_tokens <= {max_context:,})")
        field = prompt_field if p >= max_context else output_field
        raise SpecError(rule, field=field, fix=f"keep {{{prompt_field}}} + {{{output_field}}} <= {max_context:,} "
                                               "tokens (a distribution's LOW:HIGH bounds cap its samples)")

    @property
    def rate_per_s(self) -> float:
        """Arrivals per second over the workload's duration (or span of arrivals)."""
        span = self.duration_s or (float(self.arrival_s[-1]) if self.n else 0.0)
        return self.n / span if span > 0 else math.nan


# ---- arrival processes -----------------------------------------------------------------------


def arrival_times(kind: str, *, rate_per_s: float, rng: np.random.Generator, n: int | None = None,
                  duration_s: float | None = None, cv: float = 1.0) -> np.ndarray:
    """Arrival times of ``n`` requests, or of all requests before ``duration_s``."""
    if kind not in ARRIVALS:
        raise SpecError(f"unknown process '{kind}'{did_you_mean(kind, ARRIVALS)}", field="arrival", value=kind,
                        show_value=False, fix=f"use one of {', '.join(ARRIVALS)}")
    rate = require_number("rate", rate_per_s, minimum=0, exclusive=True, hint="requests per second")
    if kind == "gamma":
        require_number("cv", cv, minimum=0, exclusive=True, hint="coefficient of variation of inter-arrival times")
    if (n is None) == (duration_s is None):
        raise SpecError("give exactly one of n (requests) or duration_s (seconds)")

    def gaps(m: int) -> np.ndarray:
        if kind == "poisson":
            return rng.exponential(1.0 / rate, m)
        if kind == "gamma":
            shape = 1.0 / cv ** 2
            return rng.gamma(shape, 1.0 / (rate * shape), m)
        return np.full(m, 1.0 / rate)

    if n is not None:
        require_whole("requests", n, minimum=0)
        return np.cumsum(gaps(int(n))) if kind != "constant" else np.arange(int(n)) / rate
    dur = require_number("duration", duration_s, minimum=0, exclusive=True, hint="seconds")
    if kind == "constant":
        return np.arange(int(math.ceil(dur * rate))) / rate
    chunks, t = [], 0.0
    block = max(16, int(dur * rate * 1.1) + 16)
    while t < dur:
        c = t + np.cumsum(gaps(block))
        chunks.append(c)
        t = float(c[-1])
    times = np.concatenate(chunks)
    return times[times < dur]


# ---- length distributions --------------------------------------------------------------------


def _parameter(what: str, value, *, minimum: float, hint: str = "") -> float:
    """``require_number`` for a parameter with no input field of its own (a distribution's median,
    a class's share): the error names ``what`` in its rule, and front-ends spell no flag for it."""
    try:
        return require_number(what, value, minimum=minimum, hint=hint)
    except SpecError as exc:
        raise SpecError(f"{what}: {exc.rule}", value=value, show_value=False, fix=exc.fix) from None


@dataclass(frozen=True, kw_only=True)
class Lengths:
    """Token-length distribution: ``fixed`` (value), ``uniform`` (low..high inclusive), ``lognormal``
    (median, sigma of log; rounded, clipped to [low, high]), ``empirical`` (resampled values)."""

    kind: str
    value: int = 0
    low: int = 1
    high: int = 1 << 30
    median: float = 0.0
    sigma: float = 0.0
    values: tuple[int, ...] = ()
    # the input it was parsed from (``parse_lengths``), named in errors about its samples; not part of equality
    field: str = dataclass_field(default="", compare=False)

    KINDS = ("fixed", "uniform", "lognormal", "empirical")

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise SpecError(f"length distribution '{self.kind}'{did_you_mean(self.kind, self.KINDS)}: use one of "
                            f"{', '.join(self.KINDS)}", value=self.kind, show_value=False)
        if self.kind == "fixed" and not (isinstance(self.value, (int, np.integer)) and self.value >= 1):
            raise SpecError(f"fixed length: must be a whole number >= 1, got {self.value!r}", value=self.value,
                            show_value=False)
        if not (1 <= self.low <= self.high):
            raise SpecError(f"length bounds: need 1 <= low <= high, got low {self.low}, high {self.high}")
        if self.kind == "lognormal":
            _parameter("lognormal median", self.median, minimum=1, hint="tokens")
            _parameter("lognormal sigma", self.sigma, minimum=0)
        if self.kind == "empirical" and (not self.values or min(self.values) < 1):
            raise SpecError("empirical lengths: need at least one value, all >= 1")

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if self.kind == "fixed":
            return np.full(n, int(self.value), dtype=np.int64)
        if self.kind == "uniform":
            return rng.integers(self.low, self.high + 1, n, dtype=np.int64)
        if self.kind == "lognormal":
            x = np.rint(rng.lognormal(math.log(self.median), self.sigma, n))
            return np.clip(x, self.low, self.high).astype(np.int64)
        return rng.choice(np.asarray(self.values, dtype=np.int64), n, replace=True)


def fixed(value: int) -> Lengths:
    return Lengths(kind="fixed", value=int(value))


def uniform(low: int, high: int) -> Lengths:
    return Lengths(kind="uniform", low=int(low), high=int(high))


def lognormal(median: float, sigma: float, *, low: int = 1, high: int = 1 << 30) -> Lengths:
    return Lengths(kind="lognormal", median=float(median), sigma=float(sigma), low=int(low), high=int(high))


def empirical(values) -> Lengths:
    return Lengths(kind="empirical", values=tuple(int(v) for v in np.asarray(values).ravel()))


def parse_lengths(text: str, *, field: str) -> Lengths:
    """CLI form: ``512`` | ``fixed:512`` | ``uniform:64:1024`` | ``lognormal:MEDIAN:SIGMA``."""
    parts = str(text).split(":")
    try:
        if len(parts) == 1:
            n = int(parts[0])
            if abs(n) > MAX_LENGTH_TOKENS:  # int64 arrays of lengths (and their sums) must not overflow
                raise SpecError(f"must be at most {MAX_LENGTH_TOKENS:,} tokens", field=field, value=n)
            return replace(fixed(n), field=field)
        kind, args = parts[0], [float(p) for p in parts[1:]]
        if any(not math.isfinite(a) or abs(a) > MAX_LENGTH_TOKENS for a in args):
            raise SpecError(f"every number must be finite and at most {MAX_LENGTH_TOKENS:,} tokens", field=field,
                            value=repr(text))
        if kind == "fixed" and len(args) == 1 and args[0].is_integer():
            return replace(fixed(int(args[0])), field=field)
        if kind == "uniform" and len(args) == 2 and all(a.is_integer() for a in args):
            return replace(uniform(int(args[0]), int(args[1])), field=field)
        if kind == "lognormal" and len(args) in (2, 4):
            extra = {} if len(args) == 2 else {"low": int(args[2]), "high": int(args[3])}
            return replace(lognormal(args[0], args[1], **extra), field=field)
    except SpecError as exc:
        if exc.field == field:  # the bound above, said as such
            raise
    except ValueError:
        pass
    raise SpecError("expected N, fixed:N, uniform:LOW:HIGH or lognormal:MEDIAN:SIGMA[:LOW:HIGH] (whole token counts), "
                    "e.g. lognormal:512:1.0", field=field, value=repr(text))  # shown quoted: the value is text


# ---- synthetic workloads ---------------------------------------------------------------------


def synthetic(*, rate_per_s: float, prompt: Lengths, output: Lengths, seed: int = 0, n: int | None = None,
              duration_s: float | None = None, arrival: str = "poisson", cv: float = 1.0,
              classes: dict[str, float] | None = None) -> Workload:
    """A seeded synthetic workload. ``classes`` maps class name -> share of requests (sums to 1)."""
    rng = np.random.default_rng(require_whole("seed", seed, minimum=0))
    t = arrival_times(arrival, rate_per_s=rate_per_s, rng=rng, n=n, duration_s=duration_s, cv=cv)
    m = t.shape[0]
    names: tuple[str, ...] = ("default",)
    cid = np.zeros(m, dtype=np.int64)
    if classes:
        names = tuple(classes)
        p = np.asarray([_parameter(f"class share '{k}'", v, minimum=0) for k, v in classes.items()])
        if not math.isclose(p.sum(), 1.0, rel_tol=1e-9):
            raise SpecError(f"class shares: must sum to 1, got {p.sum():g}")
        cid = rng.choice(len(names), m, p=p).astype(np.int64)
    desc = f"{arrival} {rate_per_s:g}/s" + (f" cv {cv:g}" if arrival == "gamma" else "")
    return Workload(arrival_s=t, prompt_tokens=prompt.sample(m, rng), output_tokens=output.sample(m, rng),
                    class_id=cid, class_names=names, duration_s=duration_s, source=desc,
                    length_fields=(prompt.field or "prompt_tokens", output.field or "output_tokens"))


# ---- traces ----------------------------------------------------------------------------------


def _check_columns(columns, where: str) -> None:
    known = TRACE_REQUIRED + TRACE_OPTIONAL
    for c in columns:
        if c not in known:
            raise SpecError(f"trace {where}: unknown column '{c}'{did_you_mean(c, known)}",
                            fix=f"columns are {', '.join(known)}")
    missing = [c for c in TRACE_REQUIRED if c not in columns]
    if missing:
        raise SpecError(f"trace {where}: missing column(s) {', '.join(missing)}",
                        fix=f"required: {', '.join(TRACE_REQUIRED)}")


def _rows(path: Path, max_memory_bytes: float | None) -> list[dict]:
    from ..files import csv_rows, parse_json, read_text

    where = str(path)
    if path.suffix.lower() not in (".csv", ".jsonl", ".ndjson"):
        raise SpecError("use a .csv or .jsonl file", field="trace", value=where)
    text = read_text(path, field="trace", what="trace", error=SpecError)
    if max_memory_bytes is not None:  # sized by its lines before parsing: a row parses to ~40x its text
        from .budget import require_memory, simulation_bytes

        lines = text.count("\n") + 1
        require_memory(simulation_bytes(requests=lines, trace_rows=lines), max_memory_bytes,
                       what=f"a trace of {lines:,} lines at ~3.8 kB per request", fix="replay a shorter trace")
    if path.suffix.lower() == ".csv":
        header, rows = csv_rows(text, f"trace {where}")
        if header is None:
            raise SpecError(f"trace {where}: empty file",
                            fix=f"expected a header row with {', '.join(TRACE_REQUIRED)}")
        _check_columns([c.strip() for c in header], where)
        return [{k.strip(): v for k, v in row.items() if k is not None} for row in rows]
    rows = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        obj = parse_json(line, f"trace {where} line {i}")
        if not isinstance(obj, dict):
            raise SpecError(f"trace {where} line {i}: expected a JSON object per line")
        _check_columns(list(obj), f"{where} line {i}")
        rows.append(obj)
    return rows


def _num(row: dict, key: str, i: int, where: str, *, integer: bool, minimum: float):
    raw = row.get(key)
    try:
        v = float(raw)
    except (TypeError, ValueError):
        raise SpecError(f"trace {where} row {i}: {key} {raw!r} is not a number") from None
    if not math.isfinite(v) or v < minimum or (integer and not v.is_integer()):
        kind = "a whole number" if integer else "a finite number"
        raise SpecError(f"trace {where} row {i}: {key} must be {kind} >= {minimum:g}, got {raw!r}")
    return int(v) if integer else v


def load_trace(path: str | Path, *, time_scale: float = 1.0, max_memory_bytes: float | None = None) -> Workload:
    """Replay a trace (CSV or JSONL). Rows are sorted by arrival (stable); arrivals are shifted so
    the first is at 0 and divided by ``time_scale`` (2 = replay twice as fast). ``max_memory_bytes``:
    refuse, before parsing, a trace whose simulation would need more (``budget``)."""
    p = Path(path)
    require_number("time_scale", time_scale, minimum=0, exclusive=True)
    rows = _rows(p, max_memory_bytes)
    if not rows:
        raise SpecError(f"trace {path}: no requests")
    where = str(path)
    t = np.asarray([_num(r, "arrival_s", i, where, integer=False, minimum=0) for i, r in enumerate(rows, 1)])
    prompt = np.asarray([_num(r, "prompt_tokens", i, where, integer=True, minimum=1) for i, r in enumerate(rows, 1)],
                        dtype=np.int64)
    out = np.asarray([_num(r, "output_tokens", i, where, integer=True, minimum=1) for i, r in enumerate(rows, 1)],
                     dtype=np.int64)
    labels = [str(r.get("class") or "default") for r in rows]
    names = tuple(dict.fromkeys(labels))
    index = {n: k for k, n in enumerate(names)}
    cid = np.asarray([index[x] for x in labels], dtype=np.int64)
    prefix = None
    if any(r.get("prefix_id") not in (None, "") for r in rows):
        ids: dict[str, int] = {}
        prefix = np.asarray([-1 if r.get("prefix_id") in (None, "") else ids.setdefault(str(r["prefix_id"]), len(ids))
                             for r in rows], dtype=np.int64)
    order = np.argsort(t, kind="stable")
    t = (t[order] - t[order][0]) / time_scale
    return Workload(arrival_s=t, prompt_tokens=prompt[order], output_tokens=out[order], class_id=cid[order],
                    class_names=names, prefix_id=None if prefix is None else prefix[order],
                    duration_s=None, source=f"trace {p.name}", length_fields=("trace", "trace"))
