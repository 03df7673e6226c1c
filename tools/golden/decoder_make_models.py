#!/usr/bin/env python3
"""Tiny reference decoder models for the decoder tests (issue 5).

Makes, with a fixed seed, under tests/golden/decoder_models/<name>/:
  llama_tiny   LlamaForCausalLM, GQA 4 q heads over 2 kv heads, hidden 64, 2 layers,
               rope_theta 50000, untied embeddings, no attention bias;
               byte-level BPE tokenizer with the Llama-3 pre-tokenisation regex.
  qwen2_tiny   Qwen2ForCausalLM (same sizes; QKV bias ON), Qwen2 regex tokenizer.
  gpt2_tiny    GPT2LMHeadModel, 4 heads, hidden 64, 2 layers, GPT-2 regex tokenizer.
  llama_yarn_tiny     LlamaForCausalLM as llama_tiny but head_dim 32 and
               rope_parameters {rope_type yarn, factor 4, original_max_position_embeddings
               32, beta_fast 8, beta_slow 0.5} (non-default betas widen the ramp).
  llama_dynamic_tiny  LlamaForCausalLM as llama_tiny but max_position_embeddings 32
               and rope_parameters {rope_type dynamic, factor 2} (dynamic NTK
               changes the base once a forward passes 32 positions).
               (HF directories only; same tokenizer as llama_tiny.)
  qwen3_tiny   Qwen3ForCausalLM: q/k RMSNorm per head, head_dim 32 (not hidden / heads),
               tied embeddings, Qwen2 regex tokenizer; HF directory and model.gguf.
  mistral_swa_tiny  MistralForCausalLM, llama_tiny's sizes and tokenizer, sliding_window 6
               (every layer attends to its token and the 5 before it: prompts of 17 and 40
               tokens and 64 generated ones run far past it); HF directory only
               (llama.cpp's llama architecture has no sliding window).
  qwen2_swa_tiny  Qwen2ForCausalLM, 3 layers, use_sliding_window true, sliding_window 5,
               max_window_layers 1 (layer 0 full, layers 1-2 windowed, written by
               transformers as layer_types); Qwen2 tokenizer; HF directory only.
  llama_quant_mix  LlamaForCausalLM, hidden 256, 2 layers, GQA 4/2, llama_tiny's
               tokenizer, written only as model.gguf with each weight in one of the
               block types llama.cpp quantises to (QUANT_MIX: Q4_0 ... Q8_0, IQ4_NL,
               Q2_K ... Q6_K, IQ4_XS; K-quants by ggml_quantize.py), plus
               config.json and tokenizer.json for the reference.
  gemma3_tiny  Gemma3ForCausalLM (Gemma3TextConfig), hidden 64, 4 layers, GQA 4/2,
               head_dim 32 (not hidden / heads), query_pre_attn_scalar 24 (attention scale
               24^-0.5, not head_dim^-0.5), layers 0-2 sliding_attention with
               sliding_window 6 and layer 3 full_attention, rope_parameters per layer
               type {full_attention: linear factor 2, theta 50000; sliding_attention:
               default, theta 10000}, q/k RMSNorm, sandwich norms (Gemma RMSNorm scales
               by 1 + weight), gelu_pytorch_tanh, tied embeddings scaled by sqrt(hidden),
               no softcapping; SentencePiece-style BPE tokenizer in Gemma's layout
               (byte fallback <0x00>..<0xFF>, " " -> "\u2581", <bos> prepended);
               HF directory only.
  gemma2_tiny  Gemma2ForCausalLM, gemma3_tiny's tokenizer, hidden 64, 4 layers, GQA 4/2,
               head_dim 32, query_pre_attn_scalar 24, sliding_window 6 on Gemma2Config's
               default layer_types (sliding on even layers: 0 and 2 sliding_attention,
               1 and 3 full_attention), rope theta 10000, sandwich norms, no q/k norms,
               gelu_pytorch_tanh, tied embeddings scaled by sqrt(hidden), and softcaps
               set small on purpose: attn_logit_softcapping 2 and final_logit_softcapping 8
               (the checkpoints' 50 and 30 would hardly touch a tiny random model's
               scores), checked to move the logits; transformers runs Gemma2 with eager
               attention (no SDPA: it cannot softcap), asserted. HF directory only.
  gemma_tiny   GemmaForCausalLM (Gemma 1), gemma3_tiny's tokenizer, hidden 64, 2 layers,
               MQA (4 q heads over 1 kv head), head_dim 32 (attention scale head_dim^-0.5),
               rope theta 10000, pre-norms only (RMSNorm scaling by 1 + weight),
               hidden_act gelu_pytorch_tanh (GemmaConfig's field; GemmaMLP reads hidden_act),
               tied embeddings scaled by sqrt(hidden), no softcapping; HF directory and
               model.gguf (arch gemma, gguf_gemma_writer.py: norms stored as 1 + weight,
               SentencePiece vocabulary).
  gemma2_gguf_tiny  gemma2_tiny with query_pre_attn_scalar 32 = head_dim, the scale
               llama.cpp uses below the 27B size (a GGUF does not carry it); HF
               directory and model.gguf (arch gemma2).
  gemma3_gguf_tiny  Gemma3ForCausalLM, gemma3_tiny's sizes with 7 layers in
               llama.cpp's fixed pattern (layer 5 full_attention, the others sliding,
               window 6), query_pre_attn_scalar 32 = head_dim, gemma3_tiny's rope
               (full layers linear factor 2, theta 50000; sliding ones theta 10000);
               HF directory and model.gguf (arch gemma3).
  phi3_tiny    Phi3ForCausalLM (qkv_proj and gate_up_proj fused), llama_tiny's sizes and
               tokenizer, GQA 4/2, untied, sliding_window 6 on every layer (transformers'
               Phi3 applies it; the prompts and continuations run far past it); HF
               directory only (llama.cpp runs phi3 without windows).
  phi3_longrope_tiny  Phi3ForCausalLM with Phi-3.5's longrope and Phi-4-mini's partial
               rotary: partial_rotary_factor 0.75 (12 of 16 head dims rotate), 6 short and
               6 long factors, original_max_position_embeddings 256, max 1024 (attention
               factor sqrt(1 + ln 4 / ln 256)), tied embeddings, no window; HF directory
               and model.gguf (arch phi3, gguf_phi3_writer.py: attn_qkv, fused ffn_up,
               rope_factors_short / rope_factors_long, rope.scaling.attn_factor).
  qwen3_moe_tiny  Qwen3MoeForCausalLM: qwen3_tiny's attention (q/k norms, head_dim 32),
               every layer's MLP 8 experts of 32 (routers drawn 4x wider than the other
               weights, away from ties), the top 3 per token with
               norm_topk_prob true (Qwen3-30B-A3B's setting), untied; HF directory and
               model.gguf (arch qwen3moe: ffn_gate_inp, stacked ffn_*_exps,
               expert_feed_forward_length).
  qwen3_moe_unnorm_tiny  the same with norm_topk_prob false (Qwen3MoeConfig's default:
               the chosen experts' probabilities are not renormalised); HF directory only
               (llama.cpp always renormalises qwen3moe).
  mixtral_tiny  MixtralForCausalLM, llama_tiny's sizes and tokenizer, 4 experts of 96,
               the top 2 per token (always renormalised), rope_theta 1e6; HF directory and
               model.gguf (arch llama with llama.expert_count, Q/K permuted).
  qwen2_moe_tiny  Qwen2MoeForCausalLM: Qwen2's attention (q/k/v biases), 8 experts of 32,
               the top 2 not renormalised (norm_topk_prob false, as Qwen1.5-MoE-A2.7B), a
               shared expert of 48 gated by sigmoid(shared_expert_gate . x), routers 4x
               wider; HF directory and model.gguf (arch qwen2moe: ffn_*_shexp,
               ffn_gate_inp_shexp, expert_shared_feed_forward_length).
  granite_tiny  GraniteForCausalLM (Granite 3), llama_tiny's sizes and tokenizer, tied
               embeddings, the four multipliers set away from 1 (embedding 4, attention 0.2
               instead of 16^-0.5, residual 0.5, logits divided by 2.5); HF directory and
               model.gguf (arch granite: embedding_scale, attention.scale, residual_scale,
               logit_scale; Q/K permuted as llama.cpp's GraniteModel, a LlamaModel, does).
  granitemoe_tiny  GraniteMoeForCausalLM, the same multipliers, 6 experts of 32, the top 2
               (softmax over the chosen logits), routers 4x wider, untied; the experts
               saved stacked (block_sparse_moe.input_linear [experts, 2 ffn, hidden],
               output_linear) as IBM's checkpoints have them; HF directory and model.gguf
               (arch granitemoe: input_linear split into ffn_gate_exps / ffn_up_exps).
  olmo2_tiny   Olmo2ForCausalLM, llama_tiny's sizes and tokenizer, GQA 4/2: q and k
               RMS-normalised over their whole projections, no pre-norms, a norm after
               attention and after the MLP; HF directory and model.gguf (arch olmo2:
               post_attention_norm, post_ffw_norm, attn_q_norm [64], attn_k_norm [32]).
  olmoe_tiny   OlmoeForCausalLM, MHA 4 heads (llama.cpp's olmoe sizes attn_k_norm as
               the hidden size), whole-projection q/k norms, pre-norms, 8 experts of 32,
               the top 2 not renormalised, routers 4x wider; HF directory and model.gguf
               (arch olmoe).
  olmoe_clip_tiny  the same with clip_qkv 1.0 (q, k and v clamped, set small so that it
               bites); HF directory only (llama.cpp does not clamp olmoe).
  smollm3_tiny  SmolLM3ForCausalLM, llama_tiny's sizes and tokenizer with 4 layers, tied
               embeddings: layer 3 without rope (no_rope_layers [1, 1, 1, 0], SmolLM3Config's
               default interval 4); HF directory and model.gguf (arch smollm3, Q/K permuted
               as llama.cpp's SmolLM3Model, a LlamaModel, does).
Each as an HF directory (config.json, model.safetensors, tokenizer.json) plus
GGUF v3 files written with gguf.GGUFWriter in llama.cpp's conventions
(convert_hf_to_gguf.py): model.gguf (F32) for each; for llama_tiny also
model-f16.gguf and model-q8_0.gguf (BF16 GGUF is covered by
synthetic files in the C++ tests, to keep the fixtures small). Llama Q/K rows are
permuted for llama.cpp's adjacent-pair rope, exactly as convert_hf_to_gguf.py
does; Qwen2 and GPT-2 are not permuted. Versions go to versions.json.

Run on the host: .cache/venv/bin/python tools/golden/decoder_make_models.py [--only NAME,...]
(--only remakes just those models; every model has its own seeded generator,
so the others' files do not change.)
"""
import argparse
import copy
import json
import os
import pathlib
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
import transformers
import tokenizers
import gguf
import safetensors.numpy
from tokenizers import (AddedToken, Tokenizer, Regex, models, normalizers, pre_tokenizers, decoders, trainers,
                        processors)

