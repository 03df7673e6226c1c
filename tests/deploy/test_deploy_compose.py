"""deploy/compose.yaml (no Docker engine here, so it is read): every mounted
file exists, and the service, Prometheus and Grafana point at each other and
agree with the image and the Kubernetes manifests."""
import pathlib

import yaml

from conftest import REPO

DEPLOY = REPO / "deploy"


def compose():
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_services_and_build():
    c = compose()
    assert set(c["services"]) == {"attnserve", "prometheus", "grafana"}
    build = c["services"]["attnserve"]["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == (REPO / "Dockerfile").resolve()


def test_bind_mounts_exist_and_named_volumes_are_declared():
    c = compose()
    for name, svc in c["services"].items():
        for v in svc.get("volumes", []):
            if v["type"] == "bind":
                source = v["source"]
                if source.startswith("${"):
                    continue  # the user's models directory
                assert (DEPLOY / source).exists(), f"{name}: {source} does not exist"
            else:
                assert v["source"] in c["volumes"], f"{name}: volume {v['source']} not declared"


def test_prometheus_scrapes_the_service_and_loads_the_rules():
    c = compose()
    prom = c["services"]["prometheus"]
    mount = next(v for v in prom["volumes"] if v["target"] == "/etc/prometheus")
    config_arg = next(a for a in prom["command"] if a.startswith("--config.file="))
    config = DEPLOY / mount["source"] / pathlib.PurePosixPath(config_arg.split("=", 1)[1]).relative_to("/etc/prometheus")
    cfg = yaml.safe_load(config.read_text())
    job = next(j for j in cfg["scrape_configs"] if j["job_name"] == "attnserve")
    (target,) = job["static_configs"][0]["targets"]
    host, port = target.split(":")
    assert host == "attnserve" and f"--http-port={port}" in c["services"]["attnserve"]["command"]
    for rule_file in cfg["rule_files"]:
        assert (config.parent / rule_file).is_file()


def test_grafana_reads_prometheus_and_the_dashboard():
    c = compose()
    graf = c["services"]["grafana"]
    prov = DEPLOY / next(v for v in graf["volumes"] if v["target"] == "/etc/grafana/provisioning")["source"]
    ds = yaml.safe_load((prov / "datasources" / "prometheus.yml").read_text())["datasources"][0]
    assert ds["url"] == "http://prometheus:9090" and ds["type"] == "prometheus"
    assert "9090:9090" in c["services"]["prometheus"]["ports"]
    provider = yaml.safe_load((prov / "dashboards" / "attnserve.yml").read_text())["providers"][0]
    dash_mounts = [v for v in graf["volumes"] if v["target"].startswith(provider["options"]["path"] + "/")]
    assert dash_mounts and all((DEPLOY / v["source"]).suffix == ".json" for v in dash_mounts)


def test_server_runs_as_in_kubernetes():
    svc = compose()["services"]["attnserve"]
    dep = yaml.safe_load((DEPLOY / "kubernetes" / "base" / "deployment.yaml").read_text())
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    assert svc["command"] == container["args"]
    assert svc["read_only"] is True and svc["cap_drop"] == ["ALL"]
    assert svc["user"].split(":")[0] == str(dep["spec"]["template"]["spec"]["securityContext"]["runAsUser"])
    assert {v["target"] for v in svc["volumes"]} == {"/models", "/var/lib/attnserve"}
    assert svc["mem_limit"] == container["resources"]["limits"]["memory"].replace("Mi", "m")
