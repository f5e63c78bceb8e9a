"""vLLM's engine metrics as Triton custom metrics, on Triton's metrics port (8002).

vLLM exports its metrics with prometheus_client for its own OpenAI server, which
a Triton model does not run, so nothing would serve them. model.py hands vLLM a
stat logger that passes every engine step's statistics to a `Reporter`, which
keeps them as Triton custom metrics (`pb_utils.MetricFamily`) under vLLM's own
names, labels (`model_name`, `engine`) and histogram buckets: vLLM's dashboards
and queries read them unchanged, and the stack's autoscaling reads
`vllm:num_requests_waiting`, the queue inside vLLM that Triton's own queue time
never sees (docs/scaling.md).

No Triton or vLLM import: the metric family type and vLLM's bucket table are
passed in, so the mapping is tested with plain pytest (test/vllm/test_metrics.py
also checks every name against vLLM's own source and a live server's /metrics).
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

COUNTER = "counter"
GAUGE = "gauge"
HISTOGRAM = "histogram"

# vLLM's finish reasons (vllm.v1.engine.FINISH_REASON_STRINGS): one series each
# from the start, so rate() over them has a zero to start from.
FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")


@dataclass(frozen=True)
class MetricSpec:
    name: str
    kind: str
    description: str
    # The bucket family vLLM gives this histogram (vllm.v1.metrics.buckets.histogram_buckets).
    buckets: str | None = None
    # A label beyond model_name and engine, with the values it takes.
    label: tuple[str, tuple[str, ...]] | None = None


# Names, kinds and descriptions as vLLM 0.32's PrometheusStatLogger
# (vllm/v1/metrics/loggers.py) exports them; prometheus_client adds `_total` to
# a counter's name, Triton does not, so the counters carry it here.
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("vllm:num_requests_running", GAUGE, "Number of requests in model execution batches."),
    MetricSpec("vllm:num_requests_waiting", GAUGE, "Number of requests waiting to be processed."),
    MetricSpec("vllm:kv_cache_usage_perc", GAUGE, "KV-cache usage. 1 means 100 percent usage."),
    MetricSpec("vllm:prompt_tokens_total", COUNTER, "Number of prefill tokens processed."),
    MetricSpec("vllm:generation_tokens_total", COUNTER, "Number of generation tokens processed."),
    MetricSpec("vllm:num_preemptions_total", COUNTER, "Cumulative number of preemption from the engine."),
    MetricSpec(
        "vllm:request_success_total",
        COUNTER,
        "Count of successfully processed requests.",
        label=("finished_reason", FINISH_REASONS),
    ),
    MetricSpec(
        "vllm:time_to_first_token_seconds",
        HISTOGRAM,
        "Histogram of time to first token in seconds.",
        buckets="time_to_first_token",
    ),
    MetricSpec(
        "vllm:inter_token_latency_seconds",
        HISTOGRAM,
        "Histogram of inter-token latency in seconds.",
        buckets="inter_token_latency",
    ),
    MetricSpec(
        "vllm:e2e_request_latency_seconds",
        HISTOGRAM,
        "Histogram of e2e request latency in seconds.",
        buckets="request_latency",
    ),
    MetricSpec(
        "vllm:request_queue_time_seconds",
        HISTOGRAM,
        "Histogram of time spent in WAITING phase for request.",
        buckets="request_latency",
    ),
)

# vLLM 0.32's default bucket bounds (vllm.v1.metrics.buckets.histogram_buckets), for a vLLM
# that has no such table yet: the families' bounds are then the same. test_metrics.py keeps
# them equal to the installed vLLM's.
DEFAULT_BUCKETS: dict[str, tuple[float, ...]] = {
    "time_to_first_token": (
        0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
        20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
    ),
    "inter_token_latency": (
        0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
    ),
    "request_latency": (
        0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
        960.0, 1920.0, 7680.0,
    ),
}


def default_buckets(family: str) -> Sequence[float]:
    return DEFAULT_BUCKETS[family]


# One update: the metric's name, its extra label's value (or None), the value
# (a gauge's new value, a counter's increment, a histogram's observation).
Update = tuple[str, str | None, float]


def updates(scheduler_stats: Any | None, iteration_stats: Any | None) -> list[Update]:
    """The metric updates one engine step's statistics make, as vLLM's own logger makes them.

    `scheduler_stats` is vLLM's SchedulerStats, `iteration_stats` its
    IterationStats (either may be None); read by attribute, since vLLM calls
    neither a stable interface.
    """
    out: list[Update] = []
    if scheduler_stats is not None:
        # vLLM's gauge counts the waiting requests it defers (LoRA budget, KV transfer) too.
        waiting = scheduler_stats.num_waiting_reqs + getattr(scheduler_stats, "num_skipped_waiting_reqs", 0)
        # Older vLLM releases call the KV-cache share gpu_cache_usage.
        usage = float(getattr(scheduler_stats, "kv_cache_usage", getattr(scheduler_stats, "gpu_cache_usage", 0.0)))
        out += [
            ("vllm:num_requests_running", None, float(scheduler_stats.num_running_reqs)),
            ("vllm:num_requests_waiting", None, float(waiting)),
            ("vllm:kv_cache_usage_perc", None, usage),
        ]
    if iteration_stats is None:
        return out
    counters = (
        ("vllm:prompt_tokens_total", iteration_stats.num_prompt_tokens),
        ("vllm:generation_tokens_total", iteration_stats.num_generation_tokens),
        ("vllm:num_preemptions_total", iteration_stats.num_preempted_reqs),
    )
    out += [(name, None, float(value)) for name, value in counters if value]
    out += [("vllm:time_to_first_token_seconds", None, float(v)) for v in iteration_stats.time_to_first_tokens_iter]
    # Older vLLM releases call the inter-token latencies time_per_output_tokens_iter.
    latencies = getattr(iteration_stats, "inter_token_latencies_iter", None)
    if latencies is None:
        latencies = getattr(iteration_stats, "time_per_output_tokens_iter", [])
    out += [("vllm:inter_token_latency_seconds", None, float(v)) for v in latencies]
    for finished in iteration_stats.finished_requests:
        out += [
            ("vllm:request_success_total", str(finished.finish_reason), 1.0),
            ("vllm:e2e_request_latency_seconds", None, float(finished.e2e_latency)),
            ("vllm:request_queue_time_seconds", None, float(finished.queued_time)),
        ]
    return out


class Metric(Protocol):
    def set(self, value: float) -> None: ...
    def increment(self, value: float) -> None: ...
    def observe(self, value: float) -> None: ...


class Family(Protocol):
    # Triton's method name (pb_utils.MetricFamily.Metric).
    def Metric(self, labels: dict[str, str], buckets: list[float] | None = None) -> Metric: ...


# pb_utils.MetricFamily(name=..., description=..., kind=...), with kind mapped by `kinds`.
FamilyFactory = Callable[..., Family]


class Reporter:
    """Keeps vLLM's statistics as Triton metrics of one engine.

    vLLM calls `record` on its output loop, so the Triton calls (each a message
    to the backend process) run on a thread of their own and never hold up a
    generation.
    """

    def __init__(
        self,
        family: FamilyFactory,
        kinds: Mapping[str, Any],
        labels: Mapping[str, str],
        buckets: Callable[[str], Sequence[float]],
    ) -> None:
        self.families: list[Family] = []
        self.metrics: dict[tuple[str, str | None], Metric] = {}
        for spec in METRICS:
            fam = family(name=spec.name, description=spec.description, kind=kinds[spec.kind])
            self.families.append(fam)
            bounds = list(buckets(spec.buckets)) if spec.buckets else None
            values: tuple[str | None, ...] = spec.label[1] if spec.label else (None,)
            for value in values:
                series = dict(labels)
                if spec.label and value is not None:
                    series[spec.label[0]] = value
                self.metrics[(spec.name, value)] = (
                    fam.Metric(labels=series, buckets=bounds) if bounds is not None else fam.Metric(labels=series)
                )
        self.kinds = {spec.name: spec.kind for spec in METRICS}
        self.queue: queue.SimpleQueue[list[Update] | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="vllm-metrics", daemon=True)
        self.thread.start()

    def record(self, scheduler_stats: Any | None, iteration_stats: Any | None) -> None:
        batch = updates(scheduler_stats, iteration_stats)
        if batch:
            self.queue.put(batch)

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join(timeout=10)

    def apply(self, batch: list[Update]) -> None:
        for name, value, amount in batch:
            metric = self.metrics.get((name, value))
            if metric is None:  # a finish reason this vLLM added since FINISH_REASONS
                continue
            kind = self.kinds[name]
            if kind == GAUGE:
                metric.set(amount)
            elif kind == COUNTER:
                metric.increment(amount)
            else:
                metric.observe(amount)

    def _run(self) -> None:
        while (batch := self.queue.get()) is not None:
            try:
                self.apply(batch)
            except Exception as err:  # a metric failure must not stop the reporting of the next steps
                print(f"ensemble (vLLM): metrics: {type(err).__name__}: {err}", file=sys.stderr)