from gguf_gemma_writer import llama_cpp_layer_types, write_gemma_gguf
from gguf_llama_writer import add_hparams, add_matrix, add_tensors
from gguf_phi3_writer import write_phi3_gguf

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "golden" / "decoder_models"
SEED = 1234

# The HF pre-tokenisation regexes (as in the published tokenizer.json files).
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")

CORPUS = """Once upon a time, there was a little girl named Lily. She loved to play outside in the park.
One day, she saw a big, red ball. "Can I play?" she asked.   Her mom said: "Yes!"
The year 2024 had 366 days; 3.14159 is pi and 1,000,000 is a million. Call 555-0123 now!!
Ünïcödé façade naïve café résumé — “quotes” and ‘single’ ... Ελληνικά русский текст.
日本語のテキストと中文文本。 한국어 텍스트. Emoji: 😀🎉👍🏽 and ❤️ hearts.
def main():\n    return x + y  # code with    spaces\n\n\tTabs\there.
I'm you're they've we'll it'd HE'S SHE'LL don't.  Multiple   spaces   and\n\n\nnewlines.
The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX! the end.
"""


def train_tokenizer(kind):
    """Byte-level BPE, vocab ~400. kind: gpt2 | llama3 | qwen2."""
    tok = Tokenizer(models.BPE())
    if kind == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        specials = ["<|endoftext|>"]
    else:
        regex = LLAMA3_REGEX if kind == "llama3" else QWEN2_REGEX
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        specials = (["<|begin_of_text|>", "<|end_of_text|>"] if kind == "llama3"
                    else ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, min_frequency=1, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator([CORPUS] * 4, trainer=trainer)
    if kind == "llama3":
        bos = tok.token_to_id("<|begin_of_text|>")
        tok.post_processor = processors.TemplateProcessing(
            single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
            special_tokens=[("<|begin_of_text|>", bos)])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    # A non-special added token, to exercise added_tokens handling.
    tok.add_tokens(["<|custom|>"])
    return tok


GEMMA_SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]


