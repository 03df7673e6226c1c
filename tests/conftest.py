"""Shared pytest fixtures: the repo, the built binary, and a running server.

The server binary links Debian 13 libraries, so it is started through
`./dev exec` (inside the build root on a Debian 12 host, directly on Debian 13).
`./dev exec` replaces itself with the binary, so the Popen's PID is the
server's own and signals reach it.
"""
import http.client
import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

REPO = pathlib.Path(os.environ.get("ATTNSERVE_REPO", pathlib.Path(__file__).resolve().parents[1]))
BIN = pathlib.Path(os.environ.get("ATTNSERVE_BIN", REPO / "build" / "release" / "attnserve"))
DEV = REPO / "dev"


_HANDED_OUT_PORTS: set = set()


def model_copy_with_file(source: pathlib.Path, name: str, file: str, content: dict) -> pathlib.Path:
    """A copy of a model directory whose `file` (a JSON file) is `content`,
    under the checkout: the server runs in the project's Debian root, which
    sees the checkout but not this machine's /tmp."""
    import shutil
    out = REPO / ".cache/test-data" / name
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(source, out)
    (out / file).write_text(json.dumps(content))
    return out


def model_copy_with_tokenizer_config(source: pathlib.Path, name: str, tokenizer_config: dict) -> pathlib.Path:
    """The copy with another tokenizer_config.json (a chat template, its
    special tokens)."""
    return model_copy_with_file(source, name, "tokenizer_config.json", tokenizer_config)


def model_copy_with_config(source: pathlib.Path, name: str, config: dict) -> pathlib.Path:
    """The copy with another config.json (the same weights under another
    config layout, or a variant to be refused)."""
    return model_copy_with_file(source, name, "config.json", config)


def free_port() -> int:
    """A port nothing listens on now, never one this process handed out
    before: the kernel may give the same free port to two binds in a row
    (seen: a server started with --grpc-port and --http-port both 33671)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT_PORTS:
            _HANDED_OUT_PORTS.add(port)
            return port


def http_get(url: str, timeout: float = 5.0):
    """(status, body) of a GET; HTTP errors are returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()



def post_json(server, path, body, timeout: float = 60.0):
    """(status, parsed JSON body) of a JSON POST to the server's HTTP port;
    HTTP errors are returned, not raised."""
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=timeout)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, json.loads(r.read())
    finally:
        conn.close()


def metric(server, name, default=None):
    """The value of a sample in the server's /metrics, named exactly as exposed
    (labels included); `default` when the series does not exist (yet)."""
    _, body = http_get(server.url("/metrics"), timeout=10)
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    if default is not None:
        return default
    raise AssertionError(f"{name} not in /metrics")


def wait_for_metric(server, name, value, timeout=30.0):
    """Polls /metrics until the sample equals `value` (a missing one counts as 0)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if metric(server, name, default=0.0) == value:
            return
        time.sleep(0.02)
    raise AssertionError(f"{name} stayed at {metric(server, name)}, expected {value}")

# What AddressSanitizer, LeakSanitizer and UBSan print when they find something
# (a sanitizer build, `./dev test asan`); never printed by a normal build.
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def assert_no_sanitizer_report(output: str):
    for marker in SANITIZER_MARKERS:
        if marker in output:
            raise AssertionError(f"sanitizer report ({marker!r}) in the server's output:\n{output[-20000:]}")


def openai_embeddings(server, texts, model, **fields):
    """POST /v1/embeddings; the vectors in input order (a numpy array)."""
    import numpy as np
    status, body = post_json(server, "/v1/embeddings", {"input": texts, "model": model, **fields})
    assert status == 200, body
    return np.array([d["embedding"] for d in sorted(body["data"], key=lambda d: d["index"])]), body


def encoder_server(model_dir):
    """A module fixture's body: an attnserve serving `model_dir` as its
    encoder (2 threads), closed after the module's tests."""
    s = ServerProcess(f"--encoder-model={model_dir}", "--threads=2")
    yield s
    s.close()


def loaded_model_info(server):
    """The one model's entry of GET /v1/model_info."""
    status, raw = http_get(f"http://127.0.0.1:{server.http_port}/v1/model_info")
    assert status == 200, raw
    (info,) = json.loads(raw)["models"]
    return info


