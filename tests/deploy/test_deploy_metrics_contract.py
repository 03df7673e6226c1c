"""The Grafana dashboard, the Prometheus rules and the autoscaling metric read
only metrics the real server exports: a server is started, given one request,
scraped, and every PromQL expression is checked against the scrape (names,
histogram suffixes, label names, pre-created label values)."""
import json

import grpc
import pytest
import yaml

from conftest import REPO, ServerProcess, http_get
from promql_names import Exposition, grafana_query_selectors, problems, selectors

DASHBOARD = REPO / "deploy" / "grafana" / "attnserve-dashboard.json"
RULE_FILES = sorted((REPO / "deploy" / "prometheus" / "rules").glob("*.yml"))
ADAPTER = REPO / "deploy" / "kubernetes" / "overlays" / "autoscaling-queue-depth" / "prometheus-adapter-rules.yaml"

# The metrics contract (docs/operations.md lists what each is for). The
# contract's attnserve_kv_cache_blocks_total is exported as
# attnserve_kv_cache_capacity_blocks: `_total` is for counters (promtool check metrics).
CONTRACT = {
    "counter": ["attnserve_requests_total", "attnserve_tokens_processed_total", "attnserve_preemptions_total",
                "attnserve_rejections_total", "attnserve_cancellations_total",
                "attnserve_cancelled_kv_bytes_reclaimed_total", "attnserve_cancelled_tokens_wasted_total",
                "attnserve_prefix_cache_query_tokens_total", "attnserve_prefix_cache_hit_tokens_total",
                "attnserve_scheduler_thread_cpu_seconds_total", "attnserve_http_requests_total"],
    "histogram": ["attnserve_queue_time_seconds", "attnserve_time_to_first_token_seconds",
                  "attnserve_inter_token_latency_seconds", "attnserve_request_duration_seconds",
                  "attnserve_prefill_duration_seconds", "attnserve_decode_duration_seconds",
                  "attnserve_engine_step_duration_seconds", "attnserve_prompt_tokens", "attnserve_generated_tokens",
                  "attnserve_batch_size", "attnserve_step_tokens", "attnserve_encode_padding_ratio",
                  "attnserve_http_request_duration_seconds"],
    "gauge": ["attnserve_queued_requests", "attnserve_running_sequences", "attnserve_kv_cache_blocks_used",
              "attnserve_kv_cache_capacity_blocks", "attnserve_kv_cache_used_bytes", "attnserve_kv_cache_capacity_bytes",
              "attnserve_weight_bytes", "attnserve_engine_scratch_bytes", "attnserve_process_resident_memory_bytes",
              "attnserve_process_virtual_memory_bytes", "attnserve_process_start_time_seconds", "attnserve_saturation",
              "attnserve_ready", "attnserve_build_info", "attnserve_json_mask_bytes"],
}


@pytest.fixture(scope="module")
def exposition(proto_modules):
    pb2, pb2_grpc = proto_modules
    server = ServerProcess()
    try:
        # One finished request, so attnserve_requests_total has a series.
        with grpc.insecure_channel(server.grpc_target) as channel:
            pb2_grpc.InferenceStub(channel).GetModelInfo(pb2.GetModelInfoRequest(), timeout=10)
        status, body = http_get(server.url("/metrics"))
        assert status == 200
        return Exposition(body.decode())
    finally:
        server.close()


def dashboard():
    return json.loads(DASHBOARD.read_text())


def all_panels(d):
    for p in d["panels"]:
        yield p
        yield from p.get("panels", [])


def dashboard_queries(d):
    """(where, query, is_templating) for every PromQL query in the dashboard."""
    for p in all_panels(d):
        for t in p.get("targets", []):
            yield f"panel {p['id']} '{p['title']}' {t['refId']}", t["expr"], False
    for v in d["templating"]["list"]:
        if v["type"] == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            yield f"variable {v['name']}", q, True