def train_gemma_tokenizer():
    """A Gemma-layout tokenizer, as transformers 5's GemmaTokenizer builds it
    (models/gemma/tokenization_gemma.py) and gemma-3's tokenizer.json has it:
    BPE with byte_fallback and fuse_unk, unk <unk>; normalizer Replace(" ", "\u2581");
    pre_tokenizer Split(" ", merged_with_previous) (after the normalizer there is
    no " " left, so the whole text is one BPE word); decoder Replace("\u2581", " "),
    ByteFallback, Fuse; post_processor TemplateProcessing adding <bos> (what
    TokenizersBackend.update_post_processor writes for add_bos_token).
    Ids: <pad> 0, <eos> 1, <bos> 2, <unk> 3, <start_of_turn> 4, <end_of_turn> 5,
    <0x00>..<0xFF> 6..261, then the characters of CORPUS and the merges (432 in
    all). A character outside CORPUS falls back to its UTF-8 bytes."""
    # Train on "\u2581word" pieces (SentencePiece's word boundaries), so no merge
    # spans two words; the saved pre_tokenizer is Gemma's.
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.pre_tokenizer = pre_tokenizers.Split("\u2581", behavior="merged_with_next")
    trainer = trainers.BpeTrainer(vocab_size=176, min_frequency=1, special_tokens=GEMMA_SPECIALS,
                                  show_progress=False)
    tok.train_from_iterator([CORPUS] * 4, trainer=trainer)
    trained = json.loads(tok.to_str())["model"]
    n_special = len(GEMMA_SPECIALS)
    assert [trained["vocab"][t] for t in GEMMA_SPECIALS] == list(range(n_special))
    vocab = {t: i for t, i in trained["vocab"].items() if i < n_special}
    vocab.update({f"<0x{b:02X}>": n_special + b for b in range(256)})
    vocab.update({t: i + 256 for t, i in trained["vocab"].items() if i >= n_special})
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in trained["merges"]]
    gemma = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True,
                                 byte_fallback=True, dropout=None))
    gemma.normalizer = normalizers.Replace(" ", "\u2581")
    gemma.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous", invert=False)
    gemma.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    gemma.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in GEMMA_SPECIALS])
    gemma.post_processor = processors.TemplateProcessing(
        single="<bos>:0 $A:0", pair="<bos>:0 $A:0 <bos>:1 $B:1", special_tokens=[("<bos>", vocab["<bos>"])])
    assert gemma.get_vocab_size(with_added_tokens=True) == len(vocab)
    return gemma


