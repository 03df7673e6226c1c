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
  (or bf16) tensors, which is what it holds, not the file's size.
- mistral_swa_tiny / qwen2_swa_tiny: sliding-window attention (6 keys on
  every layer; 5 keys on layers 1-2), prompts and continuations far past the
  window, one at a time and all at once in chunked-prefill steps.
- gemma3_tiny (Gemma 3's text decoder: sandwich norms scaling by 1 + weight,
  GeGLU, scaled embeddings, q/k norms, query_pre_attn_scalar, 6-key windows
  on layers 0-2 with their own rope base, linear-scaled rope on layer 3),
  likewise; and its Gemma-layout tokenizer through /tokenize.
- gemma2_tiny (Gemma 2: attention scores and logits capped by tanh, windows
  on the even layers) and gemma_tiny (Gemma 1), likewise.
- Gemma GGUF files as llama.cpp's converter writes them (gemma_tiny,
  gemma2_gguf_tiny, gemma3_gguf_tiny: norms stored as 1 + weight, the
  attention scale and layer pattern implied by the architecture), against
  transformers on the same weights; gemma3's batched with chunked prefill.
- phi3_tiny (Phi-3: fused qkv_proj / gate_up_proj, a 6-key window on every
  layer) and phi3_longrope_tiny (longrope over 256 original positions,
  partial rotary) from its directory and its GGUF: at the default context
  (the original 256 positions, the short factors) and with
  --decoder-context-length=1024 (the long factors, prompts past 256).
- Mixtures of experts: qwen3_moe_tiny (8 experts, the top 3 renormalised)
  from its directory and its GGUF (arch qwen3moe), qwen3_moe_unnorm_tiny
  (not renormalised), qwen2_moe_tiny (the top 2 of 8 not renormalised, a
  gated shared expert) from its directory and its GGUF (arch qwen2moe),
  mixtral_tiny (4 experts, the top 2) from its directory
  and its GGUF (arch llama with experts); all at once in chunked-prefill
  steps (many tokens of several sequences routed in one step), and held in
  Q8_0 with the router kept f32.
- olmo2_tiny (OLMo 2: whole-projection q/k norms, only post-norms) and
  olmoe_tiny (OLMoE: the same q/k norms, 8 experts, the top 2 not
  renormalised) from their directories and GGUF files, olmoe_clip_tiny
  (clip_qkv) from its directory.
- smollm3_tiny (SmolLM3: layer 3 of 4 without rope) from its directory and
  its GGUF.
