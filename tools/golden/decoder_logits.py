#!/usr/bin/env python3
"""Reference logits and greedy continuations for the tiny decoder models.

Reads the tiny Hugging Face models in tests/golden/decoder_models/ (made by
decoder_make_models.py), runs them with transformers on CPU in float32 and
writes tests/golden/decoder_logits/<model>.json:

  prompts:  token-id prompts (fixed seed), of several lengths
  logits:   last-position logits of each prompt ([vocab] floats)
  all_logits_prompt0: logits at every position of prompt 0 ([len, vocab])
  greedy:   64 greedy tokens after each prompt (argmax, EOS ignored)
  margin:   the smallest top1 - top2 logit gap met during greedy decoding
            (how robust the token comparison is to float rounding)

Sliding windows (mistral_swa_tiny: 6 keys, qwen2_swa_tiny: 5 keys on layers
1-2): the same keys; HF's cache keeps only the window in decode.
gemma3_tiny (Gemma-3 text decoder: 6-key windows on layers 0-2, a full
layer 3 with linear rope scaling, query_pre_attn_scalar, sandwich norms):
the same keys; its prompts are drawn after the models above, so theirs
do not change. gemma2_tiny (Gemma 2: 6-key windows on layers 0 and 2,
query_pre_attn_scalar, sandwich norms, attention and final logit softcaps)
and gemma_tiny (Gemma 1: MQA, pre-norms only, no softcaps) come after it,
same keys. gemma2_tiny's softcaps are set small on purpose (attention 2,
final 8, where the checkpoints have 50 and 30) so that the tanh caps move
its logits (decoder_make_models.py checks it); transformers runs Gemma 2
with eager attention, which applies the attention softcap (asserted here).
gemma2_gguf_tiny and gemma3_gguf_tiny (the Gemmas a GGUF can describe:
query_pre_attn_scalar = head_dim, llama.cpp's layer patterns) come last;
their model.gguf files are checked against these same references.

Rope scaling (llama_yarn_tiny, llama_dynamic_tiny): prompts of 20, 48 and
100 tokens (beyond the 32 original positions) and, instead of
all_logits_last_prompt,
  decode_logits_last_prompt: logits of the last prompt fed token by token
      through HF's KV cache (for dynamic NTK these differ from
      all_logits_last_prompt past 32 positions: each step rotates its token
      with the base for its own length, see engine/models/rope.h).
Every reference run starts from a freshly loaded model, because HF's dynamic
rotary module keeps the longest length it has seen between calls.

GGUF F16 / Q8_0 (llama_tiny_f16, llama_tiny_q8_0): an independent reference
for our GGUF loading: llama_tiny's HF model with every weight replaced by the
GGUF's values dequantised by gguf.quants.dequantize (Q/K rows un-permuted
from llama.cpp's order), on llama_tiny's prompts. Same keys as above.
llama_quant_mix (a weight in each of llama.cpp's block types): the same,
the HF model made from its config.json alone, on prompts of its own.

phi3_tiny (Phi-3: fused projections, a 6-key window on every layer) comes
after those, same keys. phi3_longrope_tiny (longrope, 256 original of 1024
positions; partial rotary): the same keys on prompts that stay within the
256 original positions, where transformers rotates with the short factors,
and under "long" the same for prompts of 260 and 300 tokens, where every
forward (whole prompt or cached decode step) has passed 256 and uses the
long ones: prompts, logits, greedy, greedy_min_margin, and
rows_last_prompt {position: logits} at LONG_ROWS of one whole-prompt
forward of the last prompt.
Mixtures of experts (qwen3_moe_tiny, qwen3_moe_unnorm_tiny, mixtral_tiny, qwen2_moe_tiny,
granitemoe_tiny, olmoe_tiny, olmoe_clip_tiny), granite_tiny, olmo2_tiny and smollm3_tiny: the
usual keys on prompts from their own generators, plus, for the mixtures,
  router_min_gap: the smallest gap between the k-th and (k+1)-th router
      logit of any layer at any position of the prompts followed by
      their greedy continuations (how far the reference's choice of experts
      is from a tie that float rounding could flip).
Usage: .cache/venv/bin/python tools/golden/decoder_logits.py [--only NAME,...]
"""
import argparse
import json
import os
import pathlib
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import gguf
import torch
import transformers

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "golden" / "decoder_models"
OUT = ROOT / "tests" / "golden" / "decoder_logits"
SEED = 20260
NEW_TOKENS = 64
PROMPT_LENGTHS = [1, 5, 17, 40]


