"""Step times of a mixed batch, read from ``inference.decode_step`` / ``prefill_step`` (SPEC A1, E20).

``inference`` prices a batch of *identical* sequences. A serving batch mixes sequences at different
context lengths, and prefill chunks beside decodes. Every term of inference's roofline splits
exactly into a per-iteration part that depends only on the number of tokens N in the iteration and
a per-sequence part that is additive over sequences:

* compute  = sum over sequences of their batch-1 compute (matmul FLOPs are linear in tokens,
  attention FLOPs are per sequence) -> ``c(L)`` per decode sequence, ``Fc`` table for prefill,
  less the routed experts' FLOPs on the busiest expert group, which depend on the iteration's N
  (``inference.expert_load``) and enter as ``base_s(N)``;
* memory   = weight reads W(N) (MoE: touched experts depend on N) + per-sequence KV traffic
  ``k(L)`` (read of the cache + write of the new token(s));
* comm     = comm(N) (TP all-reduces, EP all-to-alls, PP hops: functions of N only).

step_s = max(compute, memory, comm), inference's perfect-overlap lower bound. The per-sequence
parts are taken from inference's own ``StepResult`` at batch 1 (memory minus the weight-read time
``weight_bytes_per_chip/BW``, compute minus ``routed_compute_s``), the per-iteration parts from a
decode step at batch N and context 0.
For identical sequences this reproduces ``decode_step``/``prefill_step`` to rounding (tested);
for a mixed batch it *is* the roofline of the sum of the work, which inference cannot express.

Decode per-sequence functions are piecewise linear in L with kinks at the sliding windows and the
DSA top-k; they are stored as ``f0 + sum_j a_j·min(L, theta_j)`` (theta_0 = inf), fitted from
inference at the kinks and verified at construction on random contexts (relative error <= 1e-9,
else ``InternalError``). That form lets the engine keep sums over a batch in O(1) per step.

Speculative decoding (``dep.speculation``; ``serving.speculative``): the verify step's per-sequence
compute and KV time (k+1 queries at L..L+k: kinks also at theta - 1..theta - k) are fitted the same
way (``ver_compute``, ``ver_kv``) and checked against ``step.speculative.verify_of`` at batches 1, 7
and 64; its per-iteration terms are those of n·(k+1) tokens. The draft: MTP, ``draft_share`` = r; a
draft model, ``draft_model`` (its own step model on the target's tp chips, fitted at the union of
both models' kinks, checked against ``step.speculative.draft_s``).

Attention data parallelism (adp > 1): the per-sequence parts are inference's ``balanced`` ones (each
sequence's group-local work spread over the adp groups, the mean group: additive over sequences), so
sums are exact once every group holds its share of the batch. A step with fewer running sequences than
groups, where the busiest group holds one whole sequence (``inference._assemble``), is understated by
up to adp x its attention/KV time: a known gap until the engine keeps per-group sums.

Omitted (as in inference): block granularity of paged KV, kernel launch and scheduler overheads,
sampling; a prefill iteration's time is the roofline of the whole iteration (no per-prompt
kernel inefficiency at short prompts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..spec.deployment import Deployment
from ..errors import LlmeconError, SpecError
from ..step.inference import decode_of, prefill_of

HOST_TIER_KINDS = ("host_dram", "cpu_lpddr")  # memory tiers a preempted sequence's KV may swap to
# token counts beyond the step table are evaluated in aligned blocks of this many (``terms_block``): one
# vectorised call costs about what 10 single ones do (DeepSeek-V3 on GB200: 1.9 ms against 0.22 ms)
BIG_BLOCK = 1 << 13
VERIFY_REL = 1e-9  # tolerance of the piecewise-linear decode fit against inference (checked at build)


class InternalError(RuntimeError):
    """A broken invariant inside the simulator (a bug, not bad input)."""


@dataclass(frozen=True, kw_only=True)
class PiecewiseLinear:
    """f(L) = f0 + sum_j a[j]·min(L, theta[j]); theta[0] = inf (the final slope)."""

    f0: float
    a: tuple[float, ...]
    theta: tuple[float, ...]

    def __call__(self, L):
        L = np.asarray(L, dtype=float)
        out = self.f0 + 0.0 * L
        for a, t in zip(self.a, self.theta):
            out = out + a * (L if math.isinf(t) else np.minimum(L, t))
        return out


def _fit(f, thetas: tuple[float, ...]) -> PiecewiseLinear:
    """Fit the piecewise-linear form of ``f`` (a vectorised function of L) with kinks ``thetas``."""
    # the last slope over a long interval: a difference over 1 token would lose ~1e-12 to rounding
    pts = np.asarray((0.0, *thetas, (thetas[-1] if thetas else 0.0) + float(1 << 20)), dtype=float)
    vals = np.asarray(f(pts), dtype=float)
    slopes = np.diff(vals) / np.diff(pts)  # slope on [pts[i], pts[i+1]]
    a = [float(slopes[-1])]
    for j in range(len(thetas)):
        a.append(float(slopes[j] - slopes[j + 1]))
    return PiecewiseLinear(f0=float(vals[0]), a=tuple(a), theta=(math.inf, *thetas))


def _kinks(dep: Deployment, spec_k: int = 0) -> tuple[float, ...]:
    """Contexts where a decode sequence's KV reads, attention FLOPs or held KV change slope; with
    speculative decoding (k draft tokens) also theta - 1..theta - k, where the verify step's i-th
    query (context L + i) reaches a kink."""
    m = dep.model
    ks = {float(w) for w, _ in m.window_groups() if w}
    ks |= {float(w) for w, _ in m.window_groups(holding_only=True) if w}
    if m.attention.is_sparse:
        k = float(m.attention.index_topk)
        ks |= {k} | {min(w, k) for w in list(ks)}
        # DeepSeek-V4 compressed layers: the top-k of L/r entries saturates at L = r·k
        ks |= {float(r) * k for r in set(m.layer_compress) if r}
    if spec_k:
        ks |= {t - i for t in list(ks) for i in range(1, spec_k + 1) if t - i > 0}
    return tuple(sorted(ks))


def _draft_deployment(dep: Deployment) -> Deployment:
    """A draft model's deployment as ``step.speculative.draft_s`` prices it: the catalogue model on
    the target's tensor-parallel chips (``Plan(tp=dep.plan.tp)``), its own formats, the same profile."""
    from ..catalog.models import get_model
    from ..errors import with_field
    from ..spec.plan import Plan

    try:
        return Deployment(model=get_model(dep.speculation.draft), system=dep.system, plan=Plan(tp=dep.plan.tp),
                          profile=dep.profile)
    except LlmeconError as exc:
        raise with_field(exc, "draft") from None


