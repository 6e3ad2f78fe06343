# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's Prometheus alert rules: the one home of every metric name a rule or a dashboard uses.

Pure Python, no Ansible import. :func:`rule_groups` gives the rules file (Prometheus's rule file format:
``groups: [{name, rules: [{alert, expr, for, labels, annotations}]}]``), its thresholds from :data:`THRESHOLDS`
or the caller's; ``monitoring/launchcard-alerts.yml`` is that file with the defaults (written by
``tools/alert_rules.py``, tested against ``monitoring/launchcard-alerts.test.yml`` by ``promtool test rules``).
Every metric name below must be in the pinned release's contract (``monitoring/contracts/``,
:mod:`_metric_contract`); the unit tests check it.

Series carry the scrape targets' labels (:mod:`_scrape_targets`): ``card``, ``instance`` (the plan's instance id),
``host``, ``role``, ``engine``. A label the engine exports under one of those names is kept by Prometheus as
``exported_NAME`` (vLLM 0.32.0's ``engine``, its engine index: vllm/v1/metrics/loggers.py:499).
"""

from __future__ import annotations

from ansible_collections.launchcard.inference.plugins.module_utils import _textfile_facts as textfile_facts

# vLLM 0.32.0, vllm/v1/metrics/loggers.py; prometheus_client 0.26.0 exposes a counter as NAME_total and a
# histogram as NAME_bucket (monitoring/contracts/vllm-0.32.0.yml cites each line).
VLLM_RUNNING = "vllm:num_requests_running"
VLLM_WAITING = "vllm:num_requests_waiting"
VLLM_KV_USAGE = "vllm:kv_cache_usage_perc"
VLLM_PREEMPTIONS = "vllm:num_preemptions_total"
VLLM_GENERATION_TOKENS = "vllm:generation_tokens_total"
VLLM_TTFT_BUCKET = "vllm:time_to_first_token_seconds_bucket"
VLLM_ITL_BUCKET = "vllm:inter_token_latency_seconds_bucket"
VLLM_PROMPT_TOKENS = "vllm:prompt_tokens_total"  # dashboards only (tools/dashboards.py), as the names below
VLLM_REQUESTS = "vllm:request_success_total"
# SGLang 0.5.23, sglang/srt/observability/metrics_collector.py (monitoring/contracts/sglang-0.5.23.yml)
SGLANG_RUNNING = "sglang:num_running_reqs"
SGLANG_WAITING = "sglang:num_queue_reqs"
SGLANG_KV_USAGE = "sglang:token_usage"
SGLANG_RETRACTIONS = "sglang:num_retracted_requests_total"
SGLANG_GENERATION_TOKENS = "sglang:generation_tokens_total"
SGLANG_TTFT_BUCKET = "sglang:time_to_first_token_seconds_bucket"
SGLANG_ITL_BUCKET = "sglang:inter_token_latency_seconds_bucket"
SGLANG_PROMPT_TOKENS = "sglang:prompt_tokens_total"
SGLANG_REQUESTS = "sglang:num_requests_total"
# a PD prefill observes no time to first token (sglang/srt/managers/tokenizer_manager.py:3236): its request latency
SGLANG_E2E_LATENCY_BUCKET = "sglang:e2e_request_latency_seconds_bucket"
# sglang-router 0.3.2: 1 per healthy worker (monitoring/contracts/sglang-router-0.3.2.yml)
ROUTER_WORKER_HEALTH = "smg_worker_health"
ROUTER_REQUESTS = "smg_router_requests_total"
ROUTER_DURATION_BUCKET = "smg_router_request_duration_seconds_bucket"
ROUTER_WORKER_ACTIVE = "smg_worker_requests_active"
# Debian 12's prometheus-node-exporter 1.5.0 (monitoring/contracts/node-exporter-1.5.0.yml)
NODE_UNIT_STATE = "node_systemd_unit_state"
NODE_RESTARTS = "node_systemd_service_restart_total"
NODE_FS_AVAIL = "node_filesystem_avail_bytes"
NODE_FS_SIZE = "node_filesystem_size_bytes"
# the collection's own textfile facts (monitoring/contracts/launchcard.yml)
LIVENESS_RESTARTS = "launchcard_liveness_restarts_total"
# written by the converge (module_utils/_textfile_facts.py): named there
LAST_DEPLOY, LAST_UPGRADE = textfile_facts.DEPLOY, textfile_facts.UPGRADE

#: Thresholds a site may change (``rule_groups(thresholds)``); durations are Prometheus durations.
THRESHOLDS = {
    "target_down_for": "2m",
    "unit_restarts": 3,  # restarts of one unit within restarts_window
    "restarts_window": "15m",
    "wedged_for": "5m",  # requests running and no token generated for this long
    "kv_cache_ratio": 0.9,
    "kv_cache_for": "10m",
    "queue_growing_for": "15m",
    "preemptions_window": "10m",
    "ttft_p95_seconds": 10,
    "itl_p95_seconds": 0.5,
    "latency_for": "10m",
    "router_no_workers_for": "2m",
    "disk_free_ratio": 0.1,
    "disk_for": "15m",
    "liveness_window": "1h",
}
#: The engine units' names (``_planner.UNIT_PREFIX``): node_exporter labels a unit ``name``.
UNIT_MATCH = 'name=~"launchcard-.+\\\\.service"'
BY = "card, instance, host, role"
#: File systems that hold no weights (node_exporter reports every mount).
NOT_DISKS = 'fstype!~"tmpfs|ramfs|devtmpfs|overlay|squashfs|nsfs|proc|sysfs"'


def _either(template, vllm, sglang, **kw):
    """One expression per engine, joined by ``or`` (each engine's series carry their own instance labels)."""
    return "(%s) or (%s)" % (template.format(m=vllm, **kw), template.format(m=sglang, **kw))


def _rule(alert, expr, for_, severity, summary, description):
    rule = {"alert": alert, "expr": expr}
    if for_:
        rule["for"] = for_
    rule.update(labels={"severity": severity}, annotations={"summary": summary, "description": description})
    return rule


def rule_groups(thresholds=None):
    """The rules file as a document: ``{"groups": [{"name": "launchcard", "rules": [...]}]}``.

    :param thresholds: overrides of :data:`THRESHOLDS` (unknown keys are refused).
    :raises ValueError: an unknown threshold.
    """
    t = dict(THRESHOLDS)
    unknown = sorted(set(thresholds or {}) - set(t))
    if unknown:
        raise ValueError("unknown alert threshold(s) %s; known: %s" % (", ".join(unknown), ", ".join(sorted(t))))
    t.update(thresholds or {})
    who = "{{ $labels.instance }} on {{ $labels.host }}"
    rules = [
        _rule("LaunchcardTargetDown", 'up{card!=""} == 0', t["target_down_for"], "critical",
              "%s does not answer Prometheus" % who,
              "The scrape of {{ $labels.instance }} ({{ $labels.role }}, card {{ $labels.card }}) on {{ $labels.host }} "
              "has failed for %s: the process is down, wedged or unreachable." % t["target_down_for"]),
        _rule("LaunchcardUnitFailed", "%s{%s, state=\"failed\"} == 1" % (NODE_UNIT_STATE, UNIT_MATCH), "1m", "critical",
              "{{ $labels.name }} failed on {{ $labels.host }}",
              "systemd reports {{ $labels.name }} failed on {{ $labels.host }}: journalctl -u {{ $labels.name }}."),
        _rule("LaunchcardUnitRestarting", "increase(%s{%s}[%s]) >= %s" % (
            NODE_RESTARTS, UNIT_MATCH, t["restarts_window"], t["unit_restarts"]), None, "warning",
            "{{ $labels.name }} keeps restarting on {{ $labels.host }}",
            "systemd restarted {{ $labels.name }} {{ $value }} times within %s." % t["restarts_window"]),
        _rule("LaunchcardEngineWedged", _either(
            "sum by ({by}) ({m[0]}) > 0 and on (card, instance) sum by (card, instance) (rate({m[1]}[{w}])) == 0",
            (VLLM_RUNNING, VLLM_GENERATION_TOKENS), (SGLANG_RUNNING, SGLANG_GENERATION_TOKENS), by=BY,
            w=t["wedged_for"]), t["wedged_for"], "critical",
            "%s runs requests but generates no tokens" % who,
            "{{ $value }} request(s) running and no token generated for %s: the engine is wedged (its /health "
            "may still answer)." % t["wedged_for"]),
        _rule("LaunchcardKVCacheFull", _either("max by ({by}) ({m}) > {x}", VLLM_KV_USAGE, SGLANG_KV_USAGE, by=BY,
                                               x=t["kv_cache_ratio"]), t["kv_cache_for"], "warning",
              "%s KV cache above %d%%" % (who, round(t["kv_cache_ratio"] * 100)),
              "KV cache use {{ $value | humanizePercentage }} for %s: requests queue or are preempted." %
              t["kv_cache_for"]),
        _rule("LaunchcardQueueGrowing", _either("sum by ({by}) (deriv({m}[5m])) > 0 and sum by ({by}) ({m}) > 0",
                                                VLLM_WAITING, SGLANG_WAITING, by=BY), t["queue_growing_for"],
              "warning", "%s waiting queue keeps growing" % who,
              "The waiting queue has grown for %s: the instance takes requests faster than it serves them." %
              t["queue_growing_for"]),
        _rule("LaunchcardPreemptions", _either("sum by ({by}) (increase({m}[{w}])) > 0", VLLM_PREEMPTIONS,
                                               SGLANG_RETRACTIONS, by=BY, w=t["preemptions_window"]), None,
              "warning", "%s preempts requests" % who,
              "{{ $value }} request(s) preempted (vLLM) or retracted (SGLang) within %s: the KV cache is too small "
              "for the load." % t["preemptions_window"]),
        _rule("LaunchcardTimeToFirstTokenHigh", _either(
            "histogram_quantile(0.95, sum by ({by}, le) (rate({m}[5m]))) > {x}", VLLM_TTFT_BUCKET,
            SGLANG_TTFT_BUCKET, by=BY, x=t["ttft_p95_seconds"]), t["latency_for"], "warning",
            "%s time to first token p95 above %ss" % (who, t["ttft_p95_seconds"]),
            "p95 time to first token {{ $value | humanizeDuration }} for %s." % t["latency_for"]),
        _rule("LaunchcardInterTokenLatencyHigh", _either(
            "histogram_quantile(0.95, sum by ({by}, le) (rate({m}[5m]))) > {x}", VLLM_ITL_BUCKET,
            SGLANG_ITL_BUCKET, by=BY, x=t["itl_p95_seconds"]), t["latency_for"], "warning",
            "%s inter-token latency p95 above %ss" % (who, t["itl_p95_seconds"]),
            "p95 inter-token latency {{ $value | humanizeDuration }} for %s." % t["latency_for"]),
        _rule("LaunchcardRouterNoHealthyWorkers",
              'up{role="router"} == 1 unless on (card, instance) (%s == 1)' % ROUTER_WORKER_HEALTH,
              t["router_no_workers_for"], "critical", "%s has no healthy worker" % who,
              "The router answers but none of its workers is healthy: every request fails."),
        # host: the nodes file's hosts and the monitoring host's own (_scrape_targets.MONITOR_NODE_JOB), not a site's
        _rule("LaunchcardWeightsDiskNearlyFull", "%s{host!=\"\", %s} / %s{host!=\"\", %s} < %s" % (
            NODE_FS_AVAIL, NOT_DISKS, NODE_FS_SIZE, NOT_DISKS, t["disk_free_ratio"]), t["disk_for"], "warning",
            "{{ $labels.mountpoint }} on {{ $labels.host }} is nearly full",
            "{{ $value | humanizePercentage }} free on {{ $labels.mountpoint }}: the next revision's weights (on a "
            "monitoring host, Prometheus's data) may not fit."),
        _rule("LaunchcardLivenessRestarts", "increase(%s[%s]) > 0" % (LIVENESS_RESTARTS, t["liveness_window"]), None,
              "warning", "{{ $labels.unit }} was restarted by its liveness check on {{ $labels.host }}",
              "The liveness timer restarted {{ $labels.unit }} {{ $value }} time(s) within %s: it stopped answering "
              "completions." % t["liveness_window"]),
    ]
    return {"groups": [{"name": "launchcard", "rules": rules}]}
