"""Serving simulator (SPEC E20): workloads, a step-level engine whose step times come from
``llmecon.step.inference``, scheduling policies, metrics and queueing-theory closed forms.

    from llmecon.serving import simulate, SimConfig, Continuous, synthetic, fixed
    res = simulate(dep, synthetic(rate_per_s=5, prompt=fixed(512), output=fixed(128), duration_s=60))
    res.summary()["ttft_p99_s"]
"""

from __future__ import annotations

from .config import SLO, PrefixCache, ServiceClass, SimConfig
from .metrics import SimResult
from .policies import POLICIES, Adaptive, Continuous, Disaggregated, ServingPolicy, Train, policy_from_name
from .queueing import mdc_mean_wait_s, md1_mean_wait_s, mm1_mean_wait_s, mmc_mean_wait_s, train_mean_wait_s
from .simulate import simulate
from .steptime import FixedService, InternalError, StepModel
from .workload import Lengths, Workload, empirical, fixed, load_trace, lognormal, synthetic, uniform

__all__ = ["Adaptive", "Continuous", "Disaggregated", "FixedService", "InternalError", "Lengths", "POLICIES",
           "PrefixCache", "SLO", "ServiceClass", "ServingPolicy", "SimConfig", "SimResult", "StepModel", "Train",
           "Workload", "empirical", "fixed", "load_trace", "lognormal", "md1_mean_wait_s", "mdc_mean_wait_s",
           "mm1_mean_wait_s", "mmc_mean_wait_s", "policy_from_name", "simulate", "synthetic", "train_mean_wait_s",
           "uniform"]