class StepModel:
    """Exact roofline step times of mixed batches for one deployment (see module docstring).

    ``kv_capacity_bytes`` is the HBM per chip left for KV after the weights, times
    ``hbm_fraction``; ``held`` is the KV one sequence at context L holds per chip.
    """

    override = False
    loop_overhead_s = 0.0  # a calibrated profile's per-iteration serving-loop overhead (in every ``terms``)

    def __init__(self, dep: Deployment, *, hbm_fraction: float = 1.0, max_tokens: int = 1 << 14,
                 thetas: tuple[float, ...] | None = None, draft: bool = False):
        """``thetas`` and ``draft``: a draft model's step model (``draft_model``), fitted at the target's
        kinks so that one ``DecodeSet`` sums both; its HBM is not checked (the draft's weights and KV
        are omitted from memory, as in ``step.speculative``)."""
        self.dep = dep
        self.chips = dep.plan.chips
        self._wscale = 1.0 / dep.system.accelerator.hbm_bandwidth_bytes_per_s  # critical chip's bytes -> s
        free = math.inf if draft else hbm_fraction * dep.system.accelerator.hbm_bytes - dep.weights_per_chip_bytes
        if free <= 0:
            from ..econ.batching import require_fit

            require_fit(dep, batch=1.0, context=1.0)  # raises the standard "does not fit" message
            raise SpecError("leaves no HBM for KV beside the weights", field="hbm_fraction", value=hbm_fraction,
                            fix="raise it")
        self.kv_capacity_bytes = float(free)
        spec = dep.speculation
        self.spec = spec if spec is not None and spec.k > 0 and not draft else None
        self.draft_model = None
        if thetas is None:
            thetas = _kinks(dep, 0 if self.spec is None else self.spec.k)
            if self.spec is not None and not self.spec.is_mtp:
                ddep = _draft_deployment(dep)
                thetas = tuple(sorted(set(thetas) | set(_kinks(ddep))))
                self.draft_model = type(self)(ddep, max_tokens=max_tokens, thetas=thetas, draft=True)
        self.thetas = thetas

        self._fit_decode(thetas)
        self.held = _fit(lambda L: dep.kv_per_sequence_per_chip_bytes(L), thetas)
        self._verify()
        self._tables(max_tokens)
        if self.spec is not None:
            self._fit_verify_step(thetas)
            self._check_verify_step()
        self._prefill_n = 0
        self._pc = self._pkw = self._pkr = np.zeros(1)

    def _fit_decode(self, thetas) -> None:
        """The per-sequence decode functions: compute and KV time of one sequence at context L."""
        def dec(L):
            return self._decode(batch=1.0, context=L)

        self.dec_compute = _fit(lambda L: self._seq_compute(dec(L)), thetas)
        self.dec_kv = _fit(lambda L: self._kv_time(dec(L)), thetas)

    # ---- inference calls -----------------------------------------------------------------------
    def _decode(self, *, batch, context):
        return decode_of(self.dep, batch=batch, context=context, balanced=True)

    def _prefill(self, *, prompt_tokens, cached_tokens):
        return prefill_of(self.dep, batch=1.0, prompt_tokens=prompt_tokens, cached_tokens=cached_tokens,
                          balanced=True)

    def _kv_time(self, r):
        """Memory time minus the weight-read time: the KV traffic's share of the memory term."""
        return np.asarray(r.time.memory_s) - np.asarray(r.weight_bytes_per_chip) * self._wscale

    @staticmethod
    def _seq_compute(r):
        """Compute time minus the busiest expert group's routed FLOPs: the part additive over sequences."""
        return np.asarray(r.time.compute_s) - np.asarray(r.routed_compute_s)

    def _verify(self) -> None:
        hi = max((*self.thetas, 4096.0)) * 4.0
        L = np.concatenate([np.arange(0.0, 64.0), np.random.default_rng(0).uniform(0, hi, 256),
                            np.asarray(self.thetas) + 0.5, [hi * 100.0]])
        r = self._decode(batch=1.0, context=L)
        mem = np.asarray(r.time.memory_s, dtype=float)
        held = np.asarray(self.dep.kv_per_sequence_per_chip_bytes(L), dtype=float)
        # errors relative to the roofline term each part enters (KV time: the whole memory time)
        for name, fit, truth, scale in (("decode compute", self.dec_compute, self._seq_compute(r), r.time.compute_s),
                                        ("decode KV time", self.dec_kv, self._kv_time(r), mem),
                                        ("held KV", self.held, held, held)):
            truth = np.asarray(truth, dtype=float)
            err = np.max(np.abs(fit(L) - truth) / np.maximum(np.abs(np.asarray(scale, dtype=float)), 1e-300))
            if err > VERIFY_REL:
                raise InternalError(f"{name} of {self.dep.model.name} is not piecewise linear at the kinks "
                                    f"{self.thetas}: relative error {err:.2e}")

    # ---- speculative decoding: the verify step's per-sequence parts -----------------------------
    def _verify_step(self, *, batch, context):
        from ..step.speculative import verify_of

        return verify_of(self.dep, batch=batch, context=context, k=self.spec.k, balanced=True)

    def _fit_verify_step(self, thetas) -> None:
        """Per-sequence compute and KV time of the verify step (k+1 queries at contexts L..L+k, the KV
        read once, k+1 tokens' KV written: ``step.speculative.verify_step``); its per-iteration
        terms are those of n·(k+1) tokens (``terms``). The draft: k MTP passes, each
        ``draft_share`` x the plain decode step (``step.speculative.mtp_draft_share``), or k decode
        steps of the draft model (``draft_model``)."""
        def ver(L):
            return self._verify_step(batch=1.0, context=L)

        self.ver_compute = _fit(lambda L: self._seq_compute(ver(L)), thetas)
        self.ver_kv = _fit(lambda L: self._kv_time(ver(L)), thetas)
        self._set_draft_share()

    def _set_draft_share(self) -> None:
        from ..step.speculative import mtp_draft_share

        self.draft_share = mtp_draft_share(self.dep.model) if self.draft_model is None else None

    def uniform_step_s(self, b: int, L):
        """The decode step of b sequences at context L from the fitted parts, without the loop overhead."""
        base, w, x = self.terms(b)
        return np.maximum(np.maximum(base + b * self.dec_compute(L), w + b * self.dec_kv(L)), x) - self.loop_overhead_s

    def _check_draft(self, L, b: int) -> None:
        """A draft model's k steps at b uniform sequences equal ``step.speculative.draft_s``."""
        from ..step.speculative import draft_s

        d = self.dep
        truth = np.asarray(draft_s(d.model, d.system, d.plan, d.profile, self.spec, mode=d.mode, batch=float(b),
                                   context=L, plain_step_s=None), dtype=float)
        got = self.spec.k * self.draft_model.uniform_step_s(b, L)
        err = float(np.max(np.abs(got - truth) / truth))
        if err > VERIFY_REL:
            raise InternalError(f"the draft model {self.spec.draft}'s steps do not split into per-iteration and "
                                f"per-sequence parts at batch {b}: relative error {err:.2e}")

    def _check_verify_step(self) -> None:
        """The verify step of b uniform sequences rebuilt from the parts equals ``verify_of`` (the
        same check as the plain decode's, relative error <= VERIFY_REL, else ``InternalError``)."""
        k1 = self.spec.k + 1
        hi = max((*self.thetas, 4096.0)) * 4.0
        L = np.concatenate([np.arange(0.0, 16.0), np.random.default_rng(1).uniform(0, hi, 64),
                            np.asarray(self.thetas) + 0.5])
        for b in (1, 7, 64):
            truth = np.asarray(self._verify_step(batch=float(b), context=L).step_s, dtype=float)
            base, w, x = self.terms(b * k1)
            got = np.maximum(np.maximum(base + b * self.ver_compute(L), w + b * self.ver_kv(L)), x)
            err = float(np.max(np.abs(got - truth) / truth))
            if err > VERIFY_REL:
                raise InternalError(f"the verify step of {self.dep.model.name} (k = {k1 - 1}) does not split into "
                                    f"per-iteration and per-sequence parts at batch {b}: relative error {err:.2e}")
            if self.draft_model is not None:
                self._check_draft(L, b)

    # ---- per-iteration terms: functions of the token count N ---------------------------------
    def _tables(self, n: int) -> None:
        N = np.arange(1, n + 1, dtype=float)
        r = self._decode(batch=N, context=0.0)
        self._w = [0.0] + np.broadcast_to(np.asarray(r.weight_bytes_per_chip, dtype=float) * self._wscale,
                                          N.shape).tolist()
        self._x = [0.0] + np.broadcast_to(np.asarray(r.time.comm_s, dtype=float), N.shape).tolist()
        self._b = [0.0] + np.broadcast_to(np.asarray(r.routed_compute_s, dtype=float), N.shape).tolist()
        self._blocks: dict[int, np.ndarray] = {}  # terms_block's cache
        self._terms = list(zip(self._b, self._w, self._x))

    def terms(self, n: int) -> tuple[float, float, float]:
        """(``base_s``, ``weights_s``, ``comm_s``) of an iteration of ``n`` tokens in one call (the
        engine's hot path: one table look-up)."""
        t = self._terms
        if n < len(t):
            return t[n]
        return self.base_s(n), self.weights_s(n), self.comm_s(n)

    def base_s(self, n: int) -> float:
        """Time an iteration of ``n`` tokens adds to its compute side: the busiest expert group's
        routed-expert FLOPs (0 for a dense model)."""
        if n < len(self._b):
            return self._b[n]
        return self._big(n)[2]

    def weights_s(self, n: int) -> float:
        """Weight-read time of an iteration of ``n`` tokens (MoE: experts the n tokens touch)."""
        if n < len(self._w):
            return self._w[n]
        return self._big(n)[0]

    def comm_s(self, n: int) -> float:
        if n < len(self._x):
            return self._x[n]
        return self._big(n)[1]

    def _big(self, n: int) -> tuple[float, float, float]:
        """(weights_s, comm_s, base_s) of ``n`` tokens beyond the table, read from its block."""
        row = self.terms_block(n)[1][n % BIG_BLOCK]
        return float(row[1]), float(row[2]), float(row[0])

    def terms_block(self, n: int) -> tuple[int, np.ndarray]:
        """The aligned block of ``BIG_BLOCK`` token counts holding ``n``: (its first count ``lo``, rows
        (base_s, weights_s, comm_s) of lo..lo + BIG_BLOCK - 1), evaluated in one vectorised inference
        call and cached. Both event loops read a count beyond the table from here (the compiled one
        takes the whole block at once), so they see the same floats; the elementwise arithmetic equals a
        call at that one count (tested)."""
        lo = n - n % BIG_BLOCK
        blk = self._blocks.get(lo)
        if blk is None:
            N = np.arange(lo, lo + BIG_BLOCK, dtype=float)
            blk = self._blocks[lo] = self._block_rows(np.maximum(N, 1.0))
            if lo == 0:
                blk[0] = 0.0  # no tokens, no iteration (the table's row 0)
        return lo, blk

    def _block_rows(self, N: np.ndarray) -> np.ndarray:
        """Rows (base_s, weights_s, comm_s) of iterations of N tokens (an array), as ``_tables`` computes them."""
        r = self._decode(batch=N, context=0.0)
        cols = (r.routed_compute_s, np.asarray(r.weight_bytes_per_chip, dtype=float) * self._wscale, r.time.comm_s)
        return np.stack([np.broadcast_to(np.asarray(c, dtype=float), N.shape) for c in cols], axis=1)

    # ---- prefill: cumulative tables over prompt position ---------------------------------------
    def prepare_prefill(self, max_tokens: int) -> None:
        """Tables over x = 0..max_tokens: Fc(x) compute of the first x tokens, Kw(x) their KV write
        time, Kr(c) the time to read c cached tokens once. Chunk (c, c+t): compute Fc(c+t) - Fc(c)
        (matmuls linear, causal attention a difference of closed-form sums), KV Kr(c) + Kw(c+t) -
        Kw(c) (inference reads the cached prefix once per prefill call)."""
        if max_tokens + 1 <= self._prefill_n:
            return
        x = np.arange(0.0, max_tokens + 1.0)
        x1 = np.maximum(x, 1.0)
        full = self._prefill(prompt_tokens=x1, cached_tokens=0.0)
        fc = np.asarray(self._seq_compute(full), dtype=float).copy()
        kw = self._kv_time(full).astype(float).copy()
        fc[0] = kw[0] = 0.0
        one = self._prefill(prompt_tokens=1.0, cached_tokens=x)
        kw_next = np.append(kw[1:], np.nan)
        kr = self._kv_time(one) - (kw_next - kw)
        last = self._prefill(prompt_tokens=1.0, cached_tokens=x[-1])
        kr[-1] = float(self._kv_time(last)) - float(
            self._kv_time(self._prefill(prompt_tokens=x[-1] + 1.0, cached_tokens=0.0)) - kw[-1])
        kr[0] = 0.0
        self._pc, self._pkw, self._pkr = fc, kw, np.maximum(kr, 0.0)
        self._lpc, self._lpkw, self._lpkr = fc.tolist(), kw.tolist(), self._pkr.tolist()
        self._prefill_n = max_tokens + 1

    def prefill_parts(self, rid, start, stop, total):
        """(compute_s, kv_s) arrays of prefilling positions [start, stop) of requests ``rid`` whose
        prompt (plus recomputed output) is ``total`` tokens long (arrays broadcast)."""
        start = np.asarray(start, dtype=np.int64)
        stop = np.asarray(stop, dtype=np.int64)
        return (self._pc[stop] - self._pc[start], self._pkr[start] + self._pkw[stop] - self._pkw[start])

    def prefill_part(self, rid: int, start: int, stop: int, total: int) -> tuple[float, float]:
        """Scalar ``prefill_parts`` (the engine's hot path)."""
        pc, kw = self._lpc, self._lpkw
        return pc[stop] - pc[start], self._lpkr[start] + kw[stop] - kw[start]

    def step_s(self, *, compute_s: float, kv_s: float, tokens: int) -> float:
        """Roofline of one iteration from its summed per-sequence parts and its token count."""
        if tokens <= 0:
            return 0.0
        b, w, x = self.terms(tokens)
        return max(b + compute_s, w + kv_s, x)