def gguf_tokenizer(writer, tok, pre, bos_name, eos_name, add_bos):
    vocab = tok.get_vocab(with_added_tokens=True)
    n = max(vocab.values()) + 1
    tokens = [""] * n
    for piece, i in vocab.items():
        tokens[i] = piece
    added = tok.get_added_tokens_decoder()
    types = []
    for i in range(n):
        if i in added:
            types.append(gguf.TokenType.CONTROL if added[i].special else gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
    merges = json.loads(tok.to_str())["model"]["merges"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(vocab[bos_name])
    writer.add_eos_token_id(vocab[eos_name])
    writer.add_add_bos_token(add_bos)


def write_llama_gguf(path, model, cfg, tok, arch, qtype, file_type=None, experts=None):
    """`experts`: (count, used per token, expert ffn[, shared expert ffn]) for a mixture, whose
    tensors are read from the saved model.safetensors beside `path`
    (transformers 5 holds the experts fused in memory and writes them one
    by one, as the published checkpoints have them)."""
    if experts is None:
        sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    else:
        sd = safetensors.numpy.load_file(str(path.parent / "model.safetensors"))
    w = gguf.GGUFWriter(str(path), arch)
    theta = (cfg.rope_parameters["rope_theta"] if getattr(cfg, "rope_parameters", None) else cfg.rope_theta)
    add_hparams(w, name=path.parent.name, n_layers=cfg.num_hidden_layers, context=cfg.max_position_embeddings,
                hidden=cfg.hidden_size, ffn=cfg.intermediate_size, n_head=cfg.num_attention_heads,
                n_head_kv=cfg.num_key_value_heads, rope_theta=theta, rms_eps=cfg.rms_norm_eps,
                vocab=cfg.vocab_size, qtype=qtype, file_type=file_type, head_dim=getattr(cfg, "head_dim", None))
    if experts is not None:
        w.add_expert_count(experts[0])
        w.add_expert_used_count(experts[1])
        if arch in ("qwen3moe", "qwen2moe"):
            w.add_expert_feed_forward_length(experts[2])
        if len(experts) > 3:
            w.add_expert_shared_feed_forward_length(experts[3])
    if arch in ("granite", "granitemoe"):
        # convert_hf_to_gguf.py's GraniteModel: the four multipliers as scales.
        w.add_embedding_scale(cfg.embedding_multiplier)
        w.add_residual_scale(cfg.residual_multiplier)
        w.add_attention_scale(cfg.attention_multiplier)
        w.add_logit_scale(cfg.logits_scaling)
    if arch in ("llama", "granite", "granitemoe", "olmo2", "olmoe", "smollm3"):
        gguf_tokenizer(w, tok, "llama-bpe", "<|begin_of_text|>", "<|end_of_text|>", True)
    else:
        gguf_tokenizer(w, tok, "qwen2", "<|endoftext|>", "<|endoftext|>", False)
    add_tensors(w, sd, n_layers=cfg.num_hidden_layers, n_head=cfg.num_attention_heads,
                n_head_kv=cfg.num_key_value_heads, qtype=qtype,
                permute=(arch in ("llama", "granite", "granitemoe", "smollm3")),
                tied=cfg.tie_word_embeddings)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_gpt2_gguf(path, model, cfg, tok):
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    w = gguf.GGUFWriter(str(path), "gpt2")
    w.add_name(path.parent.name)
    w.add_block_count(cfg.n_layer)
    w.add_context_length(cfg.n_positions)
    w.add_embedding_length(cfg.n_embd)
    w.add_feed_forward_length(cfg.n_inner or 4 * cfg.n_embd)
    w.add_head_count(cfg.n_head)
    w.add_layer_norm_eps(cfg.layer_norm_epsilon)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    gguf_tokenizer(w, tok, "gpt-2", "<|endoftext|>", "<|endoftext|>", False)
    f32 = gguf.GGMLQuantizationType.F32
    add_matrix(w, "token_embd.weight", sd["transformer.wte.weight"], f32)
    add_matrix(w, "position_embd.weight", sd["transformer.wpe.weight"], f32)
    for i in range(cfg.n_layer):
        p = f"transformer.h.{i}."
        # HF Conv1D stores [in, out]; llama.cpp's converter transposes to [out, in].
        add_matrix(w, f"blk.{i}.attn_norm.weight", sd[p + "ln_1.weight"], f32)
        add_matrix(w, f"blk.{i}.attn_norm.bias", sd[p + "ln_1.bias"], f32)
        add_matrix(w, f"blk.{i}.attn_qkv.weight", sd[p + "attn.c_attn.weight"].T, f32)
        add_matrix(w, f"blk.{i}.attn_qkv.bias", sd[p + "attn.c_attn.bias"], f32)
        add_matrix(w, f"blk.{i}.attn_output.weight", sd[p + "attn.c_proj.weight"].T, f32)
        add_matrix(w, f"blk.{i}.attn_output.bias", sd[p + "attn.c_proj.bias"], f32)
        add_matrix(w, f"blk.{i}.ffn_norm.weight", sd[p + "ln_2.weight"], f32)
        add_matrix(w, f"blk.{i}.ffn_norm.bias", sd[p + "ln_2.bias"], f32)
        add_matrix(w, f"blk.{i}.ffn_up.weight", sd[p + "mlp.c_fc.weight"].T, f32)
        add_matrix(w, f"blk.{i}.ffn_up.bias", sd[p + "mlp.c_fc.bias"], f32)
        add_matrix(w, f"blk.{i}.ffn_down.weight", sd[p + "mlp.c_proj.weight"].T, f32)
        add_matrix(w, f"blk.{i}.ffn_down.bias", sd[p + "mlp.c_proj.bias"], f32)
    add_matrix(w, "output_norm.weight", sd["transformer.ln_f.weight"], f32)
    add_matrix(w, "output_norm.bias", sd["transformer.ln_f.bias"], f32)
    # Tied in HF; llama.cpp's GPT-2 graph falls back to token_embd when output is absent.
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def init_random(model):
    # HF's default init has std 0.02, which makes a 2-layer model's logits
    # almost flat; a larger std gives logits that really test the maths.
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or ".ln_" in name or name.endswith("ln_f.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.15 * torch.randn(p.shape, generator=g))


def save_hf(model, tok, d):
    d.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(d), safe_serialization=True)
    tok.save(str(d / "tokenizer.json"))


def llama3_config(tok, **sizes):
    """A LlamaConfig with llama_tiny's shape and the Llama-3 tokenizer's BOS/EOS;
    `sizes` override (rope_parameters replaces rope_theta)."""
    kw = dict(vocab_size=tok.get_vocab_size(with_added_tokens=True), hidden_size=64, intermediate_size=96,
              num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
              rms_norm_eps=1e-5, rope_theta=50000.0, tie_word_embeddings=False, attention_bias=False,
              bos_token_id=tok.token_to_id("<|begin_of_text|>"), eos_token_id=tok.token_to_id("<|end_of_text|>"))
    kw.update(sizes)
    if "rope_parameters" in sizes:
        del kw["rope_theta"]
    return transformers.LlamaConfig(**kw)


def make_rope_scaled(name, head_dim, max_positions, rope_parameters):
    """A llama_tiny-sized LlamaForCausalLM with a rope_scaling kind (HF dir only)."""
    torch.manual_seed(SEED)
    tok = train_tokenizer("llama3")
    vocab = tok.get_vocab_size(with_added_tokens=True)
    cfg = llama3_config(tok, head_dim=head_dim, max_position_embeddings=max_positions,
                        rope_parameters=dict(rope_parameters, rope_theta=10000.0))
    model = transformers.LlamaForCausalLM(cfg).eval()
    init_random(model)
    save_hf(model, tok, OUT / name)
    return {"class": "LlamaForCausalLM", "vocab": vocab, "rope_parameters": cfg.rope_parameters}


def make_qwen3():
    """Qwen3ForCausalLM: per-head q/k RMSNorm, heads of 32 over hidden 64 (so
    head_dim is not hidden / heads), tied embeddings (as Qwen3-0.6B), no
    bias, Qwen2's tokenizer; HF directory and model.gguf (arch qwen3)."""
    torch.manual_seed(SEED)
    tok = train_tokenizer("qwen2")
    vocab = tok.get_vocab_size(with_added_tokens=True)
    cfg = transformers.Qwen3Config(
        vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=256,
        rms_norm_eps=1e-6, rope_theta=50000.0, tie_word_embeddings=True, attention_bias=False,
        bos_token_id=tok.token_to_id("<|endoftext|>"), eos_token_id=tok.token_to_id("<|im_end|>"))
    model = transformers.Qwen3ForCausalLM(cfg).eval()
    init_random(model)
    d = OUT / "qwen3_tiny"
    save_hf(model, tok, d)
    write_llama_gguf(d / "model.gguf", model, cfg, tok, "qwen3", gguf.GGMLQuantizationType.F32)
    return {"class": "Qwen3ForCausalLM", "vocab": vocab}


def make_sliding_window(name):
    """mistral_swa_tiny / qwen2_swa_tiny (see the module docstring)."""
    torch.manual_seed(SEED)
    if name == "mistral_swa_tiny":
        tok = train_tokenizer("llama3")
        cfg = transformers.MistralConfig(**llama3_config(tok).to_dict() | {"sliding_window": 6})
        model = transformers.MistralForCausalLM(cfg).eval()
    else:
        tok = train_tokenizer("qwen2")
        cfg = transformers.Qwen2Config(
            vocab_size=tok.get_vocab_size(with_added_tokens=True), hidden_size=64, intermediate_size=96,
            num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
            rms_norm_eps=1e-6, rope_theta=50000.0, tie_word_embeddings=False, use_sliding_window=True,
            sliding_window=5, max_window_layers=1,
            bos_token_id=tok.token_to_id("<|endoftext|>"), eos_token_id=tok.token_to_id("<|endoftext|>"))
        model = transformers.Qwen2ForCausalLM(cfg).eval()
    init_random(model)
    save_hf(model, tok, OUT / name)
    return {"class": type(model).__name__, "vocab": cfg.vocab_size, "sliding_window": cfg.sliding_window,
            "layer_types": getattr(cfg, "layer_types", None)}


SLIDING_WINDOW = ["mistral_swa_tiny", "qwen2_swa_tiny"]

GEMMA3_LAYER_TYPES = ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]
GEMMA3_ROPE = {"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 50000.0},
               "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}


def make_gemma3():
    """gemma3_tiny (see the module docstring): HF directory only."""
    torch.manual_seed(SEED)
    tok = train_gemma_tokenizer()
    vocab = tok.get_vocab_size(with_added_tokens=True)
    cfg = transformers.Gemma3TextConfig(
        vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, query_pre_attn_scalar=24,
        max_position_embeddings=256, rms_norm_eps=1e-6, sliding_window=6,
        layer_types=list(GEMMA3_LAYER_TYPES), rope_parameters=json.loads(json.dumps(GEMMA3_ROPE)),
        tie_word_embeddings=True, final_logit_softcapping=None, attn_logit_softcapping=None,
        hidden_activation="gelu_pytorch_tanh", attention_bias=False,
        bos_token_id=tok.token_to_id("<bos>"), eos_token_id=tok.token_to_id("<eos>"),
        pad_token_id=tok.token_to_id("<pad>"))
    assert cfg.rope_parameters == GEMMA3_ROPE, cfg.rope_parameters
    assert cfg.layer_types == GEMMA3_LAYER_TYPES, cfg.layer_types
    model = transformers.Gemma3ForCausalLM(cfg).eval()
    # Every Gemma norm (input_layernorm, post_attention_layernorm,
    # pre/post_feedforward_layernorm, q_norm, k_norm, norm) ends in norm.weight.
    assert all(n.endswith("norm.weight") for n, p in model.named_parameters() if p.dim() == 1)
    init_random(model)
    save_hf(model, tok, OUT / "gemma3_tiny")
    return {"class": "Gemma3ForCausalLM", "vocab": vocab, "head_dim": cfg.head_dim,
            "query_pre_attn_scalar": cfg.query_pre_attn_scalar, "sliding_window": cfg.sliding_window,
            "layer_types": cfg.layer_types, "rope_parameters": cfg.rope_parameters}


def softcap_effect(model, cfg, cls, **uncapped):
    """Largest |logit change| over a fixed 40-token prompt when the config's
    fields `uncapped` (softcaps) are replaced (None: no cap), same weights."""
    other_cfg = copy.deepcopy(cfg)
    for k, v in uncapped.items():
        setattr(other_cfg, k, v)
    other = cls(other_cfg).eval()
    assert all(getattr(other.config, k) is None for k in uncapped)
    other.load_state_dict(model.state_dict())
    prompt = torch.randint(2, cfg.vocab_size, (1, 40), generator=torch.Generator().manual_seed(SEED))
    with torch.no_grad():
        return float((model(input_ids=prompt).logits - other(input_ids=prompt).logits).abs().max())


def gemma_common(tok):
    """gemma3_tiny's tokenizer ids and the sizes gemma2_tiny / gemma_tiny share with it."""
    return dict(vocab_size=tok.get_vocab_size(with_added_tokens=True), hidden_size=64, intermediate_size=96,
                num_attention_heads=4, head_dim=32, max_position_embeddings=256, rms_norm_eps=1e-6,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=True,
                attention_bias=False, bos_token_id=tok.token_to_id("<bos>"), eos_token_id=tok.token_to_id("<eos>"),
                pad_token_id=tok.token_to_id("<pad>"))


GEMMA2_SOFTCAPS = {"attn_logit_softcapping": 2.0, "final_logit_softcapping": 8.0}


def make_gemma2():
    """gemma2_tiny (see the module docstring): HF directory only."""
    torch.manual_seed(SEED)
    tok = train_gemma_tokenizer()
    cfg = transformers.Gemma2Config(
        **gemma_common(tok), num_hidden_layers=4, num_key_value_heads=2, query_pre_attn_scalar=24,
        sliding_window=6, hidden_activation="gelu_pytorch_tanh", **GEMMA2_SOFTCAPS)
    print("gemma2_tiny layer_types (Gemma2Config's default):", cfg.layer_types)
    assert cfg.layer_types == ["sliding_attention", "full_attention"] * 2, cfg.layer_types
    model = transformers.Gemma2ForCausalLM(cfg).eval()
    # SDPA cannot softcap, so transformers must have chosen eager attention.
    assert model.config._attn_implementation == "eager", model.config._attn_implementation
    assert type(model.model.layers[0].mlp.act_fn).__name__ == "GELUTanh", model.model.layers[0].mlp.act_fn
    assert all(n.endswith("norm.weight") for n, p in model.named_parameters() if p.dim() == 1)
    init_random(model)
    # The small caps must move the logits, or a missing tanh would go unnoticed.
    effect = {"no_attn_softcap": softcap_effect(model, cfg, transformers.Gemma2ForCausalLM,
                                                attn_logit_softcapping=None),
              "no_final_softcap": softcap_effect(model, cfg, transformers.Gemma2ForCausalLM,
                                                 final_logit_softcapping=None)}
    print("gemma2_tiny max |logit change| without each softcap (40-token prompt):", effect)
    assert min(effect.values()) > 0.1, effect
    save_hf(model, tok, OUT / "gemma2_tiny")
    return {"class": "Gemma2ForCausalLM", "vocab": cfg.vocab_size, "head_dim": cfg.head_dim,
            "query_pre_attn_scalar": cfg.query_pre_attn_scalar, "sliding_window": cfg.sliding_window,
            "layer_types": cfg.layer_types, "rope_parameters": cfg.rope_parameters, **GEMMA2_SOFTCAPS,
            "attn_implementation": model.config._attn_implementation,
            "max_abs_logit_change_without_softcap": {k: round(v, 4) for k, v in effect.items()}}


def make_gemma1():
    """gemma_tiny (see the module docstring): HF directory only."""
    torch.manual_seed(SEED)
    tok = train_gemma_tokenizer()
    # GemmaConfig's activation field is hidden_act (GemmaMLP reads it); a
    # hidden_activation kwarg would only be stored, unused.
    cfg = transformers.GemmaConfig(**gemma_common(tok), num_hidden_layers=2, num_key_value_heads=1,
                                   hidden_act="gelu_pytorch_tanh")
    model = transformers.GemmaForCausalLM(cfg).eval()
    assert type(model.model.layers[0].mlp.act_fn).__name__ == "GELUTanh", model.model.layers[0].mlp.act_fn
    assert all(n.endswith("norm.weight") for n, p in model.named_parameters() if p.dim() == 1)
    init_random(model)
    save_hf(model, tok, OUT / "gemma_tiny")
    write_gemma_gguf(OUT / "gemma_tiny" / "model.gguf", model, cfg, tok, "gemma")
    return {"class": "GemmaForCausalLM", "vocab": cfg.vocab_size, "head_dim": cfg.head_dim,
            "num_key_value_heads": cfg.num_key_value_heads, "hidden_act": cfg.hidden_act,
            "rope_parameters": cfg.rope_parameters}


def make_gemma_gguf(name):
    """gemma2_gguf_tiny / gemma3_gguf_tiny (see the module docstring): the HF
    directory and its model.gguf (gguf_gemma_writer.py)."""
    torch.manual_seed(SEED)
    tok = train_gemma_tokenizer()
    if name == "gemma2_gguf_tiny":
        arch, cls = "gemma2", transformers.Gemma2ForCausalLM
        cfg = transformers.Gemma2Config(
            **gemma_common(tok), num_hidden_layers=4, num_key_value_heads=2, query_pre_attn_scalar=32,
            sliding_window=6, hidden_activation="gelu_pytorch_tanh", **GEMMA2_SOFTCAPS)
    else:
        arch, cls = "gemma3", transformers.Gemma3ForCausalLM
        common = gemma_common(tok)
        del common["rope_parameters"]
        cfg = transformers.Gemma3TextConfig(
            **common, num_hidden_layers=7, num_key_value_heads=2, query_pre_attn_scalar=32, sliding_window=6,
            layer_types=llama_cpp_layer_types("gemma3", 7), rope_parameters=json.loads(json.dumps(GEMMA3_ROPE)),
            final_logit_softcapping=None, attn_logit_softcapping=None, hidden_activation="gelu_pytorch_tanh")
        assert cfg.rope_parameters == GEMMA3_ROPE, cfg.rope_parameters
    assert cfg.layer_types == llama_cpp_layer_types(arch, cfg.num_hidden_layers), cfg.layer_types
    model = cls(cfg).eval()
    assert all(n.endswith("norm.weight") for n, p in model.named_parameters() if p.dim() == 1)
    init_random(model)
    d = OUT / name
    save_hf(model, tok, d)
    write_gemma_gguf(d / "model.gguf", model, cfg, tok, arch)
    return {"class": cls.__name__, "vocab": cfg.vocab_size, "head_dim": cfg.head_dim,
            "query_pre_attn_scalar": cfg.query_pre_attn_scalar, "sliding_window": cfg.sliding_window,
            "layer_types": cfg.layer_types, "rope_parameters": cfg.rope_parameters,
            "final_logit_softcapping": cfg.final_logit_softcapping,
            "attn_logit_softcapping": cfg.attn_logit_softcapping, "gguf": "model.gguf (gguf_gemma_writer.py)"}


# Factors of the shape Phi-3.5-mini's have (rising from ~1 for the fast
# frequencies), 6 of each for 12 rotated dims.
PHI3_SHORT_FACTOR = [1.0, 1.05, 1.2, 1.6, 2.3, 3.1]
PHI3_LONG_FACTOR = [1.1, 1.6, 3.0, 6.5, 14.0, 27.0]


def make_phi3(name):
    """phi3_tiny / phi3_longrope_tiny (see the module docstring)."""
    torch.manual_seed(SEED)
    tok = train_tokenizer("llama3")
    kw = dict(vocab_size=tok.get_vocab_size(with_added_tokens=True), hidden_size=64, intermediate_size=96,
              num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
              bos_token_id=tok.token_to_id("<|begin_of_text|>"), eos_token_id=tok.token_to_id("<|end_of_text|>"),
              pad_token_id=tok.token_to_id("<|end_of_text|>"))
    if name == "phi3_tiny":
        cfg = transformers.Phi3Config(**kw, max_position_embeddings=256, original_max_position_embeddings=256,
                                      rope_parameters={"rope_type": "default", "rope_theta": 50000.0},
                                      tie_word_embeddings=False, sliding_window=6)
    else:
        cfg = transformers.Phi3Config(
            **kw, max_position_embeddings=1024, original_max_position_embeddings=256, tie_word_embeddings=True,
            sliding_window=None,
            rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.75,
                             "short_factor": PHI3_SHORT_FACTOR, "long_factor": PHI3_LONG_FACTOR})
    model = transformers.Phi3ForCausalLM(cfg).eval()
    init_random(model)
    d = OUT / name
    save_hf(model, tok, d)
    saved = json.loads((d / "config.json").read_text())
    if name == "phi3_longrope_tiny":
        write_phi3_gguf(d / "model.gguf", model, cfg,
                        lambda w: gguf_tokenizer(w, tok, "llama-bpe", "<|begin_of_text|>", "<|end_of_text|>", True))
    return {"class": "Phi3ForCausalLM", "vocab": cfg.vocab_size, "sliding_window": cfg.sliding_window,
            "rope_parameters": saved.get("rope_parameters"),
            "original_max_position_embeddings": cfg.original_max_position_embeddings,
            "max_position_embeddings": cfg.max_position_embeddings,
            "tie_word_embeddings": cfg.tie_word_embeddings}



def make_moe(name):
    """qwen3_moe_tiny / qwen3_moe_unnorm_tiny / mixtral_tiny (see the module docstring)."""
    torch.manual_seed(SEED)
    if name == "mixtral_tiny":
        tok = train_tokenizer("llama3")
        vocab = tok.get_vocab_size(with_added_tokens=True)
        cfg = transformers.MixtralConfig(
            vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5, tie_word_embeddings=False,
            num_local_experts=4, num_experts_per_tok=2, sliding_window=None,
            rope_parameters={"rope_type": "default", "rope_theta": 1e6},
            bos_token_id=tok.token_to_id("<|begin_of_text|>"), eos_token_id=tok.token_to_id("<|end_of_text|>"))
        model = transformers.MixtralForCausalLM(cfg).eval()
    elif name == "qwen2_moe_tiny":
        tok = train_tokenizer("qwen2")
        vocab = tok.get_vocab_size(with_added_tokens=True)
        cfg = transformers.Qwen2MoeConfig(
            vocab_size=vocab, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
            shared_expert_intermediate_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=256, rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 50000.0}, tie_word_embeddings=False,
            num_experts=8, num_experts_per_tok=2, norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[],
            use_sliding_window=False,
            bos_token_id=tok.token_to_id("<|endoftext|>"), eos_token_id=tok.token_to_id("<|endoftext|>"))
        model = transformers.Qwen2MoeForCausalLM(cfg).eval()
    else:
        tok = train_tokenizer("qwen2")
        vocab = tok.get_vocab_size(with_added_tokens=True)
        cfg = transformers.Qwen3MoeConfig(
            vocab_size=vocab, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=256,
            rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 50000.0},
            tie_word_embeddings=False, attention_bias=False, num_experts=8, num_experts_per_tok=3,
            norm_topk_prob=name == "qwen3_moe_tiny", decoder_sparse_step=1, mlp_only_layers=[],
            bos_token_id=tok.token_to_id("<|endoftext|>"), eos_token_id=tok.token_to_id("<|im_end|>"))
        model = transformers.Qwen3MoeForCausalLM(cfg).eval()
    init_random(model)
    # Routers 4x init_random's scale: the router logits spread wider, so the
    # reference's choice of experts sits further from ties that float
    # rounding could flip (decoder_logits.py records the smallest gap).
    with torch.no_grad():
        for layer in model.model.layers:
            layer.mlp.gate.weight.mul_(4.0)
    d = OUT / name
    save_hf(model, tok, d)
    if name != "qwen3_moe_unnorm_tiny":
        arch = {"mixtral_tiny": "llama", "qwen2_moe_tiny": "qwen2moe"}.get(name, "qwen3moe")
        experts = (cfg.num_experts, cfg.num_experts_per_tok,
                   getattr(cfg, "moe_intermediate_size", cfg.intermediate_size))
        if name == "qwen2_moe_tiny":
            experts += (cfg.shared_expert_intermediate_size,)
        write_llama_gguf(d / "model.gguf", model, cfg, tok, arch, gguf.GGMLQuantizationType.F32, experts=experts)
    return {"class": type(model).__name__, "vocab": vocab, "experts": cfg.num_experts,
            "experts_per_token": cfg.num_experts_per_tok, "norm_topk_prob": getattr(cfg, "norm_topk_prob", True)}


