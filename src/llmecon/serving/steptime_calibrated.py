"""Step times of a mixed batch in calibrated mode: the serving simulator on a fitted profile.

A calibrated step (``step.calibrated``) is a sum of kernel classes, each the max of its FLOPs at
the achieved FLOP rate and its bytes at the achieved bandwidth, plus floors, communication and
overheads. Of those terms only the attention class depends on the sequences' contexts; every other
term (non-expert and expert GEMMs with their efficiency ramp in the token count, element-wise
traffic, kernel floors, collectives and their call overheads, the step overhead) is a function of
the iteration's token count N alone. So a step of sequences at contexts L_i is, exactly,

    step = X(N) + max(sum_i c(L_i), sum_i k(L_i))

with c(L) a sequence's attention FLOPs on the critical chip at ``attention_fraction`` of the bf16
peak and k(L) its KV bytes read + written at ``hbm_fraction`` of the HBM bandwidth
(``inference.attention_work_per_chip``) — an MLA model on a profile with MLA tables: its decode or
prefill terms' rates, by the sequence's phase, and a Gated DeltaNet model's recurrence at its
``gdn`` kernel terms (``calibrated.attention_class_s``). X(N) is read off
inference itself: the calibrated decode step of N sequences at context 0 less its attention
class. The engine's three lines become (X + sum c, X + sum k, X):
``base_s = weights_s = comm_s = X``. A prefill chunk enters the same
way (its attention FLOPs a difference of causal sums, its KV the cached prefix read once and the
new tokens' KV written), and X(N) is the same for N prompt tokens as for N decoding sequences
(the GEMMs, element-wise kernels, touched experts and collectives see N tokens either way).

Every decomposition is checked at construction against ``decode_of``/``prefill_of`` on uniform
batches (relative error <= ``VERIFY_REL``, else ``InternalError``). Added beyond a single step:
the profile's serving-loop ``iteration_overhead_s`` once per iteration (as ``steady_state`` adds
it). Not used: ``prefill_stall_factor`` and ``ttft_prefill_factor``, the steady-state model's
fitted stand-ins for the prefill scheduling that the simulator plays out request by request.
"""

from __future__ import annotations

import numpy as np

from ..step.calibrated import attention_class_s
from ..step.inference import ACTIVATION_DTYPE, attention_work_per_chip, gdn_work_per_chip
from .steptime import VERIFY_REL, InternalError, StepModel, _fit

LINEAR_PREFILL_SPLIT_REL = 1e-3  # the prefill split's tolerance with linear-attention layers (``prefill_split_rel``)


