"""A GGUF quantised as llama-quantize writes one, served by the real binary:
tests/golden/decoder_models/llama_quant_mix/model.gguf holds each of its 16
weight matrices in one of llama.cpp's block types (Q4_0, Q4_1, Q5_0, Q5_1,
Q8_0, IQ4_NL, Q2_K ... Q6_K, IQ4_XS; tools/golden/decoder_make_models.py).

Greedy continuations over gRPC equal those of the HF model holding the same
file's values as gguf-py dequantises them (tests/golden/decoder_logits/
llama_quant_mix.json, tools/golden/decoder_logits.py), and the weight bytes
the server reports are those of the expanded f32 (or bf16) tensors, which
is what it holds, not the file's size."""
import json

import grpc
import gguf
import numpy as np
import pytest

from conftest import REPO, ServerProcess, http_get

MODEL = REPO / "tests/golden/decoder_models/llama_quant_mix/model.gguf"
GOLDEN = json.loads((REPO / "tests/golden/decoder_logits/llama_quant_mix.json").read_text())


def expanded_bytes(bytes_per_value):
    reader = gguf.GGUFReader(str(MODEL))
    return sum(int(np.prod([int(d) for d in t.shape])) for t in reader.tensors) * bytes_per_value


def metric(server, name):
    _, body = http_get(server.url("/metrics"))
    for line in body.decode().splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not exported")


@pytest.mark.parametrize("weight_dtype,bytes_per_value", [("f32", 4), ("bf16", 2)])
def test_a_quantised_gguf_serves_the_dequantised_models_greedy_answers(pb, proto_modules, weight_dtype,
                                                                        bytes_per_value):
    _, pb_grpc = proto_modules
    server = ServerProcess(f"--decoder-model={MODEL}", "--threads=1", f"--weight-dtype={weight_dtype}")
    try:
        with grpc.insecure_channel(server.grpc_target) as channel:
            stub = pb_grpc.InferenceStub(channel)
            info = stub.GetModelInfo(pb.GetModelInfoRequest(model=pb.MODEL_KIND_DECODER), timeout=30)
            (decoder,) = info.models
            assert (decoder.architecture, decoder.hidden_size, decoder.weight_dtype) == ("llama", 256, weight_dtype)
            # What is held: every value expanded (norms stay f32 and packed
            # panels pad their columns, under 1 % here), 3 to 6 times the file.
            expanded = expanded_bytes(bytes_per_value)
            assert expanded <= decoder.weight_bytes <= expanded * 1.01, (decoder.weight_bytes, expanded)
            assert decoder.weight_bytes > 2.5 * MODEL.stat().st_size
            assert metric(server, "attnserve_weight_bytes") == decoder.weight_bytes
            if weight_dtype != "f32":
                return  # bf16 storage rounds the weights: not the reference's numbers
            for prompt, want in zip(GOLDEN["prompts"], GOLDEN["greedy"]):
                request = pb.GenerateRequest(sampling=pb.SamplingParams(
                    max_new_tokens=len(want), temperature=0.0, ignore_eos=True))
                request.token_ids.ids.extend(prompt)
                got = [t for msg in stub.Generate(request, timeout=120) for t in msg.token_ids]
                assert got == want, prompt
    finally:
        server.close()
