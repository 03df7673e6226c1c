"""Writes a transformers Gemma, Gemma 2 or Gemma 3 text model as a GGUF file
in llama.cpp's conventions (convert_hf_to_gguf.py's GemmaModel,
Gemma2Model, Gemma3Model):

- every tensor whose name ends in "norm.weight" (the layer norms, Gemma 3's
  q/k norms, the final norm) stored as 1 + weight, because llama.cpp's
  RMSNorm multiplies by the weight alone;
- Q/K unpermuted (llama.cpp runs the Gemmas with NEOX rope); lm_head
  dropped (tied); embeddings stored unscaled;
- tensor names from gguf-py's own TensorNameMap for the architecture;
- metadata: sizes, key/value length (head_dim); Gemma 2 its two softcaps and
  sliding window; Gemma 3 rope.freq_base (the full layers' theta),
  rope.freq_base_swa (the sliding layers'), linear rope scaling, sliding
  window and a final softcap only where set. query_pre_attn_scalar and the
  layer pattern are not written: llama.cpp derives them from the
  architecture (1/sqrt(head_dim) below the 27B sizes; sliding on even
  layers for Gemma 2, on all but each sixth for Gemma 3), so a model given
  to this writer must agree with those rules (asserted);
- the tokenizer as a SentencePiece vocabulary (tokenizer.ggml.model
  "llama", add_space_prefix false): pieces in id order, scores falling with
  the id (a merged piece's rank), types CONTROL for the special tokens,
  UNKNOWN for <unk>, BYTE for <0xNN>.
"""
import gguf
import numpy as np

from gguf_llama_writer import add_matrix

ARCH = {"gemma": gguf.MODEL_ARCH.GEMMA, "gemma2": gguf.MODEL_ARCH.GEMMA2, "gemma3": gguf.MODEL_ARCH.GEMMA3}


def llama_cpp_layer_types(arch, n_layers):
    """llama.cpp's set_swa_pattern(2) / (6): layer il slides when il % n < n - 1."""
    period = {"gemma2": 2, "gemma3": 6}[arch]
    return ["sliding_attention" if il % period < period - 1 else "full_attention" for il in range(n_layers)]


def add_spm_tokenizer(w, tok, pad_to=None):
    """`pad_to`: a vocabulary size to reach with <unusedN> pieces (type
    UNUSED, as Gemma's own), for a model whose embedding table is larger than
    the tokenizer (the benchmark's, which feeds token ids)."""
    vocab = tok.get_vocab(with_added_tokens=True)
    n = max(vocab.values()) + 1
    pieces = [""] * n
    for piece, i in vocab.items():
        pieces[i] = piece
    pieces += [f"<unused{i}>" for i in range((pad_to or n) - n)]
    added = tok.get_added_tokens_decoder()
    types, scores = [], []
    for i, piece in enumerate(pieces):
        if piece == "<unk>":
            types.append(gguf.TokenType.UNKNOWN)
        elif i >= n:
            types.append(gguf.TokenType.UNUSED)
        elif i in added:
            types.append(gguf.TokenType.CONTROL)
        elif piece.startswith("<0x") and len(piece) == 6:
            types.append(gguf.TokenType.BYTE)
        else:
            types.append(gguf.TokenType.NORMAL)
        scores.append(-float(i) if types[-1] == gguf.TokenType.NORMAL else 0.0)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(pieces)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(vocab["<bos>"])
    w.add_eos_token_id(vocab["<eos>"])
    w.add_unk_token_id(vocab["<unk>"])
    w.add_pad_token_id(vocab["<pad>"])
    w.add_add_bos_token(True)
    w.add_add_space_prefix(False)


def write_gemma_gguf(path, model, cfg, tok, arch, pad_vocab=False):
    """`pad_vocab`: pad the tokenizer's pieces up to cfg.vocab_size."""
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    n_layers = cfg.num_hidden_layers
    if arch != "gemma":
        assert cfg.query_pre_attn_scalar == cfg.head_dim, "llama.cpp scales scores by 1/sqrt(head_dim)"
        assert cfg.layer_types == llama_cpp_layer_types(arch, n_layers), cfg.layer_types
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(path.parent.name)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(n_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_key_length(cfg.head_dim)
    w.add_value_length(cfg.head_dim)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    if arch == "gemma2":
        w.add_attn_logit_softcapping(cfg.attn_logit_softcapping)
        w.add_final_logit_softcapping(cfg.final_logit_softcapping)
        w.add_sliding_window(cfg.sliding_window)
    if arch == "gemma3":
        full, local = cfg.rope_parameters["full_attention"], cfg.rope_parameters["sliding_attention"]
        assert local["rope_type"] == "default" and full["rope_type"] in ("default", "linear"), cfg.rope_parameters
        w.add_rope_freq_base(full["rope_theta"])
        w.add_rope_freq_base_swa(local["rope_theta"])
        if full["rope_type"] == "linear":
            w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
            w.add_rope_scaling_factor(full["factor"])
        if cfg.final_logit_softcapping:
            w.add_final_logit_softcapping(cfg.final_logit_softcapping)
        w.add_sliding_window(cfg.sliding_window)
    add_spm_tokenizer(w, tok, pad_to=cfg.vocab_size if pad_vocab else None)
    names = gguf.get_tensor_name_map(ARCH[arch], n_layers)
    f32 = gguf.GGMLQuantizationType.F32
    for hf_name, arr in sd.items():
        if hf_name == "lm_head.weight":
            continue  # tied: llama.cpp reads token_embd
        name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        assert name is not None, hf_name
        if hf_name.endswith("norm.weight"):
            arr = arr + np.float32(1.0)
        add_matrix(w, name, arr, f32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