def make_smollm3():
    """smollm3_tiny (see the module docstring)."""
    torch.manual_seed(SEED)
    tok = train_tokenizer("llama3")
    vocab = tok.get_vocab_size(with_added_tokens=True)
    cfg = transformers.SmolLM3Config(
        vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 50000.0}, use_sliding_window=False,
        pad_token_id=tok.token_to_id("<|end_of_text|>"),
        bos_token_id=tok.token_to_id("<|begin_of_text|>"), eos_token_id=tok.token_to_id("<|end_of_text|>"))
    assert cfg.no_rope_layers == [1, 1, 1, 0], cfg.no_rope_layers
    model = transformers.SmolLM3ForCausalLM(cfg).eval()
    init_random(model)
    d = OUT / "smollm3_tiny"
    save_hf(model, tok, d)
    write_llama_gguf(d / "model.gguf", model, cfg, tok, "smollm3", gguf.GGMLQuantizationType.F32)
    return {"class": "SmolLM3ForCausalLM", "vocab": vocab, "no_rope_layers": cfg.no_rope_layers}


def make_olmo(name):
    """olmo2_tiny / olmoe_tiny / olmoe_clip_tiny (see the module docstring)."""
    torch.manual_seed(SEED)
    tok = train_tokenizer("llama3")
    vocab = tok.get_vocab_size(with_added_tokens=True)
    kw = dict(vocab_size=vocab, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
              max_position_embeddings=256, rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False,
              rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
              bos_token_id=tok.token_to_id("<|begin_of_text|>"), eos_token_id=tok.token_to_id("<|end_of_text|>"))
    if name == "olmo2_tiny":
        cfg = transformers.Olmo2Config(**kw, intermediate_size=96, num_key_value_heads=2)
        model = transformers.Olmo2ForCausalLM(cfg).eval()
    else:
        cfg = transformers.OlmoeConfig(**kw, intermediate_size=32, num_key_value_heads=4, num_experts=8,
                                       num_experts_per_tok=2, norm_topk_prob=False,
                                       clip_qkv=1.0 if name == "olmoe_clip_tiny" else None)
        model = transformers.OlmoeForCausalLM(cfg).eval()
    init_random(model)
    if name != "olmo2_tiny":
        with torch.no_grad():  # routers wider, as make_moe's
            for layer in model.model.layers:
                layer.mlp.gate.weight.mul_(4.0)
    if name == "olmoe_clip_tiny":
        # The clamp must bite: the same weights without it answer otherwise.
        ids = torch.tensor([list(range(2, 42))])
        with torch.no_grad():
            clipped = model(input_ids=ids).logits
            model.config.clip_qkv = None
            plain = model(input_ids=ids).logits
            model.config.clip_qkv = cfg.clip_qkv = 1.0
        assert float((clipped - plain).abs().max()) > 0.1, float((clipped - plain).abs().max())
    d = OUT / name
    save_hf(model, tok, d)
    if name == "olmo2_tiny":
        write_llama_gguf(d / "model.gguf", model, cfg, tok, "olmo2", gguf.GGMLQuantizationType.F32)
    elif name == "olmoe_tiny":
        write_llama_gguf(d / "model.gguf", model, cfg, tok, "olmoe", gguf.GGMLQuantizationType.F32,
                         experts=(cfg.num_experts, cfg.num_experts_per_tok, cfg.intermediate_size))
    return {"class": type(model).__name__, "vocab": vocab, "clip_qkv": getattr(cfg, "clip_qkv", None)}


