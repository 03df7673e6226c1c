"""deploy/prometheus: promtool (Debian's prometheus package, run inside the
build environment) checks the configs and rules and runs the rule unit tests;
every rule has a unit test."""
import re
import shutil
import uuid

import pytest
import yaml

from conftest import REPO, run_in_root

PROM = REPO / "deploy" / "prometheus"
CONFIGS = sorted(PROM.glob("prometheus*.yml"))
RULE_FILES = sorted((PROM / "rules").glob("*.yml"))
RULE_TESTS = sorted((PROM / "tests").glob("*.yml"))


def promtool(*args):
    result = run_in_root("promtool", *map(str, args))
    return result.returncode, result.stdout.decode() + result.stderr.decode()


def test_files_exist():
    assert len(CONFIGS) >= 1 and len(RULE_FILES) >= 2 and len(RULE_TESTS) >= 1


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_promtool_check_config(config):
    rc, out = promtool("check", "config", config)
    assert rc == 0, out
    # The configs load every rule file (promtool checks them as part of the config).
    loaded = yaml.safe_load(config.read_text())["rule_files"]
    assert sorted((config.parent / f).resolve() for f in loaded) == [p.resolve() for p in RULE_FILES]


def test_promtool_check_rules():
    rc, out = promtool("check", "rules", *RULE_FILES)
    assert rc == 0, out


@pytest.mark.parametrize("tests", RULE_TESTS, ids=lambda p: p.name)
def test_promtool_test_rules(tests):
    rc, out = promtool("test", "rules", tests)
    assert rc == 0, out
    assert "SUCCESS" in out


def rules():
    out = []
    for f in RULE_FILES:
        for group in yaml.safe_load(f.read_text())["groups"]:
            out.extend(group["rules"])
    return out


def test_every_rule_has_a_unit_test():
    records = {r["record"] for r in rules() if "record" in r}
    alerts = {r["alert"] for r in rules() if "alert" in r}
    assert {"AttnserveQueueTimeHigh", "AttnserveKVCacheSaturated", "AttnserveErrorRatioHigh",
            "AttnserveRestarting"} <= alerts
    for needed in ("time_to_first_token_seconds:p50", "time_to_first_token_seconds:p99",
                   "inter_token_latency_seconds:p50", "inter_token_latency_seconds:p99",
                   "tokens_processed:rate", "kv_cache_utilisation"):
        assert any(needed in r for r in records), f"no recording rule for {needed}"
    tested_exprs, fired, quiet = "", set(), set()
    for f in RULE_TESTS:
        for case in yaml.safe_load(f.read_text())["tests"]:
            tested_exprs += " ".join(t["expr"] for t in case.get("promql_expr_test", [])) + " "
            for t in case.get("alert_rule_test", []):
                (fired if t["exp_alerts"] else quiet).add(t["alertname"])
    untested = {r for r in records if not re.search(re.escape(r) + r"\b", tested_exprs)}
    assert not untested, f"recording rules without a promql_expr_test: {untested}"
    assert alerts - fired == set(), f"alerts never shown to fire: {alerts - fired}"
    assert alerts - quiet == set(), f"alerts never shown to stay quiet: {alerts - quiet}"
    for r in rules():
        if "alert" in r:
            assert r["labels"]["severity"] in ("warning", "critical")
            anchor = r["annotations"]["runbook_url"].split("#")[1]
            assert anchor == r["alert"].lower()


def test_a_wrong_expectation_fails():
    """promtool test rules is live: change one expected value and it fails."""
    original = RULE_TESTS[0].read_text()
    mutated = original.replace("value: 950000", "value: 950001", 1)
    assert mutated != original
    tmp = REPO / ".cache" / "tmp" / f"rules-test-{uuid.uuid4().hex}"
    tmp.mkdir(parents=True)
    (tmp / "rules").symlink_to(PROM / "rules")
    (tmp / "tests").mkdir()
    (tmp / "tests" / "t.yml").write_text(mutated)
    try:
        rc, out = promtool("test", "rules", tmp / "tests" / "t.yml")
    finally:
        shutil.rmtree(tmp)
    assert rc != 0 and "9.50001E+05" in out, out


def test_every_alert_has_a_runbook_section():
    """runbook_url points at docs/operations.md#<alert>: that heading exists."""
    doc = (REPO / "docs" / "operations.md").read_text()
    headings = {re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-")
                for h in re.findall(r"^#+ (.*)$", doc, re.M)}
    for r in rules():
        if "alert" in r:
            path, anchor = r["annotations"]["runbook_url"].split("#")
            assert path == "docs/operations.md"
            assert anchor in headings, f"docs/operations.md has no section for {r['alert']}"