class FixedService(StepModel):
    """Service-time override for queueing checks (same engine loop, model-free times).

    Request i's prefill costs ``service_s[i]`` seconds of compute (a batch of prefills costs the
    sum; with batch cap 1 that is one request's service time), a decode iteration costs
    ``decode_step_s`` whatever its size, and KV is unlimited. Used with batch cap 1 and one output
    token it turns the engine into an M/G/c FCFS queue.
    """

    override = True

    def __init__(self, *, service_s, decode_step_s: float = 0.0):
        self.service = np.asarray(service_s, dtype=float)
        if self.service.ndim != 1 or np.any(~np.isfinite(self.service)) or np.any(self.service < 0):
            raise SpecError("must be a 1-D array of finite times >= 0 (one per request)", field="service_s",
                            value=self.service, show_value=False)
        if not (math.isfinite(decode_step_s) and decode_step_s >= 0):
            raise SpecError(f"must be a finite time >= 0, got {decode_step_s!r}", field="decode_step_s",
                            value=decode_step_s, show_value=False)
        self.decode_step = float(decode_step_s)
        self.thetas = ()
        self.spec = None
        zero = PiecewiseLinear(f0=0.0, a=(0.0,), theta=(math.inf,))
        self.dec_compute = self.dec_kv = self.held = zero
        self.kv_capacity_bytes = math.inf
        self.chips = 1
        self.dep = None
        self._terms = [(0.0, 0.0, 0.0)]  # n >= 1: weights_s

    def base_s(self, n: int) -> float:
        return 0.0

    def weights_s(self, n: int) -> float:
        return self.decode_step if n > 0 else 0.0

    def comm_s(self, n: int) -> float:
        return 0.0

    def prepare_prefill(self, max_tokens: int) -> None:
        return None

    def prefill_parts(self, rid, start, stop, total):
        rid = np.asarray(rid, dtype=np.int64)
        frac = (np.asarray(stop, dtype=float) - start) / np.maximum(np.asarray(total, dtype=float) - 0.0, 1.0)
        return self.service[rid] * frac, np.zeros_like(frac)

    def prefill_part(self, rid: int, start: int, stop: int, total: int) -> tuple[float, float]:
        return float(self.service[rid]) * (stop - start) / max(total, 1), 0.0


def check_override_size(model: StepModel, n_requests: int) -> None:
    if isinstance(model, FixedService) and model.service.shape[0] != n_requests:
        raise SpecError(f"has {model.service.shape[0]} times but the workload has {n_requests} requests",
                        field="service_s", value=model.service, show_value=False, fix="give one per request")


def swap_bandwidth(model: StepModel) -> float | None:
    """The replica's share of the host memory tier's bandwidth (its chips over the system's), None
    without a host tier of known bandwidth (or without a deployment)."""
    if model.override or model.dep is None:
        return None
    tiers = [t for t in model.dep.system.tiers if t.kind in HOST_TIER_KINDS and t.bandwidth_bytes_per_s]
    if not tiers:
        return None
    return tiers[0].bandwidth_bytes_per_s * model.dep.plan.chips / model.dep.system.chips


__all__ = ["FixedService", "InternalError", "LlmeconError", "PiecewiseLinear", "StepModel", "VERIFY_REL"]
