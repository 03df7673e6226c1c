"""Writes a transformers Phi3ForCausalLM as a GGUF file in llama.cpp's
conventions (convert_hf_to_gguf.py's Phi3MiniModel):

- architecture "phi3"; qkv_proj written whole as attn_qkv ([q; k; v] rows)
  and gate_up_proj whole as ffn_up ([gate; up] rows: llama.cpp's swiglu
  gates the first half); Q/K unpermuted (llama.cpp runs phi3 with NEOX
  rope); output.weight only when the embeddings are untied;
- metadata: context_length (max_position_embeddings), feed_forward_length
  (intermediate_size, half of ffn_up's rows), rope.dimension_count
  (head_dim * partial_rotary_factor), rope.freq_base, the RMSNorm epsilon,
  and, for longrope, rope.scaling.original_context_length,
  rope.scaling.attn_factor (sqrt(1 + ln(scale) / ln(original)), scale =
  max / original positions, as the converter computes it) and the global
  tensors rope_factors_short.weight / rope_factors_long.weight (f32);
  attention.sliding_window when the config has one (llama.cpp reads it and
  then runs without windows);
- the tokenizer is the caller's (`add_tokenizer(writer)`); general.name
  is "tiny-longrope-test": llama.cpp gives a model whose name holds "phi3"
  Phi-3's SentencePiece token attributes, looking up "</s>" and "<s>",
  which a byte-level test vocabulary does not have.
"""
import math

import gguf
import numpy as np

from gguf_llama_writer import add_matrix


def write_phi3_gguf(path, model, cfg, add_tokenizer, qtype=gguf.GGMLQuantizationType.F32):
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    rp = cfg.rope_parameters
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    rope_dim = int(head_dim * rp.get("partial_rotary_factor", 1.0))
    w = gguf.GGUFWriter(str(path), "phi3")
    w.add_name("tiny-longrope-test")
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_dimension_count(rope_dim)
    w.add_rope_freq_base(rp["rope_theta"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if qtype == gguf.GGMLQuantizationType.F32
                    else gguf.LlamaFileType.MOSTLY_Q8_0)
    if cfg.sliding_window is not None:
        w.add_sliding_window(cfg.sliding_window)
    if rp.get("rope_type") == "longrope":
        orig = cfg.original_max_position_embeddings
        scale = cfg.max_position_embeddings / orig
        w.add_rope_scaling_orig_ctx_len(orig)
        w.add_rope_scaling_attn_factors(math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1 else 1.0)
        assert len(rp["short_factor"]) == len(rp["long_factor"]) == rope_dim // 2
        w.add_tensor("rope_factors_long.weight", np.asarray(rp["long_factor"], dtype=np.float32))
        w.add_tensor("rope_factors_short.weight", np.asarray(rp["short_factor"], dtype=np.float32))
    add_tokenizer(w)
    add_matrix(w, "token_embd.weight", sd["model.embed_tokens.weight"], qtype)
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        add_matrix(w, f"blk.{i}.attn_norm.weight", sd[p + "input_layernorm.weight"], qtype)
        add_matrix(w, f"blk.{i}.attn_qkv.weight", sd[p + "self_attn.qkv_proj.weight"], qtype)
        add_matrix(w, f"blk.{i}.attn_output.weight", sd[p + "self_attn.o_proj.weight"], qtype)
        add_matrix(w, f"blk.{i}.ffn_norm.weight", sd[p + "post_attention_layernorm.weight"], qtype)
        add_matrix(w, f"blk.{i}.ffn_up.weight", sd[p + "mlp.gate_up_proj.weight"], qtype)
        add_matrix(w, f"blk.{i}.ffn_down.weight", sd[p + "mlp.down_proj.weight"], qtype)
    add_matrix(w, "output_norm.weight", sd["model.norm.weight"], qtype)
    if not cfg.tie_word_embeddings:
        add_matrix(w, "output.weight", sd["lm_head.weight"], qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