def rule_exprs():
    records = set()
    exprs = []
    for f in RULE_FILES:
        for group in yaml.safe_load(f.read_text())["groups"]:
            for r in group["rules"]:
                records.add(r.get("record"))
                exprs.append((f"{f.name} {r.get('record') or r.get('alert')}", r["expr"]))
    return records - {None}, exprs


# ------------------------------------------------------- the scanner itself --

def test_scanner_finds_names_and_skips_functions_groupings_and_ranges():
    expr = ('histogram_quantile(0.99, sum by (le, rpc) (rate(a_seconds_bucket{job=~"$job",rpc="Encode"}'
            '[$__rate_interval]))) / on (job) group_left(x) b_total offset 5m > bool 0.5 '
            'and time() - c{l="v,}"}')
    assert selectors(expr) == [("a_seconds_bucket", [("job", "=~", "$job"), ("rpc", "=", "Encode")]),
                               ("b_total", []), ("c", [("l", "=", "v,}")])]
    assert selectors("sum(x:y:z) without (instance)") == [("x:y:z", [])]
    assert grafana_query_selectors('label_values(m{job=~"$job"}, instance)') == (
        [("m", [("job", "=~", "$job")])], ["instance"])


def test_exposition_honours_histogram_suffixes():
    e = Exposition("# TYPE h_seconds histogram\nh_seconds_bucket{le=\"1\",kind=\"a\"} 0\nh_seconds_sum{kind=\"a\"} 0\n"
                   "h_seconds_count{kind=\"a\"} 0\n# TYPE c_total counter\nc_total 1\n")
    assert e.family_of("h_seconds_bucket") == "h_seconds" and e.family_of("h_seconds_count") == "h_seconds"
    assert e.family_of("h_seconds") is None  # a histogram has no bare series
    assert e.family_of("c_total") == "c_total" and e.family_of("c_total_count") is None
    assert problems([("h_seconds_bucket", [("kind", "=", "b")])], e) == [
        "h_seconds_bucket: no series with kind=\"b\" (has ['a'])"]
    assert problems([("h_seconds_sum", [("nope", "=", "x")])], e)[0].startswith("h_seconds_sum: label nope")


# Label sets the contract pre-creates (one series per family is enough to
# carry each label and value).
CONTRACT_LABELS = {
    "attnserve_requests_total": [{"rpc": "Encode", "code": "ok"}],
    "attnserve_tokens_processed_total": [{"kind": k} for k in ("prompt", "generated", "encode")],
    "attnserve_rejections_total": [{"reason": r} for r in ("queue_full", "kv_budget", "invalid_argument", "draining")],
    "attnserve_cancellations_total": [{"phase": p} for p in ("queued", "prefill", "decode")],
    "attnserve_queue_time_seconds": [{"rpc": r} for r in ("Encode", "Generate")],
    "attnserve_request_duration_seconds": [{"rpc": r} for r in ("Encode", "Generate")],
    "attnserve_engine_step_duration_seconds": [{"kind": k} for k in ("encode", "generate")],
    "attnserve_prompt_tokens": [{"rpc": r} for r in ("Encode", "Generate")],
    "attnserve_batch_size": [{"kind": k} for k in ("encode", "generate")],
    "attnserve_queued_requests": [{"kind": k} for k in ("encode", "generate")],
    "attnserve_weight_bytes": [{"model": m} for m in ("encoder", "decoder")],
    "attnserve_build_info": [{"version": "0", "onednn_version": "0", "cpu_isa": "avx2", "threads": "2"}],
    "attnserve_scheduler_thread_cpu_seconds_total": [{"state": s} for s in ("running", "waiting")],
}


def contract_exposition():
    """The exposition a server that implements the whole contract writes."""
    lines = []
    for typ, names in CONTRACT.items():
        for name in names:
            lines.append(f"# TYPE {name} {typ}")
            for labels in CONTRACT_LABELS.get(name, [{}]):
                body = ",".join(f'{k}="{v}"' for k, v in labels.items())
                if typ == "histogram":
                    for le in ("0.001", "+Inf"):
                        lines.append(f'{name}_bucket{{{body + "," if body else ""}le="{le}"}} 0')
                    lines += [f"{name}_sum{{{body}}} 0", f"{name}_count{{{body}}} 0"]
                else:
                    lines.append(f"{name}{{{body}}} 0")
    return Exposition("\n".join(lines) + "\n")


