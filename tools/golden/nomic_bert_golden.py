#!/usr/bin/env python3
"""Writes the Nomic BERT golden fixtures from the reference implementation.

Nomic BERT (`model_type` "nomic_bert": nomic-embed-text-v1 and v1.5, their
fine-tunes) is BERT's post-norm encoder with rotary positions (GPT-NeoX
pairing, base 1000) in place of a position table, a SwiGLU feed-forward
(fc2(fc11 x * silu(fc12 x))), a fused Wqkv and no projection biases. Its
checkpoints on the hub carry Nomic's remote-code config (GPT-2's key names:
n_embd, n_head, n_layer, n_inner, n_positions, rotary_emb_base, ...);
transformers 5 ships the architecture natively (NomicBertModel, its own
config keys) and reads and writes the same tensor names (emb_ln,
encoder.layers.N.attn.Wqkv, mlp.fc11 / fc12 / fc2, norm1, norm2).

1. The tokenizer: transformers' BertTokenizer on a reduced all-MiniLM-L6-v2
   vocabulary (bert-base-uncased's, which nomic-embed-text uses), the texts
   tokenizing as with the full one (asserted); config.json's vocab_size is 6
   larger than the tokenizer's, as nomic-embed-text pads 30522 to 30528.
2. A tiny random-weight NomicBertModel (hidden 32, 2 layers, 4 heads,
   intermediate 48, 128 positions, rotary base 1000), every parameter
   re-initialised, saved by transformers with sentence-transformers' modules
   (mean pooling, Normalize, max_seq_length 64) and nomic-embed-text's
   prompts (config_sentence_transformers.json: search_query: /
   search_document: ...):
     tests/golden/encoder_models/nomic_bert_tiny/   config.json rewritten in the hub's layout (the key
                                                    set of nomic-embed-text-v1.5's), the rest as saved
3. tests/golden/encoder/nomic_bert_golden.json:
     versions              exact library versions, this script
     max_tokens            sentence-transformers' max_seq_length
     transformers_config   the config.json transformers 5 wrote (its own layout), for the test that
                           loads the same weights under it
     embeddings            {text, ids, embedding}: SentenceTransformer(dir).encode of each text (the
                           prompted ones as encode(text, prompt_name=...) sees them: prompt + text),
                           asserted equal to NomicBertModel's mean-pooled normalised state and to
                           bert_gguf_golden.py's numpy nomic-bert forward (the one checked against
                           llama.cpp)
     prompted              {prompt_name, text, index}: the embeddings entry (index) that
                           encode(text, prompt_name=...) gave

Deterministic: a second run writes byte-identical files.

Usage (host venv):
  .cache/venv/bin/python tools/golden/nomic_bert_golden.py
"""
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from transformers import NomicBertConfig, NomicBertModel

from bert_gguf_golden import NOMIC, nomic_reference
from encoder_golden_util import (MODELS_DIR, REPO, SENTENCES, bert_uncased_tokenizer_config, reduced_bert_tokenizer,
                                 reinit_, save_model_dir, truncated_ids, versions, write_json,
                                 write_mean_pooling_modules)

SCRIPT = "tools/golden/nomic_bert_golden.py"
OUT_PATH = os.path.join(REPO, "tests/golden/encoder/nomic_bert_golden.json")
MODEL_DIR = os.path.join(MODELS_DIR, "nomic_bert_tiny")
MAX_TOKENS = 64
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PROMPTS = {"query": "search_query: ", "document": "search_document: ", "clustering": "clustering: ",
           "classification": "classification: "}

TEXTS = SENTENCES
PROMPTED = [("query", "What is TSNE?"), ("document", "TSNE is a dimensionality reduction algorithm.")]


