"""Writes small, valid seed files for the libFuzzer targets (./dev fuzz).

    make_seeds.py OUT_DIR  ->  OUT_DIR/safetensors/*.safetensors, OUT_DIR/gguf/*.gguf,
                               OUT_DIR/tokenizer/*, OUT_DIR/http_request/*

Seeds are made with the reference writers (the `safetensors` and `gguf`
packages pinned in tools/python/requirements.txt), not with our own code, so
the fuzzers start from files the real ecosystem produces. They are tiny on
purpose: libFuzzer mutates faster and caps input length from the seeds.
"""

import json
import pathlib
import shutil
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter, quants
from safetensors.numpy import save_file


def safetensors_seeds(out: pathlib.Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    save_file({"w": rng.standard_normal((2, 3)).astype(np.float32)}, str(out / "one_f32.safetensors"))
    save_file(
        {
            "embeddings.word_embeddings.weight": rng.standard_normal((4, 2)).astype(np.float16),
            "encoder.layer.0.attention.self.query.bias": rng.standard_normal(2).astype(np.float32),
            "scalar": np.array(1.5, dtype=np.float32),
            "empty": np.zeros((0, 3), dtype=np.float32),
        },
        str(out / "mixed.safetensors"),
        metadata={"format": "pt"},
    )
    # bf16 has no numpy dtype and the package's numpy writer cannot make one:
    # the format is an 8-byte little-endian header length, JSON, then data.
    bits = (rng.standard_normal(4).astype(np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
    header = json.dumps({"b": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, len(bits)]}}).encode()
    header += b" " * (-len(header) % 8)
    (out / "bf16.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bits)


def tiny_llama(path: pathlib.Path, q8: bool) -> None:
    """A one-layer Llama (hidden 32, 2 heads over 1 KV head) with a 4-token vocab."""
    rng = np.random.default_rng(1)
    hidden, ffn, vocab, heads, kv_heads = 32, 64, 4, 2, 1
    head_dim = hidden // heads
    w = GGUFWriter(str(path), "llama")
    w.add_context_length(64)
    w.add_embedding_length(hidden)
    w.add_block_count(1)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_tokenizer_model("llama")
    w.add_token_list(["<unk>", "<s>", "</s>", "\u2581a"])
    w.add_token_scores([0.0, 0.0, 0.0, -1.0])
    w.add_token_types([2, 3, 3, 1])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def tensor(name, shape):
        a = (rng.standard_normal(shape) * 0.1).astype(np.float32)
        if q8 and a.shape[-1] % 32 == 0 and a.ndim == 2:
            w.add_tensor(name, quants.quantize(a, GGMLQuantizationType.Q8_0), raw_dtype=GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, a)

    tensor("token_embd.weight", (vocab, hidden))
    tensor("output_norm.weight", (hidden,))
    tensor("blk.0.attn_norm.weight", (hidden,))
    tensor("blk.0.attn_q.weight", (heads * head_dim, hidden))
    tensor("blk.0.attn_k.weight", (kv_heads * head_dim, hidden))
    tensor("blk.0.attn_v.weight", (kv_heads * head_dim, hidden))
    tensor("blk.0.attn_output.weight", (hidden, heads * head_dim))
    tensor("blk.0.ffn_norm.weight", (hidden,))
    tensor("blk.0.ffn_gate.weight", (ffn, hidden))
    tensor("blk.0.ffn_up.weight", (ffn, hidden))
    tensor("blk.0.ffn_down.weight", (hidden, ffn))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def gguf_seeds(out: pathlib.Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tiny_llama(out / "tiny_llama_f32.gguf", q8=False)
    tiny_llama(out / "tiny_llama_q8_0.gguf", q8=True)
    # One tensor in each block type llama.cpp quantises weights to
    # (tools/golden/decoder_make_models.py, llama_quant_mix).
    mix = pathlib.Path(__file__).resolve().parents[2] / "tests/golden/decoder_models/llama_quant_mix/model.gguf"
    shutil.copyfile(mix, out / "llama_quant_mix.gguf")
    # Metadata of every scalar type and an array, and an f16 tensor.
    w = GGUFWriter(str(out / "metadata.gguf"), "test")
    w.add_uint8("u8", 1)
    w.add_int16("i16", -2)
    w.add_uint32("u32", 3)
    w.add_int64("i64", -4)
    w.add_float32("f32", 0.5)
    w.add_float64("f64", 0.25)
    w.add_bool("b", True)
    w.add_string("s", "h\u00e9llo")
    w.add_array("arr", [1, 2, 3])
    w.add_tensor("t", np.arange(8, dtype=np.float16).reshape(2, 4))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tokenizer_seeds(out: pathlib.Path) -> None:
    """Inputs for tokenizer_fuzzer: a selector byte (tokenizer and mode, see
    tokenizer_fuzz_target.h), then text or little-endian 16-bit token ids."""
    out.mkdir(parents=True, exist_ok=True)
    texts = [
        "Once upon a time, there was a little girl named Lily.",
        "  two leading spaces\n\nand\ttabs\r\n 123 4567 89.0",
        "caf\u00e9 na\u00efve \u65e5\u672c\u8a9e \U0001F600\U0001F44D\U0001F3FD",
        "<s></s><|endoftext|><unk> \u2581 <0x0A>",
    ]
    for selector in range(6):
        if selector < 3:  # text modes; 3-5 are the ids modes
            for i, text in enumerate(texts):
                (out / f"text_{selector}_{i}").write_bytes(bytes([selector]) + text.encode())
        else:
            ids = [1, 403, 407, 261, 378, 2, 35, 81, 13, 300, 500, 4000, 49000]
            (out / f"ids_{selector}").write_bytes(bytes([selector]) + b"".join(struct.pack("<H", i) for i in ids))
    # The encoder tokenizers (6 WordPiece, 8 Unigram, 9 byte-level BPE): no
    # specials / specials; max_length 5 / 8.
    # 10-12: the same three with normalized added tokens.
    for selector, name in ((6, "wordpiece"), (8, "unigram"), (9, "bpe"), (10, "wordpiece_added"),
                           (11, "unigram_added"), (12, "bpe_added")):
        for knobs in (0, 1, 11, 16):
            for i, text in enumerate(texts):
                (out / f"{name}_{knobs}_{i}").write_bytes(bytes([selector, knobs]) + text.encode())


def http_request_seeds(out: pathlib.Path) -> None:
    """Inputs for http_request_fuzzer: a selector byte (the endpoint, see
    http_request_fuzz_target.h), then a JSON body the server accepts."""
    out.mkdir(parents=True, exist_ok=True)
    bodies = [
        (0, {"inputs": [{"text": "hello world"}, {"token_ids": {"ids": [101, 7592, 102]}}], "pooling": "POOLING_MEAN",
             "normalize": True, "truncation": "TRUNCATION_END", "attention_layers": [0, 5],
             "attention_weights": "ATTENTION_WEIGHTS_AVERAGED"}),
        (1, {"text": "Once upon a time", "sampling": {"max_new_tokens": 16, "temperature": 0.7, "top_k": 40,
                                                     "top_p": 0.9, "repetition_penalty": 1.1, "seed": "42",
                                                     "stop": ["\n", "The end"], "stop_token_ids": [2],
                                                     "logprobs": True, "top_logprobs": 3, "prompt_logprobs": True}}),
        (1, {"tokenIds": {"ids": [1, 403, 407]}, "sampling": {"maxNewTokens": 4, "topK": 1}}),
        (1, {"text": "The cat", "sampling": {"frequency_penalty": 0.5, "presencePenalty": -1.5,
                                            "logit_bias": {"2": -100, "403": 2.5}}}),
        (2, {"model": "MODEL_KIND_DECODER", "text": "Lily went home.", "add_special_tokens": True}),
        (3, {"model": "MODEL_KIND_ENCODER", "token_ids": [101, 7592, 102], "skip_special_tokens": True}),
        (4, {"input": ["a sentence", "another one"], "model": "all-MiniLM-L6-v2", "encoding_format": "base64"}),
        (4, {"input": [[101, 2023, 102], [101, 102]], "encoding_format": "float"}),
        (5, {"prompt": "Once upon", "max_tokens": 8, "temperature": 0, "stop": "\n", "seed": 3, "logprobs": 2,
             "stream": True, "n": 2, "echo": True, "top_k": 5, "ignore_eos": True, "stop_token_ids": [2]}),
        (5, {"prompt": [[1, 403], [1, 407, 500]], "max_tokens": 0, "echo": True, "logprobs": 0}),
        (6, {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}),
        (7, {"instructions": "Be kind.", "input": [{"role": "user", "content": "Hi"}], "max_output_tokens": 8,
             "include": ["message.output_text.logprobs"], "top_logprobs": 2}),
        (8, {"system": "Be kind.", "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
             "max_tokens": 8, "stop_sequences": ["\n"]}),
        (9, {"messages": [{"role": "user", "content": "Hi"}]}),
        (10, {"text_1": "a query", "text_2": ["one", "two"]}),
        (11, {"query": "q", "documents": ["one", {"text": "two"}], "top_n": 1}),
        (12, {"inputs": {"source_sentence": "s", "sentences": ["a", "b"]}}),
        (13, {"inputs": ["hello", [101, 7592, 102]]}),
        (6, {"messages": [{"role": "user", "content": "Weather?"}], "tool_choice": "auto", "tools": [{
            "type": "function", "function": {"name": "w", "parameters": {"type": "object", "properties": {
                "unit": {"enum": ["c", "f"]}}}}}]}),
        (14, {"prompt": "Once upon a time", "add_special_tokens": False, "return_token_strs": True}),
        (14, {"messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": "function", "function": {
            "name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}]}),
        (15, {"tokens": [1, 403, 407, 2]}),
        (5, {"prompt": [1, 403, 407], "prompt_logprobs": 3, "allowed_token_ids": [403, 407, 2], "cache_salt": "t",
             "use_beam_search": False, "echo": True, "logprobs": 1, "return_token_ids": True,
             "return_tokens_as_token_ids": True}),
        (1, {"text": "x", "return_prompt_token_ids": True, "sampling": {"max_new_tokens": 2,
                                                                          "skip_special_tokens": False}}),
        (1, {"text": "x", "sampling": {"response_format": "RESPONSE_FORMAT_LAZY_JSON_SCHEMA",
                                       "json_schema": "{\"type\": \"object\"}", "lazy_trigger": "<tool_call>\n",
                                       "prompt_logprobs": True, "prompt_top_logprobs": 2,
                                       "allowed_token_ids": [1, 2], "cache_salt": "s"}}),
    ]
    for i, (selector, body) in enumerate(bodies):
        (out / f"body_{selector}_{i}").write_bytes(bytes([selector]) + json.dumps(body).encode())


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: make_seeds.py OUT_DIR")
    out = pathlib.Path(sys.argv[1])
    safetensors_seeds(out / "safetensors")
    gguf_seeds(out / "gguf")
    tokenizer_seeds(out / "tokenizer")
    http_request_seeds(out / "http_request")


if __name__ == "__main__":
    main()
