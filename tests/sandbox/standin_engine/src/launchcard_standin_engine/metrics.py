"""TEST CODE: the stand-in engines' ``/metrics``, in Prometheus's text format (standard library only).

It exports the metrics launchcard's alert rules and dashboards read (monitoring/contracts/vllm-0.32.0.yml and
sglang-0.5.23.yml, and no others), each with the name, type, label names and histogram buckets of the pinned
release, cited beside it. Values move as the real engine's do: the counters and histograms grow with every
generation served (time to first token and inter-token latency from the stand-in's own timing), the gauges follow
the requests in flight and those held waiting. A series the release only creates on an event the stand-in never
has (an SGLang retraction) is declared and left without samples, as prometheus_client leaves a labelled metric
nobody called ``labels()`` on.
"""

import threading
from typing import Dict, List, Tuple

# vllm/v1/metrics/buckets.py:57 (0.32.0), TIME_TO_FIRST_TOKEN_BUCKETS (histogram_buckets, loggers.py:831)
VLLM_TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                     20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
# vllm/v1/metrics/buckets.py:84 (0.32.0), INTER_TOKEN_LATENCY_BUCKETS (loggers.py:834)
VLLM_ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
                    40.0, 80.0)
# vllm/v1/engine/__init__.py:48 (0.32.0), FinishReason: request_success has one series per reason (loggers.py:813)
VLLM_FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")
# sglang/srt/observability/metrics_collector.py:1966 (0.5.23), the default bucket_time_to_first_token
SGLANG_TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
# sglang/srt/observability/metrics_collector.py:2014 (0.5.23), the default bucket_inter_token_latency
SGLANG_ITL_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080,
                      0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000)
# sglang/srt/observability/metrics_collector.py:1987 (0.5.23), the default bucket_e2e_request_latency
SGLANG_E2E_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400)
#: The stand-in's own KV capacity in tokens (it has no KV cache): the KV use gauges are in-flight tokens over it.
KV_CAPACITY_TOKENS = 131072

# (name as declared, type, HELP, label names besides the engine's own): the release's definitions.
VLLM = [
    ("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", ()),  # loggers.py:528
    ("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", ()),  # loggers.py:538
    ("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", ()),  # loggers.py:620
    ("vllm:num_preemptions", "counter", "Cumulative number of preemption from the engine.", ()),  # loggers.py:739
    ("vllm:prompt_tokens", "counter", "Number of prefill tokens processed.", ()),  # loggers.py:748
    ("vllm:generation_tokens", "counter", "Number of generation tokens processed.", ()),  # loggers.py:799
    ("vllm:request_success", "counter", "Count of successfully processed requests.",
     ("finished_reason",)),  # loggers.py:809
    ("vllm:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.",
     ()),  # loggers.py:931
    ("vllm:inter_token_latency_seconds", "histogram", "Histogram of inter-token latency in seconds.",
     ()),  # loggers.py:941
]
SGLANG = [
    # the scheduler's (SchedulerMetricsCollector, metrics_collector.py:1382 labels)
    ("sglang:num_running_reqs", "gauge", "The number of running requests.", ()),  # metrics_collector.py:365
    ("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.", ()),  # :371
    ("sglang:token_usage", "gauge", "The token usage.", ()),  # :405
    ("sglang:num_retracted_requests_total", "counter", "Total number of retracted requests.", ()),  # :559
    # the tokenizer manager's (TokenizerMetricsCollector, metrics_collector.py:1807 labels)
    ("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.", ("is_streaming",)),  # :1856
    ("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.",
     ("is_streaming",)),  # :1861
    ("sglang:num_requests_total", "counter", "Number of requests processed.", ("is_streaming",)),  # :1941
    ("sglang:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.",
     ("is_streaming",)),  # :2041
    ("sglang:inter_token_latency_seconds", "histogram", "Histogram of inter-token latency in seconds.", ()),  # :2051
    ("sglang:e2e_request_latency_seconds", "histogram", "Histogram of End-to-end request latency in seconds",
     ("is_streaming",)),  # :2068
]
BUCKETS = {"vllm:time_to_first_token_seconds": VLLM_TTFT_BUCKETS, "vllm:inter_token_latency_seconds": VLLM_ITL_BUCKETS,
           "sglang:time_to_first_token_seconds": SGLANG_TTFT_BUCKETS,
           "sglang:inter_token_latency_seconds": SGLANG_ITL_BUCKETS, "sglang:e2e_request_latency_seconds": SGLANG_E2E_BUCKETS}


def _family(name: str, mtype: str) -> str:
    """The name the text format declares: prometheus_client drops a counter's ``_total`` and writes it back, so a
    counter is declared as ``NAME_total`` (as in the real scrape, tests/unit/fixtures/metrics/vllm-0.32.0.prom)."""
    if mtype == "counter" and not name.endswith("_total"):
        return name + "_total"
    return name