def greedy(model, prompt):
    ids = torch.tensor([prompt])
    out = []
    margin = float("inf")
    with torch.no_grad():
        res = model(input_ids=ids, use_cache=True)
        past = res.past_key_values
        logits = res.logits[0, -1]
        for _ in range(NEW_TOKENS):
            top2 = torch.topk(logits, 2).values
            margin = min(margin, float(top2[0] - top2[1]))
            tok = int(torch.argmax(logits))
            out.append(tok)
            res = model(input_ids=torch.tensor([[tok]]), past_key_values=past, use_cache=True)
            past = res.past_key_values
            logits = res.logits[0, -1]
    return out, margin


ROPE_SCALED = ["llama_yarn_tiny", "llama_dynamic_tiny"]
ROPE_PROMPT_LENGTHS = [20, 48, 100]
GGUF_QUANT = {"llama_tiny_f16": "model-f16.gguf", "llama_tiny_q8_0": "model-q8_0.gguf"}


def load(name):
    model = transformers.AutoModelForCausalLM.from_pretrained(str(MODELS / name), dtype=torch.float32)
    return model.eval()


def unpermute_qk(w, n_head):
    # Inverse of decoder_make_models.permute_qk (llama.cpp's Q/K row order).
    return (w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def load_gguf_weights(model, t):
    """Puts llama.cpp-named tensors `t` (name -> float32 array) into the HF
    Llama `model`, Q/K rows back in HF's order."""
    cfg = model.config
    sd = {"model.embed_tokens.weight": t["token_embd.weight"], "model.norm.weight": t["output_norm.weight"],
          "lm_head.weight": t["output.weight"]}
    for i in range(cfg.num_hidden_layers):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        sd[p + "input_layernorm.weight"] = t[b + "attn_norm.weight"]
        sd[p + "self_attn.q_proj.weight"] = unpermute_qk(t[b + "attn_q.weight"], cfg.num_attention_heads)
        sd[p + "self_attn.k_proj.weight"] = unpermute_qk(t[b + "attn_k.weight"], cfg.num_key_value_heads)
        sd[p + "self_attn.v_proj.weight"] = t[b + "attn_v.weight"]
        sd[p + "self_attn.o_proj.weight"] = t[b + "attn_output.weight"]
        sd[p + "post_attention_layernorm.weight"] = t[b + "ffn_norm.weight"]
        sd[p + "mlp.gate_proj.weight"] = t[b + "ffn_gate.weight"]
        sd[p + "mlp.up_proj.weight"] = t[b + "ffn_up.weight"]
        sd[p + "mlp.down_proj.weight"] = t[b + "ffn_down.weight"]
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()}, strict=False)
    assert not unexpected and all("rotary" in k for k in missing), (missing, unexpected)


def load_dequantised(gguf_path, model=None):
    """An HF model (default llama_tiny's) with its weights replaced by the GGUF's, dequantised."""
    model = load("llama_tiny") if model is None else model
    reader = gguf.GGUFReader(str(gguf_path))
    t = {x.name: np.array(gguf.quants.dequantize(x.data, x.tensor_type), dtype=np.float32)
         for x in reader.tensors}
    load_gguf_weights(model, t)
    return model


