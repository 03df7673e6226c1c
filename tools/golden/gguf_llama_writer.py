"""Writes Llama-family (llama, qwen2) hyperparameters and tensors into a
`gguf.GGUFWriter` in llama.cpp's conventions (its convert_hf_to_gguf.py):
Q/K rows permuted to the adjacent-pair rope order for "llama", norms and
biases kept f32, `output.weight` only when the embeddings are untied.

Shared by the golden-model script (decoder_make_models.py) and the decoder
benchmark's converter (bench/decoder/make_gguf.py), so that the models our
tests load and the one llama.cpp is benchmarked on are written the same way.
"""
import gguf
import numpy as np

import ggml_quantize

FILE_TYPE = {
    gguf.GGMLQuantizationType.F32: gguf.LlamaFileType.ALL_F32,
    gguf.GGMLQuantizationType.F16: gguf.LlamaFileType.MOSTLY_F16,
    gguf.GGMLQuantizationType.BF16: gguf.LlamaFileType.MOSTLY_BF16,
    gguf.GGMLQuantizationType.Q8_0: gguf.LlamaFileType.MOSTLY_Q8_0,
}


def permute_qk(w, n_head):
    """convert_hf_to_gguf.py LlamaModel.permute: the rows of each head go from
    the HF half-split order to llama.cpp's adjacent-pair order (n_head is the
    number of heads of this projection: query heads for Q, KV heads for K)."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def add_matrix(writer, name, arr, qtype):
    """One tensor in `qtype` (a type, or a dict of tensor name -> type for a
    mix as llama-quantize writes one); 1-D tensors (norms, biases) always
    f32. The K-quants and IQ4 types through ggml_quantize (gguf-py reads
    them but cannot write them)."""
    if isinstance(qtype, dict):
        qtype = qtype.get(name, gguf.GGMLQuantizationType.F32)
    arr = np.ascontiguousarray(arr.astype(np.float32))
    if arr.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32:
        writer.add_tensor(name, arr)
    elif qtype == gguf.GGMLQuantizationType.F16:
        writer.add_tensor(name, arr.astype(np.float16))
    else:
        q = ggml_quantize.quantize(arr, qtype)
        writer.add_tensor(name, q, raw_shape=q.shape, raw_dtype=qtype)


def add_hparams(writer, *, name, n_layers, context, hidden, ffn, n_head, n_head_kv, rope_theta, rms_eps,
                vocab, qtype, file_type=None, head_dim=None):
    writer.add_name(name)
    writer.add_block_count(n_layers)
    writer.add_context_length(context)
    writer.add_embedding_length(hidden)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head_kv)
    writer.add_rope_freq_base(rope_theta)
    writer.add_layer_norm_rms_eps(rms_eps)
    writer.add_vocab_size(vocab)
    if head_dim is not None and head_dim != hidden // n_head:
        # Qwen3 and others whose heads are not hidden / n_head wide.
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    writer.add_rope_dimension_count(head_dim or hidden // n_head)
    writer.add_file_type(FILE_TYPE[qtype] if file_type is None else file_type)


def expert_tensors(sd, p):
    """A mixture layer's router and its experts stacked as llama.cpp's
    converter stacks them (ffn_gate_exps / ffn_up_exps [experts, ffn, hidden],
    ffn_down_exps [experts, hidden, ffn]): Mixtral's block_sparse_moe (w1 gate,
    w3 up, w2 down), Qwen3-MoE's mlp.experts or Granite MoE's
    block_sparse_moe.input_linear ([experts, 2 ffn, hidden]: each expert's
    gate rows, then its up rows) and output_linear; None for a dense layer."""
    router = p + "block_sparse_moe.router.layer.weight"
    if router in sd:
        fused, down = sd[p + "block_sparse_moe.input_linear.weight"], sd[p + "block_sparse_moe.output_linear.weight"]
        ffn = fused.shape[1] // 2
        return sd[router], fused[:, :ffn, :], fused[:, ffn:, :], down
    for router, fmt, names in ((p + "block_sparse_moe.gate.weight", p + "block_sparse_moe.experts.{}.{}.weight",
                                ("w1", "w3", "w2")),
                               (p + "mlp.gate.weight", p + "mlp.experts.{}.{}.weight",
                                ("gate_proj", "up_proj", "down_proj"))):
        if router in sd:
            n = sd[router].shape[0]
            return (sd[router],) + tuple(np.stack([sd[fmt.format(e, w)] for e in range(n)]) for w in names)
    return None


def add_tensors(writer, sd, *, n_layers, n_head, n_head_kv, qtype, permute, tied):
    """The tensors of an HF Llama/Qwen2 state dict (numpy f32 arrays);
    `permute` for the "llama" architecture (Qwen2's GGUF keeps HF's order)."""
    add_matrix(writer, "token_embd.weight", sd["model.embed_tokens.weight"], qtype)
    for i in range(n_layers):
        p = f"model.layers.{i}."
        q, k = sd[p + "self_attn.q_proj.weight"], sd[p + "self_attn.k_proj.weight"]
        if permute:
            q, k = permute_qk(q, n_head), permute_qk(k, n_head_kv)
        # OLMo 2 has no pre-norms: its post_attention_layernorm and
        # post_feedforward_layernorm follow the sub-layers (llama.cpp's
        # post_attention_norm / post_ffw_norm).
        post_norms_only = p + "input_layernorm.weight" not in sd
        if not post_norms_only:
            add_matrix(writer, f"blk.{i}.attn_norm.weight", sd[p + "input_layernorm.weight"], qtype)
        add_matrix(writer, f"blk.{i}.attn_q.weight", q, qtype)
        add_matrix(writer, f"blk.{i}.attn_k.weight", k, qtype)
        add_matrix(writer, f"blk.{i}.attn_v.weight", sd[p + "self_attn.v_proj.weight"], qtype)
        for b, nm in (("q", "attn_q"), ("k", "attn_k"), ("v", "attn_v")):
            key = p + f"self_attn.{b}_proj.bias"
            if key in sd:
                add_matrix(writer, f"blk.{i}.{nm}.bias", sd[key], qtype)
        for b in ("q", "k"):  # Qwen3's per-head norms, OLMo's whole-projection ones
            key = p + f"self_attn.{b}_norm.weight"
            if key in sd:
                add_matrix(writer, f"blk.{i}.attn_{b}_norm.weight", sd[key], qtype)
        add_matrix(writer, f"blk.{i}.attn_output.weight", sd[p + "self_attn.o_proj.weight"], qtype)
        if post_norms_only:
            add_matrix(writer, f"blk.{i}.post_attention_norm.weight", sd[p + "post_attention_layernorm.weight"], qtype)
            add_matrix(writer, f"blk.{i}.post_ffw_norm.weight", sd[p + "post_feedforward_layernorm.weight"], qtype)
        else:
            add_matrix(writer, f"blk.{i}.ffn_norm.weight", sd[p + "post_attention_layernorm.weight"], qtype)
        experts = expert_tensors(sd, p)
        if experts is None:
            add_matrix(writer, f"blk.{i}.ffn_gate.weight", sd[p + "mlp.gate_proj.weight"], qtype)
            add_matrix(writer, f"blk.{i}.ffn_up.weight", sd[p + "mlp.up_proj.weight"], qtype)
            add_matrix(writer, f"blk.{i}.ffn_down.weight", sd[p + "mlp.down_proj.weight"], qtype)
        else:
            router, gate, up, down = experts
            writer.add_tensor(f"blk.{i}.ffn_gate_inp.weight", np.ascontiguousarray(router, dtype=np.float32))
            add_matrix(writer, f"blk.{i}.ffn_gate_exps.weight", gate, qtype)
            add_matrix(writer, f"blk.{i}.ffn_up_exps.weight", up, qtype)
            add_matrix(writer, f"blk.{i}.ffn_down_exps.weight", down, qtype)
            shared = p + "mlp.shared_expert."
            if shared + "gate_proj.weight" in sd:  # Qwen2-MoE's shared expert and its gate ([1, hidden] -> [hidden])
                for w, nm in (("gate", "ffn_gate_shexp"), ("up", "ffn_up_shexp"), ("down", "ffn_down_shexp")):
                    add_matrix(writer, f"blk.{i}.{nm}.weight", sd[shared + f"{w}_proj.weight"], qtype)
                writer.add_tensor(f"blk.{i}.ffn_gate_inp_shexp.weight",
                                  np.ascontiguousarray(sd[p + "mlp.shared_expert_gate.weight"].reshape(-1),
                                                       dtype=np.float32))
    add_matrix(writer, "output_norm.weight", sd["model.norm.weight"], qtype)
    if not tied:
        add_matrix(writer, "output.weight", sd["lm_head.weight"], qtype)