class CalibratedStepModel(StepModel):
    """``StepModel`` for a Deployment with a fitted profile (module docstring)."""

    def _attention_s(self, *, flops, kv_read, kv_write, phase: str = "decode",
                     tokens=1.0) -> tuple[np.ndarray, np.ndarray]:
        """(attention compute time, KV time) of one sequence's work on the critical chip in
        ``phase`` (``tokens`` new tokens), at the step's own rates (``calibrated.attention_class_s``:
        the profile's scalars, an MLA model's per-phase terms, Gated DeltaNet layers' kernel terms)."""
        d, chip = self.dep, self.dep.system.accelerator
        f, b = attention_work_per_chip(d.model, d.plan, flops_attn_per_seq=flops, kv_read_per_seq=kv_read,
                                       kv_write_per_seq=kv_write)
        lin_f, lin_s = gdn_work_per_chip(d.model, d.plan, tokens_per_seq=tokens)
        kv = getattr(d.kv_dtype or d.model.kv_dtype, "name", d.kv_dtype or d.model.kv_dtype)
        c, k = attention_class_s(d.model, d.profile, phase=phase, kv_dtype=kv, flops=np.asarray(f, dtype=float),
                                 kv_bytes=np.asarray(b, dtype=float), lin_flops=lin_f, lin_state=lin_s,
                                 peak=chip.peak(ACTIVATION_DTYPE), bandwidth=chip.hbm_bandwidth_bytes_per_s)
        return np.asarray(c, dtype=float), np.asarray(k, dtype=float)

    def _decode_parts(self, L):
        m, kv = self.dep.model, self.dep.kv_dtype
        return self._attention_s(flops=m.attention_flops_per_token(L, absorbed=True), kv_read=m.kv_read_bytes(L, kv),
                                 kv_write=m.kv_bytes_per_token(kv))

    def _fit_decode(self, thetas) -> None:
        self.dec_compute = _fit(lambda L: self._decode_parts(L)[0], thetas)
        self.dec_kv = _fit(lambda L: self._decode_parts(L)[1], thetas)

    @property
    def loop_overhead_s(self) -> float:
        return self.dep.profile.iteration_overhead_s

    def _verify_parts(self, L):
        """(compute, KV time) of one sequence's verify step (``step.speculative.verify_step``'s
        attention work: k+1 queries at L..L+k, the KV read once, k+1 tokens' KV written)."""
        m, kv, k = self.dep.model, self.dep.kv_dtype, self.spec.k
        flops = sum(m.attention_flops_per_token(np.asarray(L, dtype=float) + i, absorbed=True) for i in range(k + 1))
        return self._attention_s(flops=flops, kv_read=m.kv_read_bytes(L, kv),
                                 kv_write=(k + 1) * m.kv_bytes_per_token(kv), tokens=float(k + 1))

    def _fit_verify_step(self, thetas) -> None:
        self.ver_compute = _fit(lambda L: self._verify_parts(L)[0], thetas)
        self.ver_kv = _fit(lambda L: self._verify_parts(L)[1], thetas)
        self._set_draft_share()

    def _check_verify_step(self) -> None:
        """X(b·(k+1)) + max(sum c, sum k) of b uniform sequences equals ``verify_of`` (the iteration
        overhead, added once per simulated iteration, left out of both)."""
        k1 = self.spec.k + 1
        over = self.dep.profile.iteration_overhead_s
        hi = max((*self.thetas, 4096.0)) * 4.0
        L = np.concatenate([np.arange(0.0, 16.0), np.random.default_rng(1).uniform(0, hi, 64),
                            np.asarray(self.thetas) + 0.5])
        for b in (1, 7, 64):
            truth = np.asarray(self._verify_step(batch=float(b), context=L).step_s, dtype=float)
            got = self.terms(b * k1)[0] - over + np.maximum(b * self.ver_compute(L), b * self.ver_kv(L))
            err = float(np.max(np.abs(got - truth) / truth))
            if err > VERIFY_REL:
                raise InternalError(f"the calibrated verify step of {self.dep.model.name} (k = {k1 - 1}) does not "
                                    f"split into X(N) + max(sum c, sum k) at batch {b}: relative error {err:.2e}")
            if self.draft_model is not None:
                self._check_draft(L, b)

    def _base(self, n):
        """X(n) without the loop overhead: the calibrated decode step of n sequences at context 0
        less its attention class."""
        n = np.asarray(n, dtype=float)
        c0, k0 = (float(v) for v in self._decode_parts(0.0))
        step = np.asarray(self._decode(batch=n, context=0.0).step_s, dtype=float)
        return step - np.maximum(n * c0, n * k0)

    def _verify(self) -> None:
        hi = max((*self.thetas, 4096.0)) * 4.0
        rng = np.random.default_rng(0)
        L = np.concatenate([np.arange(0.0, 16.0), rng.uniform(0, hi, 64), np.asarray(self.thetas) + 0.5])
        for b in (1.0, 7.0, 64.0):
            truth = np.asarray(self._decode(batch=b, context=L).step_s, dtype=float)
            parts = float(self._base(b)) + np.maximum(b * self.dec_compute(L), b * self.dec_kv(L))
            err = float(np.max(np.abs(parts - truth) / truth))
            if err > VERIFY_REL:
                raise InternalError(f"calibrated decode of {self.dep.model.name} does not split into X(N) + "
                                    f"max(sum c, sum k) at batch {b:g}: relative error {err:.2e}")

    # ---- per-iteration terms ---------------------------------------------------------------------
    def _tables(self, n: int) -> None:
        over = self.dep.profile.iteration_overhead_s
        x = self._base(np.arange(1, n + 1, dtype=float)) + over
        self._w = [0.0] + np.asarray(x, dtype=float).tolist()
        self._x = self._w
        self._blocks: dict[int, np.ndarray] = {}  # terms_block's cache
        self._terms = [(x, x, x) for x in self._w]

    def _block_rows(self, N):
        x = np.asarray(self._base(N), dtype=float) + self.dep.profile.iteration_overhead_s
        return np.stack([x, x, x], axis=1)

    def base_s(self, n: int) -> float:
        return self.weights_s(n)

    # ---- prefill -----------------------------------------------------------------------------
    @property
    def prefill_split_rel(self) -> float:
        """Tolerance of the prefill split against ``prefill_step``: ``VERIFY_REL`` (exact) for models of
        attention layers only; ``LINEAR_PREFILL_SPLIT_REL`` for models with linear-attention layers, whose
        calibrated kernel terms are not exactly additive over a prompt's positions (measured: Kimi-K3's
        KDA layers, up to 1.7e-4 of the step at 333-426-token chunks on gb200/h100/h200; found by the web
        API's schemathesis test, which answered 500). Far below the profile's own error (~10%)."""
        return VERIFY_REL if self.dep.model.n_linear_layers == 0 else LINEAR_PREFILL_SPLIT_REL

    def prepare_prefill(self, max_tokens: int) -> None:
        """Tables over x = 0..max_tokens: Fc(x) attention compute of the first x tokens, Kw(x) the
        time to write their KV, Kr(c) the time to read c cached tokens once (see the ideal
        ``StepModel.prepare_prefill``); verified against ``prefill_of`` on three chunks."""
        if max_tokens + 1 <= self._prefill_n:
            return
        m, kv = self.dep.model, self.dep.kv_dtype
        x = np.arange(0.0, max_tokens + 1.0)
        fc, _ = self._attention_s(flops=m.prefill_attention_flops(np.maximum(x, 1.0), 0.0), kv_read=0.0,
                                  kv_write=0.0, phase="prefill", tokens=np.maximum(x, 1.0))
        # the GDN state sits in kv_bytes and kv_read_bytes as a constant (held, read once): kw drops it below
        _, kw = self._attention_s(flops=0.0, kv_read=0.0, kv_write=m.kv_bytes(x, kv), phase="prefill", tokens=0.0)
        _, kr = self._attention_s(flops=0.0, kv_read=m.kv_read_bytes(x, kv, sparse=False), kv_write=0.0,
                                  phase="prefill", tokens=0.0)
        fc, kw, kr = fc.copy(), kw - float(kw[0]), kr.copy()
        fc[0] = kr[0] = 0.0
        self._pc, self._pkw, self._pkr = fc, kw, kr
        self._lpc, self._lpkw, self._lpkr = fc.tolist(), kw.tolist(), kr.tolist()
        self._prefill_n = max_tokens + 1
        over = self.dep.profile.iteration_overhead_s
        for start, stop in {(0, max_tokens), (max_tokens // 2, max_tokens), (0, max(1, max_tokens // 3))}:
            if stop <= start:
                continue
            c, k = self.prefill_part(0, start, stop, max_tokens)
            got = self.step_s(compute_s=c, kv_s=k, tokens=stop - start) - over
            truth = float(self._prefill(prompt_tokens=float(stop - start), cached_tokens=float(start)).step_s)
            if abs(got - truth) > self.prefill_split_rel * truth:
                raise InternalError(f"calibrated prefill of {self.dep.model.name} positions [{start}, {stop}) does "
                                    f"not split into X(N) + max(sum c, sum k): {got!r} against {truth!r}")