- granite_tiny (Granite 3: embedding, attention, residual and logit
  multipliers) and granitemoe_tiny (Granite MoE: the same, 6 experts stacked
  in its checkpoint, the top 2) from their directories and GGUF files."""
import json
from concurrent.futures import ThreadPoolExecutor

import grpc
import gguf
import numpy as np
import pytest

from conftest import REPO, ServerProcess, http_get, metric

MODELS = REPO / "tests/golden/decoder_models"
QUANT_MIX = MODELS / "llama_quant_mix/model.gguf"


def golden(name):
    return json.loads((REPO / f"tests/golden/decoder_logits/{name}.json").read_text())


def greedy_ids(pb, stub, prompt, n):
    request = pb.GenerateRequest(sampling=pb.SamplingParams(max_new_tokens=n, temperature=0.0, ignore_eos=True))
    request.token_ids.ids.extend(prompt)
    return [t for msg in stub.Generate(request, timeout=120) for t in msg.token_ids]


def greedy_all_at_once(pb, pb_grpc, server, prompts, greedy):
    """Every prompt's greedy continuation (as long as its reference's), all streams at once."""
    with grpc.insecure_channel(server.grpc_target) as channel:
        stub = pb_grpc.InferenceStub(channel)
        with ThreadPoolExecutor(len(prompts)) as pool:
            return list(pool.map(lambda p: greedy_ids(pb, stub, p[0], len(p[1])), zip(prompts, greedy)))


@pytest.mark.parametrize("path,name,architecture", [
    (MODELS / "qwen3_tiny", "qwen3_tiny", "qwen3"),
    (MODELS / "qwen3_tiny/model.gguf", "qwen3_tiny", "qwen3"),
    (QUANT_MIX, "llama_quant_mix", "llama"),
    (MODELS / "mistral_swa_tiny", "mistral_swa_tiny", "mistral"),
    (MODELS / "qwen2_swa_tiny", "qwen2_swa_tiny", "qwen2"),
    (MODELS / "gemma3_tiny", "gemma3_tiny", "gemma3_text"),
    (MODELS / "gemma2_tiny", "gemma2_tiny", "gemma2"),
    (MODELS / "gemma_tiny", "gemma_tiny", "gemma"),
    (MODELS / "gemma_tiny/model.gguf", "gemma_tiny", "gemma"),
    (MODELS / "gemma2_gguf_tiny/model.gguf", "gemma2_gguf_tiny", "gemma2"),
    (MODELS / "gemma3_gguf_tiny/model.gguf", "gemma3_gguf_tiny", "gemma3"),
    (MODELS / "phi3_tiny", "phi3_tiny", "phi3"),
    (MODELS / "phi3_longrope_tiny", "phi3_longrope_tiny", "phi3"),
    (MODELS / "phi3_longrope_tiny/model.gguf", "phi3_longrope_tiny", "phi3"),
    (MODELS / "qwen3_moe_tiny", "qwen3_moe_tiny", "qwen3_moe"),
    (MODELS / "qwen3_moe_tiny/model.gguf", "qwen3_moe_tiny", "qwen3moe"),
    (MODELS / "qwen3_moe_unnorm_tiny", "qwen3_moe_unnorm_tiny", "qwen3_moe"),
    (MODELS / "mixtral_tiny", "mixtral_tiny", "mixtral"),
    (MODELS / "mixtral_tiny/model.gguf", "mixtral_tiny", "llama"),
    (MODELS / "qwen2_moe_tiny", "qwen2_moe_tiny", "qwen2_moe"),
    (MODELS / "qwen2_moe_tiny/model.gguf", "qwen2_moe_tiny", "qwen2moe"),
    (MODELS / "olmo2_tiny", "olmo2_tiny", "olmo2"),
    (MODELS / "olmo2_tiny/model.gguf", "olmo2_tiny", "olmo2"),
    (MODELS / "olmoe_tiny", "olmoe_tiny", "olmoe"),
    (MODELS / "olmoe_tiny/model.gguf", "olmoe_tiny", "olmoe"),
    (MODELS / "olmoe_clip_tiny", "olmoe_clip_tiny", "olmoe"),
    (MODELS / "smollm3_tiny", "smollm3_tiny", "smollm3"),
    (MODELS / "smollm3_tiny/model.gguf", "smollm3_tiny", "smollm3"),
    (MODELS / "granite_tiny", "granite_tiny", "granite"),
    (MODELS / "granite_tiny/model.gguf", "granite_tiny", "granite"),
    (MODELS / "granitemoe_tiny", "granitemoe_tiny", "granitemoe"),
    (MODELS / "granitemoe_tiny/model.gguf", "granitemoe_tiny", "granitemoe"),
], ids=["qwen3_hf", "qwen3_gguf", "llama_quant_mix_gguf", "mistral_sliding_window", "qwen2_sliding_window",
        "gemma3_text", "gemma2", "gemma", "gemma_gguf", "gemma2_gguf", "gemma3_gguf", "phi3", "phi3_longrope",
        "phi3_longrope_gguf", "qwen3_moe", "qwen3_moe_gguf", "qwen3_moe_unnormalised", "mixtral", "mixtral_gguf",
        "qwen2_moe", "qwen2_moe_gguf", "olmo2", "olmo2_gguf", "olmoe", "olmoe_gguf", "olmoe_clip_qkv", "smollm3",
        "smollm3_gguf", "granite", "granite_gguf", "granitemoe", "granitemoe_gguf"])
def test_served_greedy_answers_equal_transformers(pb, proto_modules, path, name, architecture):
    _, pb_grpc = proto_modules
    ref = golden(name)
    server = ServerProcess(f"--decoder-model={path}", "--threads=1")
    try:
        with grpc.insecure_channel(server.grpc_target) as channel:
            stub = pb_grpc.InferenceStub(channel)
            (info,) = stub.GetModelInfo(pb.GetModelInfoRequest(model=pb.MODEL_KIND_DECODER), timeout=30).models
            assert info.architecture == architecture
            # A mixture reports its experts (transformers 5 writes num_local_experts for some families).
            cfg = json.loads(((path if path.is_dir() else path.parent) / "config.json").read_text())
            experts = cfg.get("num_experts", cfg.get("num_local_experts", 0))
            assert (info.num_experts, info.experts_per_token) == (experts, cfg["num_experts_per_tok"] if experts else 0)
            for prompt, want in zip(ref["prompts"], ref["greedy"]):
                assert greedy_ids(pb, stub, prompt, len(want)) == want, prompt
    finally:
        server.close()


@pytest.mark.parametrize("name,file", [("mistral_swa_tiny", ""), ("qwen2_swa_tiny", ""), ("gemma3_tiny", ""),
                                       ("gemma2_tiny", ""), ("gemma3_gguf_tiny", "model.gguf"), ("phi3_tiny", ""),
                                       ("qwen3_moe_tiny", "model.gguf"), ("mixtral_tiny", ""), ("granitemoe_tiny", ""),
                                       ("qwen2_moe_tiny", ""), ("olmoe_tiny", "model.gguf")])
def test_streams_batched_and_chunked_equal_transformers(pb, proto_modules, name, file):
    """Every prompt at once, with KV blocks of 4 and steps of 8 tokens: the
    windows start mid-block and mid-chunk, sequences of different lengths
    share each step's attention call; a mixture routes tokens of several
    sequences (prompt chunks and decode tokens) in one step, each expert
    running on the rows that chose it. The answers are transformers' one at
    a time."""
    _, pb_grpc = proto_modules
    ref = golden(name)
    server = ServerProcess(f"--decoder-model={MODELS / name / file}", "--threads=1", "--kv_block_size=4",
                           "--max_step_tokens=8")
    try:
        assert greedy_all_at_once(pb, pb_grpc, server, ref["prompts"], ref["greedy"]) == ref["greedy"]
    finally:
        server.close()


@pytest.mark.parametrize("file", ["", "model.gguf"], ids=["hf", "gguf"])
def test_longrope_context_picks_the_factors_transformers_uses(pb, proto_modules, file):
    """The default context is the original one (256): a 300-token prompt is
    refused naming it, and the log says which factors run and how to get
    the others. With --decoder-context-length=1024 the prompts of 260 and
    300 tokens, all at once in 8-token chunks, continue as transformers
    continues them with the long factors."""
    _, pb_grpc = proto_modules
    long = golden("phi3_longrope_tiny")["long"]
    path = MODELS / "phi3_longrope_tiny" / file
    server = ServerProcess(f"--decoder-model={path}", "--threads=1")
    try:
        with grpc.insecure_channel(server.grpc_target) as channel:
            stub = pb_grpc.InferenceStub(channel)
            (info,) = stub.GetModelInfo(pb.GetModelInfoRequest(model=pb.MODEL_KIND_DECODER), timeout=30).models
            assert info.max_positions == 256
            with pytest.raises(grpc.RpcError) as refused:
                greedy_ids(pb, stub, long["prompts"][1], 1)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "300 tokens; the model's context is 256 tokens" in refused.value.details()
        assert "context 256 tokens (longrope: the short factors, within the original 256 positions" in server.output()
    finally:
        server.close()
    server = ServerProcess(f"--decoder-model={path}", "--threads=1", "--decoder-context-length=1024",
                           "--max_step_tokens=8")
    try:
        assert "context 1024 tokens (longrope: the long factors for every sequence" in server.output()
        assert greedy_all_at_once(pb, pb_grpc, server, long["prompts"], long["greedy"]) == long["greedy"]
    finally:
        server.close()


def test_a_mixture_in_q8_0_keeps_its_router_f32(pb, proto_modules):
    """--weight-dtype=q8_0 on mixtral_tiny's GGUF: every matrix, the experts'
    included, in Q8_0 blocks (1.125 bytes a weight), the routers ([4, 64]
    each) and norms f32; the weight bytes reported are exactly those, each
    matrix's rows padded to the packed kernels' 32-row panels (a router's 4
    rows take a whole panel), and it answers."""
    _, pb_grpc = proto_modules
    path = MODELS / "mixtral_tiny/model.gguf"
    server = ServerProcess(f"--decoder-model={path}", "--threads=1", "--weight-dtype=q8_0")
    try:
        with grpc.insecure_channel(server.grpc_target) as channel:
            stub = pb_grpc.InferenceStub(channel)
            (info,) = stub.GetModelInfo(pb.GetModelInfoRequest(model=pb.MODEL_KIND_DECODER), timeout=30).models
            assert info.weight_dtype == "q8_0"
            reader = gguf.GGUFReader(str(path))
            held = 0
            for t in reader.tensors:
                dims = [int(d) for d in t.shape]  # ggml order: fastest first
                if len(dims) == 1:  # norms
                    held += dims[0] * 4
                elif len(dims) == 3:  # the stacked experts: 96- and 64-row matrices, whole panels
                    held += int(np.prod(dims)) * 1.125
                else:
                    cols, rows = dims
                    held += -(-rows // 32) * 32 * cols * (4 if "ffn_gate_inp" in t.name else 1.125)
            assert info.weight_bytes == held, (info.weight_bytes, held)
            assert metric(server, 'attnserve_weight_bytes{model="decoder"}') == info.weight_bytes
            assert len(greedy_ids(pb, stub, golden("mixtral_tiny")["prompts"][2], 8)) == 8
        status, body = http_get(server.url("/v1/model_info"))
        assert status == 200
        model = json.loads(body)["models"][0]
        assert (model["num_experts"], model["experts_per_token"]) == (4, 2)
        assert "llama, 2 layers, 2 of 4 experts a token (all held), " in server.output()
    finally:
        server.close()


def test_a_window_on_every_layer_admits_what_its_window_holds(pb, proto_modules):
    """mistral_swa_tiny (window 6 on every layer) in a cache of 5 blocks of 4
    positions: a 40-token prompt + 64 new tokens (26 blocks whole) runs,
    because a step holds only the blocks its window and chunk touch
    (at most ceil((6 - 1 + 8) / 4) + 1 = 5); its usage reports its peak. The same
    cache refuses qwen2_swa_tiny (layer 0 attends to everything) naming the
    bytes, at once."""
    _, pb_grpc = proto_modules
    block_bytes = 4 * 512  # 2 layers x 2 KV heads x 16 dims x 2 (K, V) x 4 bytes, per position
    flags = ("--threads=1", "--kv_block_size=4", "--max_step_tokens=8", f"--kv_cache_bytes={5 * block_bytes}")
    ref = golden("mistral_swa_tiny")
    server = ServerProcess(f"--decoder-model={MODELS / 'mistral_swa_tiny'}", *flags)
    try:
        with grpc.insecure_channel(server.grpc_target) as channel:
            stub = pb_grpc.InferenceStub(channel)
            prompt, want = ref["prompts"][-1], ref["greedy"][-1]
            request = pb.GenerateRequest(sampling=pb.SamplingParams(max_new_tokens=len(want), temperature=0.0,
                                                                    ignore_eos=True))
            request.token_ids.ids.extend(prompt)
            messages = list(stub.Generate(request, timeout=120))
            assert [t for m in messages for t in m.token_ids] == want
            assert 0 < messages[-1].usage.peak_kv_cache_bytes <= 5 * block_bytes
    finally:
        server.close()
    server = ServerProcess(f"--decoder-model={MODELS / 'qwen2_swa_tiny'}", *flags)
    try:
        with grpc.insecure_channel(server.grpc_target) as channel:
            stub = pb_grpc.InferenceStub(channel)
            prompt = golden("qwen2_swa_tiny")["prompts"][-1]
            request = pb.GenerateRequest(sampling=pb.SamplingParams(max_new_tokens=64, temperature=0.0))
            request.token_ids.ids.extend(prompt)
            with pytest.raises(grpc.RpcError) as err:
                list(stub.Generate(request, timeout=60))
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            # qwen2_swa_tiny: 3 layers, so 768 bytes a position; 104 positions = 26 blocks.
            assert f"needs up to {26 * 4 * 768} bytes of KV cache" in err.value.details()
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


@pytest.mark.parametrize("path", [MODELS / "llama_tiny", MODELS / "llama_tiny/model-q8_0.gguf"],
                         ids=["f32_safetensors", "q8_0_gguf"])
def test_q8_0_storage_serves_the_q8_0_files_model(pb, proto_modules, path):
    """--weight-dtype=q8_0: every matrix held in Q8_0 blocks, quantised at
    load as llama.cpp (and gguf-py, which wrote model-q8_0.gguf) quantises:
    the f32 safetensors and the Q8_0 file both answer as transformers does
    on that file's values (gguf-py's dequantisation), in about 1.125 bytes a
    weight (the reported bytes: the matrices' blocks and the f32 norms)."""
    _, pb_grpc = proto_modules
    ref = golden("llama_tiny_q8_0")
    server = ServerProcess(f"--decoder-model={path}", "--threads=1", "--weight-dtype=q8_0")
    try:
        with grpc.insecure_channel(server.grpc_target) as channel:
            stub = pb_grpc.InferenceStub(channel)
            (info,) = stub.GetModelInfo(pb.GetModelInfoRequest(model=pb.MODEL_KIND_DECODER), timeout=30).models
            assert info.weight_dtype == "q8_0"
            reader = gguf.GGUFReader(str(MODELS / "llama_tiny/model-q8_0.gguf"))
            matrices = sum(int(np.prod([int(d) for d in t.shape])) for t in reader.tensors if len(t.shape) == 2)
            vectors = sum(int(np.prod([int(d) for d in t.shape])) for t in reader.tensors if len(t.shape) == 1)
            held = matrices * 1.125 + vectors * 4
            assert held <= info.weight_bytes <= held * 1.05, (info.weight_bytes, held)
            assert metric(server, 'attnserve_weight_bytes{model="decoder"}') == info.weight_bytes
            for prompt, want in zip(ref["prompts"], ref["greedy"]):
                assert greedy_ids(pb, stub, prompt, len(want)) == want, prompt
            # The working buffers are counted too: the decoder's step buffers
            # (the 40-token prompt's activations at least: hidden 64, q/k/v 128,
            # heads 64, MLP 96), and the one thread's f32 copy of a Q8_0 panel,
            # widened for prompts of 7+ rows: the longest K (96) × 32 columns.
            activations = 40 * (3 * 64 + 128 + 2 * 64 + 3 * 96) * 4
            assert metric(server, 'attnserve_engine_scratch_bytes{part="decode_step"}') >= activations
            assert metric(server, 'attnserve_engine_scratch_bytes{part="kernel_panels"}') == 96 * 32 * 4
    finally:
        server.close()


def test_gemma3_tokenizer_served_equals_tokenizers(pb, proto_modules):
    """The Gemma layout (spaces to "▁" with no prefix, byte fallback, <bos>
    from the template) served by gRPC Tokenize / Detokenize equals HF
    tokenizers on the same file."""
    from tokenizers import Tokenizer
    _, pb_grpc = proto_modules
    hf = Tokenizer.from_file(str(MODELS / "gemma3_tiny/tokenizer.json"))
    server = ServerProcess(f"--decoder-model={MODELS / 'gemma3_tiny'}", "--threads=1")
    try:
        with grpc.insecure_channel(server.grpc_target) as channel:
            stub = pb_grpc.InferenceStub(channel)
            for text in ["Once upon a time,  there was a girl.", " leading and trailing ", "naïve € 😀 日本",
                         "<start_of_turn>user\nHi<end_of_turn>\n"]:
                got = stub.Tokenize(pb.TokenizeRequest(model=pb.MODEL_KIND_DECODER, text=text,
                                                       add_special_tokens=True), timeout=30)
                want = hf.encode(text).ids
                assert list(got.token_ids) == want, text
                back = stub.Detokenize(pb.DetokenizeRequest(model=pb.MODEL_KIND_DECODER, token_ids=want,
                                                            skip_special_tokens=True), timeout=30)
                assert back.text == hf.decode(want), text
    finally:
        server.close()