def make_granite(name):
    """granite_tiny / granitemoe_tiny (see the module docstring)."""
    torch.manual_seed(SEED)
    tok = train_tokenizer("llama3")
    vocab = tok.get_vocab_size(with_added_tokens=True)
    kw = dict(vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6,
              rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, attention_bias=False,
              embedding_multiplier=4.0, attention_multiplier=0.2, residual_multiplier=0.5, logits_scaling=2.5,
              bos_token_id=tok.token_to_id("<|begin_of_text|>"), eos_token_id=tok.token_to_id("<|end_of_text|>"))
    if name == "granite_tiny":
        cfg = transformers.GraniteConfig(**kw, tie_word_embeddings=True)
        model = transformers.GraniteForCausalLM(cfg).eval()
    else:
        kw["intermediate_size"] = 32
        cfg = transformers.GraniteMoeConfig(**kw, tie_word_embeddings=False, num_local_experts=6,
                                            num_experts_per_tok=2)
        model = transformers.GraniteMoeForCausalLM(cfg).eval()
    init_random(model)
    if name == "granitemoe_tiny":
        with torch.no_grad():  # routers wider, as make_moe's
            for layer in model.model.layers:
                layer.block_sparse_moe.router.weight.mul_(4.0)
    d = OUT / name
    save_hf(model, tok, d)
    moe = name == "granitemoe_tiny"
    write_llama_gguf(d / "model.gguf", model, cfg, tok, "granitemoe" if moe else "granite",
                     gguf.GGMLQuantizationType.F32,
                     experts=(cfg.num_local_experts, cfg.num_experts_per_tok, cfg.intermediate_size) if moe else None)
    return {"class": type(model).__name__, "vocab": vocab, "multipliers": {
        k: getattr(cfg, k) for k in ("embedding_multiplier", "attention_multiplier", "residual_multiplier",
                                     "logits_scaling")}}