def decode_logits(model, prompt):
    """Logits after each token of `prompt` fed one at a time through the cache."""
    rows, past = [], None
    with torch.no_grad():
        for tok in prompt:
            res = model(input_ids=torch.tensor([[tok]]), past_key_values=past, use_cache=True)
            past = res.past_key_values
            rows.append([float(x) for x in res.logits[0, -1]])
    return rows


def reference(name, make_model, prompts, extra_decode):
    """The fixture document; make_model() gives a fresh model for every run."""
    logits, conts, margins = [], [], []
    with torch.no_grad():
        for p in prompts:
            logits.append([float(x) for x in make_model()(input_ids=torch.tensor([p])).logits[0, -1]])
            g, m = greedy(make_model(), p)
            conts.append(g)
            margins.append(m)
        all0 = None if extra_decode else make_model()(input_ids=torch.tensor([prompts[-1]])).logits[0]
    doc = {
        "model": name,
        "generator": "tools/golden/decoder_logits.py",
        "seed": SEED,
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "numpy": np.__version__,
            "gguf": getattr(gguf, "__version__", "0.19 (no __version__)"),
        },
        "vocab_size": int(make_model().config.vocab_size),
        "prompts": prompts,
        "logits": logits,
        "greedy_new_tokens": NEW_TOKENS,
        "greedy": conts,
        "greedy_min_margin": margins,
    }
    if extra_decode:  # instead of all_logits_last_prompt, to keep the fixture small
        doc["decode_logits_last_prompt"] = decode_logits(make_model(), prompts[-1])
    else:
        doc["all_logits_last_prompt"] = [[float(x) for x in row] for row in all0]
    (OUT / f"{name}.json").write_text(json.dumps(doc))
    print(name, "min margins", [f"{m:.2e}" for m in margins])


LONGROPE = "phi3_longrope_tiny"
LONG_PROMPT_LENGTHS = [260, 300]
LONG_ROWS = [0, 99, 199, 255, 256, 299]


def add_long_reference(model, rng):
    """phi3_longrope_tiny's "long" entry (see the module docstring)."""
    path = OUT / f"{LONGROPE}.json"
    doc = json.loads(path.read_text())
    prompts = [[int(x) for x in rng.integers(2, model.config.vocab_size, size=n)] for n in LONG_PROMPT_LENGTHS]
    long = {"prompts": prompts, "logits": [], "greedy": [], "greedy_min_margin": []}
    with torch.no_grad():
        for p in prompts:
            long["logits"].append([float(x) for x in model(input_ids=torch.tensor([p])).logits[0, -1]])
            g, m = greedy(model, p)
            long["greedy"].append(g)
            long["greedy_min_margin"].append(m)
        rows = model(input_ids=torch.tensor([prompts[-1]])).logits[0]
    long["rows_last_prompt"] = {str(r): [float(x) for x in rows[r]] for r in LONG_ROWS}
    doc["long"] = long
    path.write_text(json.dumps(doc))
    print(LONGROPE, "long min margins", [f"{m:.2e}" for m in long["greedy_min_margin"]])


# granite_tiny, olmo2_tiny and smollm3_tiny are no mixtures; they take their prompts from
# the same kind of generator (and have no router_min_gap).
MOE = ["qwen3_moe_tiny", "qwen3_moe_unnorm_tiny", "mixtral_tiny", "granitemoe_tiny", "granite_tiny", "qwen2_moe_tiny",
       "olmo2_tiny", "olmoe_tiny", "olmoe_clip_tiny", "smollm3_tiny"]


