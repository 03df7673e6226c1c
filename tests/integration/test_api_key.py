"""--api-key / ATTNSERVE_API_KEY on the real binary: both doors refuse
inference calls without "Authorization: Bearer <key>" (HTTP 401 with
WWW-Authenticate, gRPC UNAUTHENTICATED), answer them with it (the official
openai client sends it), and leave probes, /metrics and gRPC health open."""
import http.client
import json

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from conftest import REPO, ServerProcess, http_get

DECODER = REPO.parent / "shared/models/stories260K/stories260K.gguf"
KEY = "test-key-7f3a"


def post(server, path, body, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    conn.request("POST", path, body=json.dumps(body).encode(),
                 headers={"Content-Type": "application/json", **(headers or {})})
    r = conn.getresponse()
    out = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    conn.close()
    return out


@pytest.fixture(scope="module", params=["flag", "env"])
def server(request):
    if request.param == "flag":
        s = ServerProcess(f"--decoder-model={DECODER}", "--threads=1", f"--api-key={KEY}")
    else:
        s = ServerProcess(f"--decoder-model={DECODER}", "--threads=1", env={"ATTNSERVE_API_KEY": KEY})
    yield s
    log = s.output()
    s.close()
    assert KEY not in log, "the key must never be logged"


def test_http_needs_the_key(server):
    body = {"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0}
    status, headers, raw = post(server, "/v1/completions", body)
    assert status == 401 and headers.get("www-authenticate") == "Bearer", raw
    assert json.loads(raw)["error"]["code"] == "unauthenticated"
    status, _, _ = post(server, "/v1/completions", body, {"Authorization": "Bearer wrong"})
    assert status == 401
    status, _, raw = post(server, "/v1/completions", body, {"Authorization": f"Bearer {KEY}"})
    assert status == 200, raw
    assert json.loads(raw)["choices"][0]["text"]


def test_probes_and_metrics_stay_open(server):
    for path in ("/healthz", "/readyz", "/metrics"):
        status, _ = http_get(server.url(path))
        assert status == 200, path
    _, body = http_get(server.url("/metrics"))
    assert 'attnserve_requests_total{code="unauthenticated",rpc="Generate"}' in body.decode()


def test_grpc_needs_the_key(server, pb):
    from attnserve.v1 import inference_pb2_grpc

    request = pb.GenerateRequest(text="The cat", sampling=pb.SamplingParams(max_new_tokens=4, temperature=0.0))
    with grpc.insecure_channel(server.grpc_target) as channel:
        stub = inference_pb2_grpc.InferenceStub(channel)
        with pytest.raises(grpc.RpcError) as err:
            list(stub.Generate(request, timeout=30))
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as err:
            stub.Tokenize(pb.TokenizeRequest(text="x"), timeout=30, metadata=[("authorization", "Bearer no")])
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        tokens = [t for msg in stub.Generate(request, timeout=30, metadata=[("authorization", f"Bearer {KEY}")])
                  for t in msg.token_ids]
        assert len(tokens) == 4
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert health.status == health_pb2.HealthCheckResponse.SERVING


def test_openai_client_with_the_key(server):
    openai = pytest.importorskip("openai")
    good = openai.OpenAI(base_url=server.url("/v1"), api_key=KEY, max_retries=0)
    out = good.completions.create(model="m", prompt="Once upon a time", max_tokens=4, temperature=0)
    assert out.choices[0].text
    bad = openai.OpenAI(base_url=server.url("/v1"), api_key="nope", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.completions.create(model="m", prompt="x", max_tokens=2)
