"""vLLM's engine metrics on Triton's metrics port (tritonvllm.metrics, model.py).

Three checks: every metric the model reports is one vLLM itself exports (its
name, kind, description and bucket family read from the installed vLLM's
PrometheusStatLogger source); vLLM's own statistics objects map to the updates
vLLM's logger would make; and a real CPU tritonserver, after a generation,
serves every name with samples under vLLM's labels, with token counts that
match the generation.
"""

from __future__ import annotations

import inspect
import re
import time
import urllib.request
from types import SimpleNamespace
from typing import Any

import pytest
from vllm.v1.engine import FINISH_REASON_STRINGS, FinishReason
from vllm.v1.metrics import loggers
from vllm.v1.metrics.buckets import histogram_buckets
from vllm.v1.metrics.stats import FinishedRequestStats, IterationStats, PromptTokenStats, SchedulerStats

from client import generate
from tritonvllm.metrics import COUNTER, DEFAULT_BUCKETS, FINISH_REASONS, GAUGE, HISTOGRAM, METRICS, Reporter, updates

PROMPT = "The quick brown fox jumps over"


def vllm_declarations() -> dict[str, tuple[str, str]]:
    """name -> (kind, description) of every metric vLLM's PrometheusStatLogger declares."""
    source = inspect.getsource(loggers.PrometheusStatLogger)
    found: dict[str, tuple[str, str]] = {}
    pattern = r'self\._(gauge|counter|histogram)_cls\(\s*name="(vllm:[a-z0-9_]+)",\s*documentation=(?:"([^"]*)"|\()'
    for kind, name, doc in re.findall(pattern, source):
        found[name] = (kind, doc)
    assert len(found) > 20, "the pattern no longer reads vLLM's logger source"
    return found


@pytest.mark.parametrize("spec", METRICS, ids=[m.name for m in METRICS])
def test_each_metric_is_vllms_own(spec: Any) -> None:
    declared = vllm_declarations()
    # prometheus_client exports a counter under its name + "_total"; Triton under the name given.
    name = spec.name.removesuffix("_total") if spec.kind == COUNTER else spec.name
    assert name in declared, f"{spec.name}: vLLM declares no {name}"
    kind, description = declared[name]
    assert kind == spec.kind
    assert description == spec.description
    if spec.kind == HISTOGRAM:
        assert spec.buckets is not None and histogram_buckets(spec.buckets)


def test_default_buckets_are_vllms() -> None:
    """The fallback for a vLLM without its bucket table: every family the metrics use, vLLM's bounds."""
    assert {spec.buckets for spec in METRICS if spec.buckets} == set(DEFAULT_BUCKETS)
    for family, bounds in DEFAULT_BUCKETS.items():
        assert list(bounds) == histogram_buckets(family), family


def test_updates_read_older_vllm_field_names() -> None:
    """Releases before vLLM 0.32 name two fields differently; the same updates come out."""
    old_scheduler = SimpleNamespace(num_running_reqs=1, num_waiting_reqs=2, gpu_cache_usage=0.5)
    old_iteration = SimpleNamespace(
        num_prompt_tokens=0, num_generation_tokens=0, num_preempted_reqs=0, time_to_first_tokens_iter=[],
        time_per_output_tokens_iter=[0.03], finished_requests=[],
    )
    assert updates(old_scheduler, old_iteration) == [
        ("vllm:num_requests_running", None, 1.0),
        ("vllm:num_requests_waiting", None, 2.0),
        ("vllm:kv_cache_usage_perc", None, 0.5),
        ("vllm:inter_token_latency_seconds", None, 0.03),
    ]


def test_finish_reasons_are_vllms() -> None:
    assert tuple(FINISH_REASON_STRINGS) == FINISH_REASONS


def test_updates_from_vllms_statistics() -> None:
    scheduler = SchedulerStats(num_running_reqs=2, num_waiting_reqs=3, num_skipped_waiting_reqs=1, kv_cache_usage=0.25)
    iteration = IterationStats()
    iteration.prompt_token_stats = PromptTokenStats(computed=7, total=7)
    iteration.num_generation_tokens = 5
    iteration.time_to_first_tokens_iter = [0.5]
    iteration.inter_token_latencies_iter = [0.01, 0.02]
    iteration.finished_requests = [FinishedRequestStats(finish_reason=FinishReason.LENGTH, e2e_latency=1.5, queued_time=0.25)]
    assert updates(scheduler, iteration) == [
        ("vllm:num_requests_running", None, 2.0),
        ("vllm:num_requests_waiting", None, 4.0),
        ("vllm:kv_cache_usage_perc", None, 0.25),
        ("vllm:prompt_tokens_total", None, 7.0),
        ("vllm:generation_tokens_total", None, 5.0),
        ("vllm:time_to_first_token_seconds", None, 0.5),
        ("vllm:inter_token_latency_seconds", None, 0.01),
        ("vllm:inter_token_latency_seconds", None, 0.02),
        ("vllm:request_success_total", "length", 1.0),
        ("vllm:e2e_request_latency_seconds", None, 1.5),
        ("vllm:request_queue_time_seconds", None, 0.25),
    ]
    assert updates(None, None) == []