def _labels(pairs: Dict[str, str]) -> str:
    return "{%s}" % ",".join('%s="%s"' % (k, str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n"))
                             for k, v in sorted(pairs.items()))


def _num(value: float) -> str:
    return repr(float(value))


class Metrics:
    """The series of one stand-in server; ``finished`` after every generation served, ``render`` per scrape."""

    def __init__(self, engine: str, role: str, model: str):
        self.engine, self.role = engine, role
        self.lock = threading.Lock()
        self.values: Dict[Tuple[str, Tuple], float] = {}
        self.hists: Dict[Tuple[str, Tuple], List[float]] = {}  # [count per bucket..., sum]
        if engine == "vllm":
            # loggers.py:499-504: labelnames model_name, engine (the engine core's index, "0" for one)
            self.base = {"model_name": model, "engine": "0"}
            self.sched = self.base
            for name, mtype, dummy, extra in VLLM:  # create_metric_per_engine: every series exists from the start
                if mtype == "counter" and not extra:
                    self._add(name, self.base, 0)
                elif mtype == "histogram":
                    self._observe(name, self.base, None)
            for reason in VLLM_FINISH_REASONS:
                self._add("vllm:request_success", dict(self.base, finished_reason=reason), 0)
        else:
            # disaggregation/utils.py:156 to_engine_type: prefill, decode, else unified
            engine_type = role if role in ("prefill", "decode") else "unified"
            # metrics_collector.py:1807: the tokenizer manager's labels; :1382: the scheduler's (TP rank 0 reports)
            self.base = {"model_name": model, "engine_type": engine_type}
            self.sched = dict(self.base, tp_rank="0", pp_rank="0", moe_ep_rank="0")

    def _add(self, name: str, labels: Dict[str, str], value: float) -> None:
        key = (name, tuple(sorted(labels.items())))
        self.values[key] = self.values.get(key, 0.0) + value

    def _observe(self, name: str, labels: Dict[str, str], value, times: int = 1) -> None:
        key = (name, tuple(sorted(labels.items())))
        bounds = BUCKETS[name]
        hist = self.hists.setdefault(key, [0.0] * (len(bounds) + 2))
        if value is None:
            return
        for i, bound in enumerate(bounds):
            if value <= bound:
                hist[i] += times
                break
        else:
            hist[len(bounds)] += times
        hist[-1] += value * times

    def finished(self, prompt_tokens: int, output_tokens: int, ttft_s: float, intervals: List[float],
                 stream: bool, finish: str = "length") -> None:
        """One generation served: its prompt and output tokens, time to first token, the gaps between its tokens
        (its latency: the three together)."""
        with self.lock:
            if self.engine == "vllm":
                # loggers.py:1262-1287: tokens, then a TTFT per first token and an ITL per later token
                self._add("vllm:prompt_tokens", self.base, prompt_tokens)
                self._add("vllm:generation_tokens", self.base, output_tokens)
                self._add("vllm:request_success", dict(self.base, finished_reason=finish), 1)
                self._observe("vllm:time_to_first_token_seconds", self.base, ttft_s)
                for gap in intervals:
                    self._observe("vllm:inter_token_latency_seconds", self.base, gap)
                return
            streaming = dict(self.base, is_streaming="true" if stream else "false")
            # tokenizer_manager.py:3236: "PD prefill workers never observe TTFT, so they never reach ITL"
            if self.role != "prefill" and finish != "abort":
                self._observe("sglang:time_to_first_token_seconds", streaming, ttft_s)
                if intervals:  # metrics_collector.py:2161: one interval over its new tokens, counted per token
                    self._observe("sglang:inter_token_latency_seconds", self.base, sum(intervals) / len(intervals),
                                  times=len(intervals))
            # metrics_collector.py:2092 observe_one_finished_request
            self._add("sglang:prompt_tokens_total", streaming, prompt_tokens)
            self._add("sglang:generation_tokens_total", streaming, output_tokens)
            self._add("sglang:num_requests_total", streaming, 1)
            self._observe("sglang:e2e_request_latency_seconds", streaming, ttft_s + sum(intervals))

    def render(self, running: int, waiting: int, kv_tokens: int) -> List[str]:
        """The text format's lines: each family declared (HELP, TYPE), then its samples."""
        usage = min(1.0, kv_tokens / float(KV_CAPACITY_TOKENS))
        if self.engine == "vllm":
            gauges = {"vllm:num_requests_running": running, "vllm:num_requests_waiting": waiting,
                      "vllm:kv_cache_usage_perc": usage}
            table = VLLM
        elif self.role == "encoder":
            return []  # an --encoder-only server has its own EncoderMetricsCollector (encoder/runtime.py:1596)
        else:
            # metrics_collector.py:1646 log_stats: the scheduler sets them every interval
            gauges = {"sglang:num_running_reqs": running, "sglang:num_queue_reqs": waiting,
                      "sglang:token_usage": usage}
            table = SGLANG
        lines = []
        with self.lock:
            for name, mtype, doc, dummy in table:
                family = _family(name, mtype)
                lines += ["# HELP %s %s" % (family, doc), "# TYPE %s %s" % (family, mtype)]
                if mtype == "gauge":
                    lines.append("%s%s %s" % (name, _labels(self.sched if name.startswith("sglang:") else self.base),
                                              _num(gauges[name])))
                elif mtype == "counter":
                    lines += ["%s%s %s" % (family, _labels(dict(k)), _num(v))
                              for (n, k), v in sorted(self.values.items()) if n == name]
                else:
                    for (n, k), hist in sorted(self.hists.items()):
                        if n != name:
                            continue
                        cumulative = 0.0
                        for bound, count in zip(list(BUCKETS[name]) + ["+Inf"], hist[:-1]):
                            cumulative += count
                            le = bound if bound == "+Inf" else _num(bound)
                            lines.append("%s_bucket%s %s" % (name, _labels(dict(k, le=le)), _num(cumulative)))
                        lines.append("%s_count%s %s" % (name, _labels(dict(k)), _num(cumulative)))
                        lines.append("%s_sum%s %s" % (name, _labels(dict(k)), _num(hist[-1])))
        return lines