# llama_quant_mix: one tensor in each block type llama.cpp writes weights
# in, as llama-quantize mixes them (Q4_K_M: Q4_K with Q6_K for the output
# and some ffn_down / attn_v); hidden 256 because the K-quants and IQ4_XS
# need rows of 256.
T = gguf.GGMLQuantizationType
QUANT_MIX = {
    "token_embd.weight": T.Q4_K, "output.weight": T.Q6_K,
    "blk.0.attn_q.weight": T.Q4_0, "blk.0.attn_k.weight": T.Q4_1, "blk.0.attn_v.weight": T.Q5_0,
    "blk.0.attn_output.weight": T.Q5_1, "blk.0.ffn_gate.weight": T.Q8_0, "blk.0.ffn_up.weight": T.IQ4_NL,
    "blk.0.ffn_down.weight": T.Q2_K,
    "blk.1.attn_q.weight": T.Q3_K, "blk.1.attn_k.weight": T.Q4_K, "blk.1.attn_v.weight": T.Q5_K,
    "blk.1.attn_output.weight": T.Q6_K, "blk.1.ffn_gate.weight": T.IQ4_XS, "blk.1.ffn_up.weight": T.Q4_K,
    "blk.1.ffn_down.weight": T.Q6_K,
}


def make_quant_mix():
    """LlamaForCausalLM, hidden 256, 2 layers, GQA 4/2 (head_dim 64), llama_tiny's
    tokenizer; config.json, tokenizer.json and model.gguf in the QUANT_MIX
    types only (no f32 weights: the reference is the GGUF's own values,
    dequantised by gguf-py; tools/golden/decoder_logits.py)."""
    import decoder_logits  # noqa: E402  (its HF loading of llama.cpp-named tensors)
    torch.manual_seed(SEED)
    tok = train_tokenizer("llama3")
    vocab = tok.get_vocab_size(with_added_tokens=True)
    cfg = llama3_config(tok, hidden_size=256, intermediate_size=256)
    model = transformers.LlamaForCausalLM(cfg).eval()
    init_random(model)
    d = OUT / "llama_quant_mix"
    d.mkdir(parents=True, exist_ok=True)
    cfg.save_pretrained(str(d))
    tok.save(str(d / "tokenizer.json"))
    write_llama_gguf(d / "model.gguf", model, cfg, tok, "llama", QUANT_MIX,
                     file_type=gguf.LlamaFileType.MOSTLY_Q4_K_M)
    # How far the quantisation moved the model: the last logits of a prompt,
    # f32 against the GGUF's dequantised values (a sanity check of the
    # quantisers; the C++ tests compare against the latter).
    reader = gguf.GGUFReader(str(d / "model.gguf"))
    assert {t.name: t.tensor_type for t in reader.tensors if t.name in QUANT_MIX} == QUANT_MIX
    quantised = transformers.LlamaForCausalLM(cfg).eval()
    decoder_logits.load_gguf_weights(quantised, {t.name: np.array(gguf.quants.dequantize(t.data, t.tensor_type),
                                                                  dtype=np.float32) for t in reader.tensors})
    prompt = torch.tensor([[5, 17, 42, 99, 7, 250, 3, 64]])
    with torch.no_grad():
        diff = float((model(input_ids=prompt).logits - quantised(input_ids=prompt).logits).abs().max())
        scale = float(model(input_ids=prompt).logits.abs().max())
    return {"class": "LlamaForCausalLM", "vocab": vocab, "gguf_only": True,
            "types": {k: v.name for k, v in QUANT_MIX.items()},
            "max_abs_logit_change_from_quantisation": round(diff, 4), "max_abs_logit": round(scale, 4)}