def hub_config(vocab_size):
    """config.json as the hub's Nomic BERT checkpoints write it (the key set
    of nomic-embed-text-v1.5's, Nomic's remote-code NomicBertConfig), with the
    tiny model's sizes."""
    return {
        "activation_function": "swiglu", "architectures": ["NomicBertModel"], "attn_pdrop": 0.0,
        "auto_map": {"AutoConfig": "nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig",
                     "AutoModel": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel"},
        "bos_token_id": None, "causal": False, "dense_seq_output": True, "embd_pdrop": 0.0, "eos_token_id": None,
        "fused_bias_fc": True, "fused_dropout_add_ln": True, "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-12, "max_trained_positions": 2048, "mlp_fc1_bias": False, "mlp_fc2_bias": False,
        "model_type": "nomic_bert", "n_embd": NOMIC["hidden"], "n_head": NOMIC["heads"], "n_inner": NOMIC["ffn"],
        "n_layer": NOMIC["layers"], "n_positions": NOMIC["context"], "pad_vocab_size_multiple": 64,
        "parallel_block": False, "parallel_block_tied_norm": False, "prenorm": False, "qkv_proj_bias": False,
        "reorder_and_upcast_attn": False, "resid_pdrop": 0.0, "rotary_emb_base": NOMIC["theta"],
        "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": False, "rotary_emb_scale_base": None,
        "rotary_scaling_factor": None, "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
        "summary_activation": None, "summary_first_dropout": 0.0, "summary_proj_to_labels": True,
        "summary_type": "cls_index", "summary_use_proj": True, "torch_dtype": "float32",
        "transformers_version": "4.34.0", "type_vocab_size": NOMIC["types"], "use_cache": True,
        "use_flash_attn": True, "use_rms_norm": False, "use_xentropy": True, "vocab_size": vocab_size,
    }


def as_gguf_names(model):
    """The model's weights under llama.cpp's nomic-bert names, for
    bert_gguf_golden.nomic_reference."""
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    w = {"token_embd.weight": sd["embeddings.word_embeddings.weight"],
         "token_types.weight": sd["embeddings.token_type_embeddings.weight"],
         "token_embd_norm.weight": sd["embeddings.LayerNorm.weight"],
         "token_embd_norm.bias": sd["embeddings.LayerNorm.bias"]}
    for i in range(NOMIC["layers"]):
        p, b = f"layers.{i}.", f"blk.{i}."
        w[b + "attn_qkv.weight"] = np.concatenate([sd[p + f"self_attn.{x}_proj.weight"] for x in "qkv"])
        w[b + "attn_output.weight"] = sd[p + "self_attn.o_proj.weight"]
        w[b + "attn_output_norm.weight"] = sd[p + "post_attention_layernorm.weight"]
        w[b + "attn_output_norm.bias"] = sd[p + "post_attention_layernorm.bias"]
        w[b + "ffn_up.weight"] = sd[p + "mlp.up_proj.weight"]
        w[b + "ffn_gate.weight"] = sd[p + "mlp.gate_proj.weight"]
        w[b + "ffn_down.weight"] = sd[p + "mlp.down_proj.weight"]
        w[b + "layer_output_norm.weight"] = sd[p + "post_mlp_layernorm.weight"]
        w[b + "layer_output_norm.bias"] = sd[p + "post_mlp_layernorm.bias"]
    return w


def main():
    torch.manual_seed(0)
    tok, n_tokens = reduced_bert_tokenizer(TEXTS + [PROMPTS[name] + text for name, text in PROMPTED], SPECIALS)
    vocab_size = n_tokens + 6
    config = NomicBertConfig(vocab_size=vocab_size, hidden_size=NOMIC["hidden"], num_hidden_layers=NOMIC["layers"],
                             num_attention_heads=NOMIC["heads"], intermediate_size=NOMIC["ffn"],
                             max_position_embeddings=NOMIC["context"], type_vocab_size=NOMIC["types"],
                             layer_norm_eps=1e-12, rope_parameters={"rope_type": "default",
                                                                     "rope_theta": NOMIC["theta"]},
                             attn_implementation="eager")
    model = NomicBertModel(config).eval()
    reinit_(model, 20261207)

    d = save_model_dir("nomic_bert_tiny", model, tok, bert_uncased_tokenizer_config(MAX_TOKENS))
    write_mean_pooling_modules(d, NOMIC["hidden"], MAX_TOKENS, normalize=True)
    write_json(os.path.join(d, "config_sentence_transformers.json"),
               {"prompts": PROMPTS, "default_prompt_name": None, "similarity_fn_name": "cosine"})
    # sentence-transformers reads transformers' layout, written by
    # save_pretrained; config.json is put in the hub's layout afterwards.
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        transformers_config = json.load(f)
    st = SentenceTransformer(d, device="cpu")
    texts = TEXTS + [PROMPTS[name] + text for name, text in PROMPTED]
    st_embeddings = list(st.encode(texts, batch_size=4))
    prompted = []
    for i, (name, text) in enumerate(PROMPTED):
        by_name = st.encode([text], prompt_name=name)[0]
        assert np.allclose(by_name, st_embeddings[len(TEXTS) + i], atol=1e-6), name
        prompted.append({"prompt_name": name, "text": text, "index": len(TEXTS) + i})
    # What transformers reads back from the saved files is the model.
    reloaded = NomicBertModel.from_pretrained(d, attn_implementation="eager").eval()
    for (k, v), (k2, v2) in zip(model.state_dict().items(), reloaded.state_dict().items()):
        assert k == k2 and torch.equal(v, v2), k
    write_json(os.path.join(MODEL_DIR, "config.json"), hub_config(vocab_size))

    gguf_weights = as_gguf_names(model)
    embeddings = []
    for text, st_emb in zip(texts, st_embeddings):
        ids = truncated_ids(tok, text, None, MAX_TOKENS)
        with torch.no_grad():
            hidden = model(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids))).last_hidden_state[0]
        mean = torch.nn.functional.normalize(hidden.mean(dim=0), dim=0)
        assert torch.allclose(mean, torch.tensor(st_emb), atol=1e-5), text
        assert np.abs(nomic_reference(gguf_weights, ids) - mean.numpy()).max() < 1e-4, text
        embeddings.append({"text": text, "ids": ids, "embedding": [float(x) for x in mean]})
    assert max(len(e["ids"]) for e in embeddings) == MAX_TOKENS  # the long text reaches the limit
    write_json(OUT_PATH, {"versions": versions(SCRIPT), "max_tokens": MAX_TOKENS,
                          "transformers_config": transformers_config, "embeddings": embeddings,
                          "prompted": prompted})
    print("wrote", OUT_PATH, "and", MODEL_DIR)


if __name__ == "__main__":
    main()