def router_min_gap(model, sequences):
    """router_min_gap (see the module docstring), from hooks on every router."""
    k = model.config.num_experts_per_tok
    gaps = []

    def hook(_module, _inputs, output):
        top = torch.topk(output[0].float(), k + 1, dim=-1).values
        gaps.append(float((top[:, k - 1] - top[:, k]).min()))

    # transformers 5 names Mixtral's block_sparse_moe "mlp" too; Granite MoE
    # keeps block_sparse_moe.router.
    routers = [layer.block_sparse_moe.router if hasattr(layer, "block_sparse_moe") else layer.mlp.gate
               for layer in model.model.layers]
    handles = [r.register_forward_hook(hook) for r in routers]
    with torch.no_grad():
        for seq in sequences:
            model(input_ids=torch.tensor([seq]))
    for h in handles:
        h.remove()
    return min(gaps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="comma-separated fixture names (default: all)")
    only = set(filter(None, ap.parse_args().only.split(",")))
    torch.manual_seed(SEED)
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    # Appended names draw their prompts after the earlier ones, whose fixtures stay as they were.
    for name in ["llama_tiny", "qwen2_tiny", "gpt2_tiny", "qwen3_tiny", "mistral_swa_tiny", "qwen2_swa_tiny",
                 "gemma3_tiny", "gemma2_tiny", "gemma_tiny", "gemma2_gguf_tiny", "gemma3_gguf_tiny", "phi3_tiny",
                 LONGROPE]:
        path = MODELS / name
        model = transformers.AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
        model.eval()
        if model.config.model_type == "gemma2":  # SDPA has no softcap: eager applies attn_logit_softcapping
            assert model.config._attn_implementation == "eager", model.config._attn_implementation
        vocab = model.config.vocab_size
        prompts = [[int(x) for x in rng.integers(2, vocab, size=n)] for n in PROMPT_LENGTHS]
        if only and name not in only:
            continue
        reference(name, lambda: model, prompts, extra_decode=False)
        if name == LONGROPE:
            add_long_reference(model, rng)
    for name in ROPE_SCALED:
        if only and name not in only:
            continue
        rng = np.random.default_rng([SEED, ROPE_SCALED.index(name)])
        vocab = load(name).config.vocab_size
        prompts = [[int(x) for x in rng.integers(2, vocab, size=n)] for n in ROPE_PROMPT_LENGTHS]
        reference(name, lambda: load(name), prompts, extra_decode=True)
    for i, name in enumerate(MOE):
        if only and name not in only:
            continue
        rng = np.random.default_rng([SEED, 300 + i])
        model = load(name)
        prompts = [[int(x) for x in rng.integers(2, model.config.vocab_size, size=n)] for n in PROMPT_LENGTHS]
        reference(name, lambda: model, prompts, extra_decode=False)
        path = OUT / f"{name}.json"
        if not hasattr(model.config, "num_experts_per_tok"):  # granite_tiny, olmo2_tiny, smollm3_tiny: no router
            continue
        doc = json.loads(path.read_text())
        doc["router_min_gap"] = router_min_gap(model, [p + g for p, g in zip(prompts, doc["greedy"])])
        path.write_text(json.dumps(doc))
        print(name, "router min gap", f"{doc['router_min_gap']:.2e}")
    # After the loop above: the quantised references reuse llama_tiny.json's prompts.
    for name, fname in GGUF_QUANT.items():
        if only and name not in only:
            continue
        prompts = json.loads((OUT / "llama_tiny.json").read_text())["prompts"]
        model = load_dequantised(MODELS / "llama_tiny" / fname)
        reference(name, lambda: model, prompts, extra_decode=False)
    # llama_quant_mix has no f32 weights on disk: the model is its config with
    # every weight the GGUF's, dequantised by gguf-py.
    if not only or "llama_quant_mix" in only:
        d = MODELS / "llama_quant_mix"
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.from_pretrained(str(d)),
                                                              dtype=torch.float32).eval()
        model = load_dequantised(d / "model.gguf", model)
        rng = np.random.default_rng([SEED, 100])
        prompts = [[int(x) for x in rng.integers(2, model.config.vocab_size, size=n)] for n in PROMPT_LENGTHS]
        reference("llama_quant_mix", lambda: model, prompts, extra_decode=False)


if __name__ == "__main__":
    main()
