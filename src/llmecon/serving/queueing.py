"""Queueing-theory closed forms the simulator is validated against (SPEC E20).

All waits are the mean time in queue before service starts (Wq), FCFS, stationary, rho < 1.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import SpecError


def _rho(arrival_rate_per_s: float, service_s: float, servers: int = 1) -> float:
    if not (arrival_rate_per_s > 0 and service_s > 0 and servers >= 1):
        raise SpecError("queueing: arrival rate, service time and servers must be > 0")
    rho = arrival_rate_per_s * service_s / servers
    if rho >= 1:
        raise SpecError(f"queueing: utilisation rho = {rho:.3g} >= 1 has no steady state", value=rho, show_value=False,
                        fix="lower the rate")
    return rho


def md1_mean_wait_s(arrival_rate_per_s: float, service_s: float) -> float:
    """M/D/1, Pollaczek-Khinchine: Wq = rho·S / (2(1 - rho)) (Kleinrock, Queueing Systems I, 1975, eq. 5.76
    with C_s^2 = 0)."""
    rho = _rho(arrival_rate_per_s, service_s)
    return rho * service_s / (2.0 * (1.0 - rho))


def mm1_mean_wait_s(arrival_rate_per_s: float, service_rate_per_s: float) -> float:
    """M/M/1: Wq = rho / (mu - lambda) (Kleinrock 1975, eq. 3.26 less the service time)."""
    rho = _rho(arrival_rate_per_s, 1.0 / service_rate_per_s)
    return rho / (service_rate_per_s - arrival_rate_per_s)


def erlang_c(servers: int, offered_load: float) -> float:
    """Probability of waiting in M/M/c with offered load a = lambda/mu (Erlang C), computed
    through the stable Erlang-B recursion B(k) = a·B(k-1)/(k + a·B(k-1))."""
    b = 1.0
    for k in range(1, servers + 1):
        b = offered_load * b / (k + offered_load * b)
    rho = offered_load / servers
    return b / (1.0 - rho + rho * b)


def mmc_mean_wait_s(arrival_rate_per_s: float, service_s: float, servers: int) -> float:
    """M/M/c: Wq = C(c, a) / (c·mu - lambda)."""
    _rho(arrival_rate_per_s, service_s, servers)
    return erlang_c(servers, arrival_rate_per_s * service_s) / (servers / service_s - arrival_rate_per_s)


def mdc_mean_wait_s(arrival_rate_per_s: float, service_s: float, servers: int, *, tol: float = 1e-13) -> float:
    """M/D/c, exact by a numerical method (Crommelin 1932; Tijms, A First Course in Stochastic Models,
    2003, sec. 9.6): with deterministic service D, everyone in service at t leaves by t + D and nobody
    else does, so the number in system obeys N(t+D) = max(N(t) - c, 0) + A, A ~ Poisson(lambda·D).
    Its stationary law is the time-stationary law of N; L = E[N], Lq = L - lambda·D (busy servers),
    Wq = Lq / lambda. The chain is truncated where the remaining mass is below ``tol``."""
    rho = _rho(arrival_rate_per_s, service_s, servers)
    a = arrival_rate_per_s * service_s
    size = servers + 64
    while True:
        size *= 2
        pois = _poisson_pmf(a, size)
        # P[i, j]: from i to j = max(i - c, 0) + A
        base = np.maximum(np.arange(size) - servers, 0)
        P = np.zeros((size, size))
        for i in range(size):
            b = base[i]
            P[i, b:] = pois[:size - b]
            P[i, -1] += max(0.0, 1.0 - P[i].sum())  # lump the truncated tail into the last state
        A = P.T - np.eye(size)
        A[-1, :] = 1.0
        rhs = np.zeros(size)
        rhs[-1] = 1.0
        pi = np.linalg.solve(A, rhs)
        if pi[-size // 8:].sum() < tol or size > 1 << 14:
            break
    L = float(np.dot(np.arange(size), pi))
    del rho
    return (L - a) / arrival_rate_per_s


def _poisson_pmf(mean: float, n: int) -> np.ndarray:
    k = np.arange(n)
    logp = -mean + k * math.log(mean) - np.asarray([math.lgamma(x + 1) for x in k])
    return np.exp(logp)


def train_mean_wait_s(tau_s: float) -> float:
    """Fixed-cadence trains every tau with room for everyone: a Poisson arrival sees a uniform
    residual time to the next departure (PASTA, Wolff 1982), so the mean wait to board is tau/2."""
    if not tau_s > 0:
        raise SpecError(f"must be > 0, got {tau_s!r}", field="tau", value=tau_s, show_value=False)
    return tau_s / 2.0