def assert_embeddings_equal_sentence_transformers(server, model_dir, texts, model):
    """/v1/embeddings (model name `model`) against
    SentenceTransformer(model_dir).encode within 1e-4; returns
    (sentence-transformers' vectors, the route's body) for further checks."""
    import numpy as np
    st = pytest.importorskip("sentence_transformers")
    want = st.SentenceTransformer(str(model_dir), device="cpu").encode(texts, convert_to_numpy=True)
    got, body = openai_embeddings(server, texts, model)
    np.testing.assert_allclose(got, want, atol=1e-4)
    return want, body


def assert_rerank_equals_classifier_goldens(server, model_dir, logits_cases, extra_docs):
    """A reranker's golden cases ({text, text_pair, logits}, a script's
    classifier_cases): the first pair's query over every pair's document and
    `extra_docs` through TEI's /rerank (truncating) against CrossEncoder on
    the same directory, ranked as CrossEncoder ranks them; then the first
    pair's raw score against its golden logit."""
    import numpy as np
    pairs = [c for c in logits_cases if c["text_pair"] is not None]
    query = pairs[0]["text"]
    documents = [c["text_pair"] for c in pairs] + list(extra_docs)
    want, body = assert_rerank_equals_cross_encoder(server, model_dir, query, documents, truncate=True)
    assert [r["index"] for r in body] == list(np.argsort(-want, kind="stable"))
    status, raw = post_json(server, "/rerank", {"query": query, "texts": documents[:1], "raw_scores": True})
    assert status == 200, raw
    assert raw[0]["score"] == pytest.approx(pairs[0]["logits"][0], abs=1e-4)


def assert_tei_tokenize_equals_tokenizers(server, model_dir, texts):
    """TEI's /tokenize against Hugging Face tokenizers on the directory's
    tokenizer.json (tei_tokens_reference)."""
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(pathlib.Path(model_dir) / "tokenizer.json"))
    status, body = post_json(server, "/tokenize", {"inputs": texts})
    assert status == 200, body
    assert body == [tei_tokens_reference(tok, t) for t in texts]


# A reranking query and documents for the cross-encoder tests: one relevant,
# one not, and one longer than the tiny models' token limit (so `truncate`
# matters).
RERANK_QUERY = "what is the capital of france?"
RERANK_DOCS = ["Paris is the capital and largest city of France.", "Bananas are a good source of potassium.",
               " ".join(["alpha beta gamma delta"] * 20)]


def assert_rerank_equals_cross_encoder(server, model_dir, query, docs, **fields):
    """TEI's /rerank against sentence-transformers' CrossEncoder.predict on
    the same directory, score by score; returns (CrossEncoder's scores, the
    route's answer) for further checks."""
    st = pytest.importorskip("sentence_transformers")
    want = st.CrossEncoder(str(model_dir), device="cpu").predict([(query, d) for d in docs])
    status, body = post_json(server, "/rerank", {"query": query, "texts": docs, **fields})
    assert status == 200, body
    got = {r["index"]: r["score"] for r in body}
    assert [got[i] for i in range(len(docs))] == pytest.approx([float(x) for x in want], abs=2e-5)
    return want, body


def assert_predict_equals_pipeline(server, model_dir, texts, **fields):
    """TEI's /predict of each text against transformers' text-classification
    pipeline (every label, best first) on the same directory."""
    transformers = pytest.importorskip("transformers")
    pipe = transformers.pipeline("text-classification", model=str(model_dir), device="cpu", top_k=None)
    status, body = post_json(server, "/predict", {"inputs": [[t] for t in texts], **fields})
    assert status == 200, body
    for text, got, want in zip(texts, body, pipe(texts, truncation=True)):
        assert [p["label"] for p in got] == [w["label"] for w in want], text
        assert [p["score"] for p in got] == pytest.approx([w["score"] for w in want], abs=2e-5), text


