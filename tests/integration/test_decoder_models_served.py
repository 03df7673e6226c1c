"""Decoder families and file kinds served by the real binary, each against
its independent reference (tools/golden/decoder_logits.py): greedy
continuations over gRPC equal transformers' on the same weights.

- qwen3_tiny (Qwen3: per-head q/k RMSNorm, head_dim 32 over hidden 64, tied
  embeddings), from its HF directory and from its GGUF (arch qwen3).
- llama_quant_mix: a GGUF as llama-quantize writes one, each of its 16
  weight matrices in one of llama.cpp's block types (Q4_0, Q4_1, Q5_0, Q5_1,
  Q8_0, IQ4_NL, Q2_K ... Q6_K, IQ4_XS; tools/golden/decoder_make_models.py),
  against the HF model holding the file's values as gguf-py dequantises
  them; the weight bytes the server reports are those of the expanded f32
  (or bf16) tensors, which is what it holds, not the file's size."""
import json

import grpc
import gguf
import numpy as np
import pytest

from conftest import REPO, ServerProcess, metric

MODELS = REPO / "tests/golden/decoder_models"
QUANT_MIX = MODELS / "llama_quant_mix/model.gguf"


def golden(name):
    return json.loads((REPO / f"tests/golden/decoder_logits/{name}.json").read_text())


def greedy_ids(pb, stub, prompt, n):
    request = pb.GenerateRequest(sampling=pb.SamplingParams(max_new_tokens=n, temperature=0.0, ignore_eos=True))
    request.token_ids.ids.extend(prompt)
    return [t for msg in stub.Generate(request, timeout=120) for t in msg.token_ids]


@pytest.mark.parametrize("path,name,architecture", [
    (MODELS / "qwen3_tiny", "qwen3_tiny", "qwen3"),
    (MODELS / "qwen3_tiny/model.gguf", "qwen3_tiny", "qwen3"),
    (QUANT_MIX, "llama_quant_mix", "llama"),
], ids=["qwen3_hf", "qwen3_gguf", "llama_quant_mix_gguf"])
def test_served_greedy_answers_equal_transformers(pb, proto_modules, path, name, architecture):
    _, pb_grpc = proto_modules
    ref = golden(name)
    server = ServerProcess(f"--decoder-model={path}", "--threads=1")
    try:
        with grpc.insecure_channel(server.grpc_target) as channel:
            stub = pb_grpc.InferenceStub(channel)
            (info,) = stub.GetModelInfo(pb.GetModelInfoRequest(model=pb.MODEL_KIND_DECODER), timeout=30).models
            assert info.architecture == architecture
            for prompt, want in zip(ref["prompts"], ref["greedy"]):
                assert greedy_ids(pb, stub, prompt, len(want)) == want, prompt
    finally:
        server.close()


def expanded_bytes(bytes_per_value):
    reader = gguf.GGUFReader(str(QUANT_MIX))
    return sum(int(np.prod([int(d) for d in t.shape])) for t in reader.tensors) * bytes_per_value


@pytest.mark.parametrize("weight_dtype,bytes_per_value", [("f32", 4), ("bf16", 2)])
def test_a_quantised_gguf_holds_its_expanded_weights(pb, proto_modules, weight_dtype, bytes_per_value):
    _, pb_grpc = proto_modules
    server = ServerProcess(f"--decoder-model={QUANT_MIX}", "--threads=1", f"--weight-dtype={weight_dtype}")
    try:
        with grpc.insecure_channel(server.grpc_target) as channel:
            stub = pb_grpc.InferenceStub(channel)
            (info,) = stub.GetModelInfo(pb.GetModelInfoRequest(model=pb.MODEL_KIND_DECODER), timeout=30).models
            assert (info.hidden_size, info.weight_dtype) == (256, weight_dtype)
            # Every value expanded (norms stay f32 and packed panels pad
            # their columns, under 1 % here), 3 to 6 times the file.
            expanded = expanded_bytes(bytes_per_value)
            assert expanded <= info.weight_bytes <= expanded * 1.01, (info.weight_bytes, expanded)
            assert info.weight_bytes > 2.5 * QUANT_MIX.stat().st_size
            assert metric(server, 'attnserve_weight_bytes{model="decoder"}') == info.weight_bytes
            # bf16 storage still answers (its numbers are not the reference's).
            assert len(greedy_ids(pb, stub, golden("llama_quant_mix")["prompts"][0], 8)) == 8
    finally:
        server.close()