def test_dashboard_rules_and_autoscaling_fit_the_contract():
    """Independent of the server build: the queries agree with the contract."""
    contract = contract_exposition()
    records, exprs = rule_exprs()
    found = []
    for where, q, templ in dashboard_queries(dashboard()):
        found += [f"{where}: {m}" for m in problems(grafana_query_selectors(q)[0] if templ else selectors(q), contract)]
    for where, expr in exprs:
        found += [f"{where}: {m}" for m in problems(selectors(expr), contract, allowed_names=records)]
    cm = yaml.safe_load(ADAPTER.read_text())
    for rule in yaml.safe_load(cm["data"]["config.yaml"])["rules"]:
        found += problems(selectors(rule["seriesQuery"]), contract)
    assert not found, "\n".join(found)
    # and a typo is caught
    assert problems(selectors('attnserve_batch_size_bucket{kind="decode"}'), contract)


# ---------------------------------------------------------- the dashboard --

def test_dashboard_is_well_formed():
    d = dashboard()
    assert d["uid"] and d["title"] and d["schemaVersion"] >= 36
    ids = [p["id"] for p in all_panels(d)]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    names = {v["name"] for v in d["templating"]["list"]}
    assert {"datasource", "job", "instance"} <= names
    for p in all_panels(d):
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0
        if p["type"] == "row":
            continue
        assert p["datasource"]["uid"] == "${datasource}", p["title"]
        assert p["targets"], f"panel {p['title']} has no query"
        for t in p["targets"]:
            assert '$instance' in t["expr"], f"panel {p['title']} ignores the instance selector"
    queries = list(dashboard_queries(d))
    assert len(queries) > 20


def test_dashboard_covers_the_contract():
    used = set()
    for _, q, templ in dashboard_queries(dashboard()):
        sels = grafana_query_selectors(q)[0] if templ else selectors(q)
        for name, _ in sels:
            for suffix in ("_bucket", "_sum", "_count"):
                if name.endswith(suffix) and name[:-len(suffix)] in CONTRACT["histogram"]:
                    name = name[:-len(suffix)]
            used.add(name)
    wanted = {n for names in CONTRACT.values() for n in names}
    assert wanted - used == set(), f"contract metrics with no dashboard panel: {sorted(wanted - used)}"


def test_dashboard_reads_only_exported_metrics(exposition):
    found = []
    for where, q, templ in dashboard_queries(dashboard()):
        sels, labels = grafana_query_selectors(q) if templ else (selectors(q), [])
        found += [f"{where}: {msg}" for msg in problems(sels, exposition)]
    assert not found, "the dashboard reads what the server does not export:\n" + "\n".join(found)


# ------------------------------------------------------------------ rules --

def test_rules_read_only_exported_metrics(exposition):
    records, exprs = rule_exprs()
    found = []
    for where, expr in exprs:
        found += [f"{where}: {msg}" for msg in problems(selectors(expr), exposition, allowed_names=records)]
    assert not found, "the rules read what the server does not export:\n" + "\n".join(found)


def test_autoscaling_metric_is_exported(exposition):
    cm = yaml.safe_load(ADAPTER.read_text())
    for rule in yaml.safe_load(cm["data"]["config.yaml"])["rules"]:
        msgs = problems(selectors(rule["seriesQuery"]), exposition)
        assert not msgs, msgs


# --------------------------------------------------------------- contract --

def test_server_exports_the_whole_contract(exposition):
    """Every contract family, with its type, is visible from start-up."""
    missing = []
    for typ, names in CONTRACT.items():
        for name in names:
            got = exposition.types.get(name)
            if got != typ:
                missing.append(f"{name} ({typ}): {'missing' if got is None else 'exported as ' + got}")
    assert not missing, "contract metrics the server does not export:\n" + "\n".join(missing)