ROPE_SCALED = {
    "llama_yarn_tiny": dict(head_dim=32, max_positions=256,
                            rope_parameters={"rope_type": "yarn", "factor": 4.0,
                                             "original_max_position_embeddings": 32,
                                             "beta_fast": 8.0, "beta_slow": 0.5}),
    "llama_dynamic_tiny": dict(head_dim=16, max_positions=32,
                               rope_parameters={"rope_type": "dynamic", "factor": 2.0}),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    only = set(filter(None, ap.parse_args().only.split(",")))
    torch.manual_seed(SEED)
    OUT.mkdir(parents=True, exist_ok=True)
    versions_path = OUT / "versions.json"
    old = json.loads(versions_path.read_text()) if versions_path.exists() else {}
    made = dict(old.get("models", {})) if only else {}

    def want(name):
        return not only or name in only

    for name, kw in ROPE_SCALED.items():
        if want(name):
            made[name] = make_rope_scaled(name, **kw)
    if want("llama_quant_mix"):
        made["llama_quant_mix"] = make_quant_mix()
    if want("qwen3_tiny"):
        made["qwen3_tiny"] = make_qwen3()
    for name in SLIDING_WINDOW:
        if want(name):
            made[name] = make_sliding_window(name)
    if want("gemma3_tiny"):
        made["gemma3_tiny"] = make_gemma3()
    if want("gemma2_tiny"):
        made["gemma2_tiny"] = make_gemma2()
    if want("gemma_tiny"):
        made["gemma_tiny"] = make_gemma1()
    for name in ("gemma2_gguf_tiny", "gemma3_gguf_tiny"):
        if want(name):
            made[name] = make_gemma_gguf(name)
    for name in ("phi3_tiny", "phi3_longrope_tiny"):
        if want(name):
            made[name] = make_phi3(name)
    for name in ("qwen3_moe_tiny", "qwen3_moe_unnorm_tiny", "mixtral_tiny", "qwen2_moe_tiny"):
        if want(name):
            made[name] = make_moe(name)
    for name in ("granite_tiny", "granitemoe_tiny"):
        if want(name):
            made[name] = make_granite(name)
    for name in ("olmo2_tiny", "olmoe_tiny", "olmoe_clip_tiny"):
        if want(name):
            made[name] = make_olmo(name)
    if want("smollm3_tiny"):
        made["smollm3_tiny"] = make_smollm3()
    if only and not only & {"llama_tiny", "qwen2_tiny", "gpt2_tiny"}:
        write_versions(made)
        return
    if only:
        sys.exit("--only supports the rope-scaled and sliding-window models, llama_quant_mix, qwen3_tiny, "
                 "gemma3_tiny, gemma2_tiny, gemma_tiny, gemma2_gguf_tiny, gemma3_gguf_tiny, phi3_tiny, "
                 "phi3_longrope_tiny, qwen3_moe_tiny, qwen3_moe_unnorm_tiny, mixtral_tiny, qwen2_moe_tiny, "
                 "granite_tiny, granitemoe_tiny, olmo2_tiny, olmoe_tiny, olmoe_clip_tiny and smollm3_tiny; "
                 "remake the others with no --only")

    # --- llama_tiny: GQA 4/2, rope_theta 50000, untied, no bias, Llama-3 regex tokenizer.
    tok = train_tokenizer("llama3")
    vocab = tok.get_vocab_size(with_added_tokens=True)
    cfg = llama3_config(tok)
    model = transformers.LlamaForCausalLM(cfg).eval()
    init_random(model)
    d = OUT / "llama_tiny"
    save_hf(model, tok, d)
    for qt, fname in ((gguf.GGMLQuantizationType.F32, "model.gguf"),
                      (gguf.GGMLQuantizationType.F16, "model-f16.gguf"),
                      (gguf.GGMLQuantizationType.Q8_0, "model-q8_0.gguf")):
        write_llama_gguf(d / fname, model, cfg, tok, "llama", qt)
    made["llama_tiny"] = {"class": "LlamaForCausalLM", "vocab": vocab}

    # --- qwen2_tiny: same sizes, QKV bias on (Qwen2), Qwen2 regex tokenizer.
    tok = train_tokenizer("qwen2")
    vocab = tok.get_vocab_size(with_added_tokens=True)
    cfg = transformers.Qwen2Config(
        vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rms_norm_eps=1e-6, rope_theta=50000.0, tie_word_embeddings=False,
        bos_token_id=tok.token_to_id("<|endoftext|>"), eos_token_id=tok.token_to_id("<|endoftext|>"))
    model = transformers.Qwen2ForCausalLM(cfg).eval()
    init_random(model)
    d = OUT / "qwen2_tiny"
    save_hf(model, tok, d)
    write_llama_gguf(d / "model.gguf", model, cfg, tok, "qwen2", gguf.GGMLQuantizationType.F32)
    made["qwen2_tiny"] = {"class": "Qwen2ForCausalLM", "vocab": vocab}

    # --- gpt2_tiny: MHA 4 heads, hidden 64, 2 layers, GPT-2 regex tokenizer.
    tok = train_tokenizer("gpt2")
    vocab = tok.get_vocab_size(with_added_tokens=True)
    eot = tok.token_to_id("<|endoftext|>")
    cfg = transformers.GPT2Config(vocab_size=vocab, n_positions=128, n_embd=64, n_layer=2, n_head=4, n_inner=128,
                                  bos_token_id=eot, eos_token_id=eot, layer_norm_epsilon=1e-5)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    init_random(model)
    d = OUT / "gpt2_tiny"
    save_hf(model, tok, d)
    write_gpt2_gguf(d / "model.gguf", model, cfg, tok)
    made["gpt2_tiny"] = {"class": "GPT2LMHeadModel", "vocab": vocab}

    write_versions(made)


def write_versions(made):
    versions = {"seed": SEED, "python": sys.version.split()[0], "torch": torch.__version__,
                "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
                "numpy": np.__version__, "gguf": getattr(gguf, "__version__", "0.19 (no __version__)"),
                "models": made}
    (OUT / "versions.json").write_text(json.dumps(versions, indent=2) + "\n")
    print(json.dumps(versions, indent=2))


if __name__ == "__main__":
    main()