class FakeMetric:
    def __init__(self, log: list[tuple[str, dict[str, str], str, float]], name: str, labels: dict[str, str]) -> None:
        self.log, self.name, self.labels = log, name, labels

    def set(self, value: float) -> None:
        self.log.append((self.name, self.labels, "set", value))

    def increment(self, value: float) -> None:
        self.log.append((self.name, self.labels, "increment", value))

    def observe(self, value: float) -> None:
        self.log.append((self.name, self.labels, "observe", value))


def test_reporter_sets_gauges_adds_counters_observes_histograms() -> None:
    log: list[tuple[str, dict[str, str], str, float]] = []
    created: dict[str, Any] = {}

    class FakeFamily:
        def __init__(self, name: str, description: str, kind: str) -> None:
            self.name = name
            created[name] = {"kind": kind, "series": []}

        def Metric(self, labels: dict[str, str], buckets: list[float] | None = None) -> FakeMetric:
            created[self.name]["series"].append((labels, buckets))
            return FakeMetric(log, self.name, labels)

    reporter = Reporter(FakeFamily, {GAUGE: "G", COUNTER: "C", HISTOGRAM: "H"}, {"model_name": "m", "engine": "0"},
                        histogram_buckets)
    reporter.apply([("vllm:num_requests_waiting", None, 4.0), ("vllm:prompt_tokens_total", None, 7.0),
                    ("vllm:time_to_first_token_seconds", None, 0.5), ("vllm:request_success_total", "stop", 1.0)])
    reporter.close()
    assert log == [
        ("vllm:num_requests_waiting", {"model_name": "m", "engine": "0"}, "set", 4.0),
        ("vllm:prompt_tokens_total", {"model_name": "m", "engine": "0"}, "increment", 7.0),
        ("vllm:time_to_first_token_seconds", {"model_name": "m", "engine": "0"}, "observe", 0.5),
        ("vllm:request_success_total", {"model_name": "m", "engine": "0", "finished_reason": "stop"}, "increment", 1.0),
    ]
    assert created["vllm:time_to_first_token_seconds"] == {
        "kind": "H", "series": [({"model_name": "m", "engine": "0"}, histogram_buckets("time_to_first_token"))]}
    assert [labels["finished_reason"] for labels, _ in created["vllm:request_success_total"]["series"]] == list(FINISH_REASONS)


def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Prometheus text exposition: sample name -> [(labels, value)]."""
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        match = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$", line)
        if match:
            labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"', match.group(2) or ""))
            samples.setdefault(match.group(1), []).append((labels, float(match.group(3))))
    return samples


def value(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    return sum(v for found, v in samples.get(name, []) if all(found.get(k) == want for k, want in labels.items()))


def test_server_exports_vllms_metrics_after_a_generation(server: dict[str, Any]) -> None:
    """Served on Triton's metrics port under vLLM's names and labels, counting the generation."""
    before = scrape(server["metrics"])
    result = generate(server["grpc"], "gpt2", PROMPT, 8, top_k=1, random_seed=1)
    assert result.error is None, result.error
    prompt = int(result.last["input_token_count"][0, 0])
    generated = int(result.last["output_token_count"][0, 0])
    # The reporter's thread applies an engine step's statistics after the step.
    deadline = time.monotonic() + 30
    while True:
        after = scrape(server["metrics"])
        finished = value(after, "vllm:request_success_total", model_name="gpt2") - value(
            before, "vllm:request_success_total", model_name="gpt2")
        if finished >= 1 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for spec in METRICS:
        name = f"{spec.name}_count" if spec.kind == HISTOGRAM else spec.name
        assert after.get(name), f"{name} not served on {server['metrics']}"
        assert all(labels.get("engine") == "0" for labels, _ in after[name]), after[name]
        assert {labels.get("model_name") for labels, _ in after[name]} >= {"gpt2", "gptj"}, after[name]

    def grew(name: str, **labels: str) -> float:
        return value(after, name, model_name="gpt2", **labels) - value(before, name, model_name="gpt2", **labels)

    assert grew("vllm:prompt_tokens_total") == prompt
    # vLLM counts the end token it stops at; the contract's count leaves it out.
    assert grew("vllm:generation_tokens_total") in (generated, generated + 1)
    assert grew("vllm:time_to_first_token_seconds_count") == 1
    assert grew("vllm:e2e_request_latency_seconds_count") == 1
    assert grew("vllm:request_success_total") == 1
    # Triton's own request counter for the model, which the stack's requests and error panels and
    # its metrics-absent alert read for a vLLM model as for an FT one (model="ensemble" there).
    assert value(after, "nv_inference_request_success", model="gpt2") - value(before, "nv_inference_request_success", model="gpt2") == 1
    # Idle again: nothing running or waiting.
    assert value(after, "vllm:num_requests_running", model_name="gpt2") == 0
    assert value(after, "vllm:num_requests_waiting", model_name="gpt2") == 0