def tei_tokens_reference(tokenizer, text, add_special_tokens=True):
    """TEI's /tokenize tokens for `text` from a Hugging Face tokenizers
    encoding: byte offsets, the text's own bytes there, special tokens (the
    template's, by special_tokens_mask) with their token string and null
    offsets."""
    enc = tokenizer.encode(text, add_special_tokens=add_special_tokens)
    raw = text.encode()
    out = []
    for i, (id_, special) in enumerate(zip(enc.ids, enc.special_tokens_mask)):
        if special:
            out.append({"id": id_, "text": enc.tokens[i], "special": True, "start": None, "stop": None})
            continue
        # tokenizers' offsets are in characters; TEI's (from the Rust crate) in bytes.
        start = len(text[:enc.offsets[i][0]].encode())
        stop = len(text[:enc.offsets[i][1]].encode())
        out.append({"id": id_, "text": raw[start:stop].decode(), "special": False, "start": start, "stop": stop})
    return out


class ServerProcess:
    """A running attnserve on free loopback ports; stopped on close()."""

    def __init__(self, *flags: str, ready_timeout: float = 120.0, env: dict | None = None,
                 env_drop: tuple = (), preexec_fn=None):
        """`env` is added to this process's environment, `env_drop` names
        variables left out of it; `preexec_fn` runs in the child before exec
        (subprocess.Popen's)."""
        self.grpc_port = free_port()
        self.http_port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="attnserve-", suffix=".log", delete=False)
        cmd = [str(DEV), "exec", str(BIN), f"--grpc-port={self.grpc_port}", f"--http-port={self.http_port}",
               "--listen-address=127.0.0.1", *flags]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, cwd=REPO,
                                     stdin=subprocess.DEVNULL, preexec_fn=preexec_fn,
                                     env={k: v for k, v in {**os.environ, **(env or {})}.items() if k not in env_drop})
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.output()}")
            try:
                status, _ = http_get(self.url("/readyz"), timeout=1.0)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        self.close()
        raise RuntimeError(f"server not ready after {ready_timeout}s:\n{self.output()}")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.http_port}{path}"

    @property
    def grpc_target(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def output(self) -> str:
        self.log.flush()
        return pathlib.Path(self.log.name).read_text(errors="replace")

    def close(self):
        """Stops the server; fails (raises) if it wrote a sanitizer report, or
        if SIGTERM's drain ended in a non-zero exit (an ASan/LSan abort at
        shutdown shows up only there, after the test itself has passed)."""
        terminated_here = self.proc.poll() is None
        if terminated_here:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                terminated_here = False  # killed: its exit code says nothing
        output = self.output()
        rc = self.proc.returncode
        self.log.close()
        os.unlink(self.log.name)
        assert_no_sanitizer_report(output)
        if terminated_here and rc != 0:
            raise AssertionError(f"server exited with {rc} after SIGTERM:\n{output[-20000:]}")


@pytest.fixture
def server_factory():
    servers = []

    def start(*flags, **kwargs):
        s = ServerProcess(*flags, **kwargs)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


@pytest.fixture(scope="module")
def client(server):
    """The official openai client against the module's own `server` fixture."""
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=server.url("/v1"), api_key="unused", max_retries=0)


@pytest.fixture(scope="session")
def proto_modules(tmp_path_factory):
    """Python stubs for attnserve.v1, generated from the proto with grpcio-tools."""
    from grpc_tools import protoc

    out = tmp_path_factory.mktemp("proto_py")
    rc = protoc.main(["protoc", f"-I{REPO / 'proto'}", f"--python_out={out}", f"--grpc_python_out={out}",
                      str(REPO / "proto" / "attnserve" / "v1" / "inference.proto")])
    assert rc == 0, "protoc failed"
    sys.path.insert(0, str(out))
    from attnserve.v1 import inference_pb2, inference_pb2_grpc  # noqa: E402
    return inference_pb2, inference_pb2_grpc


@pytest.fixture(scope="session")
def pb(proto_modules):
    """The attnserve.v1 message module (stubs importable as attnserve.v1.inference_pb2_grpc)."""
    return proto_modules[0]


def run_in_root(*args, input_bytes=None, timeout=120):
    """Runs a program inside the build environment (e.g. promtool)."""
    return subprocess.run([str(DEV), "exec", *args], input=input_bytes, capture_output=True, timeout=timeout,
                          cwd=REPO)
