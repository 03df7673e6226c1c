#!/usr/bin/env python3
"""Reference chat prompts: transformers' apply_chat_template on published
chat templates.

Each template below is the Jinja "chat_template" of the model named beside
it, as those models publish it in tokenizer_config.json (written here from
the published text; nothing is downloaded). engine/tokenizers/chat_template.cc
holds the same texts: the C++ test checks that KnownChatTemplate recognises
each one, then renders every conversation in C++ and compares it, character
for character, with what transformers rendered here: the text, or that the
template refused (raise_exception, or transformers' own checks for
continue_final_message).

transformers renders through a tokenizer's apply_chat_template(tokenize=False);
the tokenizer is only where bos_token and eos_token come from, so each format
gets a throwaway tokenizer with its model's BOS and EOS texts.

Also the token ids of stories260K's chat prompts in the Llama-2 format:
the rendered text cut at its special tokens' text (<s>, </s>), each piece
between them encoded by the sentencepiece library on tok512.model (which
adds its dummy-prefix space to each piece), the special tokens as their ids.
That is what Hugging Face's sentencepiece Llama tokenizer (legacy, as
Llama-2 ships) and llama.cpp do with such a prompt; the C++ test tokenizes
the same text with the GGUF's tokenizer. One setting is changed:
tok512.model was trained with sentencepiece's default normalizer, which
squeezes runs of spaces and drops trailing ones (remove_extra_whitespaces);
Llama-2's tokenizer.model turns that off, and llama.cpp (hence a GGUF)
never applies it, so the reference turns it off too.

Writes tests/golden/chat_templates/renders.json.

Usage: .cache/venv/bin/python tools/golden/chat_templates.py
"""
import json
import os
import pathlib
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import datetime
import re

import jinja2
import sentencepiece
from sentencepiece import sentencepiece_model_pb2
import tokenizers
import transformers
from transformers import PreTrainedTokenizerFast
from transformers.utils import chat_template_utils

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOK512 = ROOT.parent / "shared" / "models" / "stories260K" / "tok512.model"
OUT = ROOT / "tests" / "golden" / "chat_templates" / "renders.json"

def template_file(name):
    """A template kept in a file of its own (tools/golden/chat_templates/)."""
    return (pathlib.Path(__file__).resolve().parent / "chat_templates" / name).read_text()


TEMPLATES = {
    # teknium/OpenHermes-2.5-Mistral-7B
    "chatml": {
        "model": "teknium/OpenHermes-2.5-Mistral-7B",
        "bos": "<s>", "eos": "<|im_end|>",
        "jinja": "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    },
    "llama2": {
        "model": "meta-llama/Llama-2-7b-chat-hf",
        "bos": "<s>", "eos": "</s>",
        "jinja": "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
    },
    "llama3": {
        "model": "meta-llama/Meta-Llama-3-8B-Instruct",
        "bos": "<|begin_of_text|>", "eos": "<|eot_id|>",
        "jinja": "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}",
    },
    "zephyr": {
        "model": "HuggingFaceH4/zephyr-7b-beta",
        "bos": "<s>", "eos": "</s>",
        "jinja": "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}",
    },
    "gemma": {
        "model": "google/gemma-7b-it",
        "bos": "<bos>", "eos": "<eos>",
        "jinja": "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}",
    },
    "phi3": {
        "model": "microsoft/Phi-3-mini-4k-instruct (revision 3a81184)",
        "bos": "<s>", "eos": "<|endoftext|>",
        "jinja": "{{ bos_token }}{% for message in messages %}{{'<|' + message['role'] + '|>' + '\\n' + message['content'] + '<|end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}",
    },
    "mistral": {
        "model": "mistralai/Mixtral-8x7B-Instruct-v0.1 (revision 1e637f2)",
        "bos": "<s>", "eos": "</s>",
        "jinja": "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}",
    },
    "qwen2": {
        "model": "Qwen/Qwen2-72B-Instruct (revision 1af63c6)",
        "bos": "", "eos": "<|im_end|>",
        "jinja": "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful assistant<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    },
}

# meta-llama/Llama-3.1-8B-Instruct (Llama-3.3-70B-Instruct carries the same),
# as published quotations give it (the text lives in a file of its own: it
# runs to a hundred lines); byte for byte the copy llama.cpp keeps in
# models/templates/meta-llama-Llama-3.1-8B-Instruct.jinja, written by its
# scripts/get_chat_template.py from the model's files (compared in the
# llama-cpp-python 0.3.36 source distribution's vendor/llama.cpp; sha256
# e10ca381b1ccc5cf9db52e371f3b6651576caee0a630b452e2816b2d404d4b65).
TEMPLATES["llama3.1"] = {
    "model": "meta-llama/Llama-3.1-8B-Instruct (as quoted; equal to llama.cpp's copy of the model's)",
    "bos": "<|begin_of_text|>", "eos": "<|eot_id|>",
    "jinja": template_file("llama3.1.jinja"),
}
# Qwen/Qwen2.5-7B-Instruct (every Qwen2.5-Instruct size carries the same):
# the copy llama.cpp keeps in models/templates/Qwen-Qwen2.5-7B-Instruct.jinja,
# taken from the llama-cpp-python 0.3.16 source distribution's
# vendor/llama.cpp (sha256 cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f).
# Tools go into the system turn one JSON line each; a call is
# <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>; results are
# <tool_response> blocks in a user turn (what --tool-call-parser=hermes reads).
TEMPLATES["qwen2.5"] = {
    "model": "Qwen/Qwen2.5-7B-Instruct (llama.cpp's copy, models/templates/Qwen-Qwen2.5-7B-Instruct.jinja)",
    "bos": "", "eos": "<|im_end|>",
    "jinja": template_file("qwen2.5.jinja"),
}
# google/gemma-3-1b-it (every Gemma 3 instruct size, and gemma-3n, carry the
# same): tokenizer_config.json's "chat_template", JSON-decoded. A system
# message's text opens the first user turn.
TEMPLATES["gemma3"] = {
    "model": "google/gemma-3-1b-it (tokenizer_config.json)",
    "bos": "<bos>", "eos": "<eos>",
    "jinja": template_file("gemma3.jinja"),
}
# Qwen/Qwen3-0.6B (the hybrid-thinking Qwen3 sizes, 0.6B to 32B, carry the
# same): the copy llama.cpp keeps in models/templates/Qwen-Qwen3-0.6B.jinja
# (written there by its scripts/get_chat_template.py from the model's
# tokenizer_config.json), taken from the llama-cpp-python 0.3.36 source
# distribution's vendor/llama.cpp (the file's sha256
# 87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5).
# Thinking: an answer's <think> block is dropped before the last user query
# and kept after it; enable_thinking=False closes an empty one in the prompt.
TEMPLATES["qwen3"] = {
    "model": "Qwen/Qwen3-0.6B (llama.cpp's copy, models/templates/Qwen-Qwen3-0.6B.jinja)",
    "bos": "", "eos": "<|im_end|>",
    "jinja": template_file("qwen3.jinja"),
}
# meta-llama/Llama-3.2-3B-Instruct (Llama-3.2-1B-Instruct carries the same):
# llama.cpp's copy, models/templates/meta-llama-Llama-3.2-3B-Instruct.jinja,
# from the same source distribution (sha256
# 5816fce10444e03c2e9ee1ef8a4a1ea61ae7e69e438613f3b17b69d0426223a4).
# Llama-3.1's without built-in tools, its system block dated by
# strftime_now("%d %b %Y") unless the caller gives date_string. transformers'
# strftime_now reads the clock; here the clock is fixed (FixedClock) and each
# case records the date it gave as "today".
TEMPLATES["llama3.2"] = {
    "model": "meta-llama/Llama-3.2-3B-Instruct (llama.cpp's copy, models/templates/meta-llama-Llama-3.2-3B-Instruct.jinja)",
    "bos": "<|begin_of_text|>", "eos": "<|eot_id|>",
    "jinja": template_file("llama3.2.jinja"),
}
# microsoft/Phi-3.5-mini-instruct: llama.cpp's copy,
# models/templates/microsoft-Phi-3.5-mini-instruct.jinja, from the same source
# distribution (sha256
# 78d976a442bcde2f0be15aafbb8e3050e1104f86732266f68403251b89982a90).
# Phi-3's turns without BOS; an empty system message is not shown.
TEMPLATES["phi3.5"] = {
    "model": "microsoft/Phi-3.5-mini-instruct (llama.cpp's copy, models/templates/microsoft-Phi-3.5-mini-instruct.jinja)",
    "bos": "<s>", "eos": "<|endoftext|>",
    "jinja": template_file("phi3.5.jinja"),
}
# microsoft/Phi-4-mini-instruct, as published quotations of its
# tokenizer_config.json give it (guidance's template cache, 2025-06-16,
# and others, all the same text).
TEMPLATES["phi4-mini"] = {
    "model": "microsoft/Phi-4-mini-instruct (published quotations of its tokenizer_config.json)",
    "bos": "<|endoftext|>", "eos": "<|endoftext|>",
    "jinja": "{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}",
}
# microsoft/phi-4: llama.cpp's copy, the "phi-4" case of
# tests/test-chat-template.cpp in llama-cpp-python 0.3.36's vendor/llama.cpp.
TEMPLATES["phi4"] = {
    "model": "microsoft/phi-4 (llama.cpp's tests/test-chat-template.cpp)",
    "bos": "<|endoftext|>", "eos": "<|im_end|>",
    "jinja": "{% for message in messages %}{% if (message['role'] == 'system') %}{{'<|im_start|>system<|im_sep|>' + message['content'] + '<|im_end|>'}}{% elif (message['role'] == 'user') %}{{'<|im_start|>user<|im_sep|>' + message['content'] + '<|im_end|><|im_start|>assistant<|im_sep|>'}}{% elif (message['role'] == 'assistant') %}{{message['content'] + '<|im_end|>'}}{% endif %}{% endfor %}",
}
# ibm-granite/granite-3.0-8b-instruct: llama.cpp's copy, the case of that
# name in tests/test-chat-template.cpp (llama-cpp-python 0.3.36's
# vendor/llama.cpp), its C string decoded into chat_templates/granite3.jinja.
TEMPLATES["granite3"] = {
    "model": "ibm-granite/granite-3.0-8b-instruct (llama.cpp's tests/test-chat-template.cpp)",
    "bos": "<|end_of_text|>", "eos": "<|end_of_text|>",
    "jinja": template_file("granite3.jinja"),
}
TOOL_FORMATS = ["llama3.1", "qwen2.5", "qwen3", "llama3.2"]
# Other models' texts of a format's template, typed differently (a newline
# in a string literal typed rather than escaped): recognised as that format,
# and rendered here on every conversation so the test shows they render the
# same. google/gemma-2-2b-it: llama.cpp's copy,
# models/templates/google-gemma-2-2b-it.jinja (sha256
# ecd6ae513fe103f0eb62e8ab5bfa8d0fe45c1074fa398b089c93a7e70c15cfd6).
VARIANTS = {
    "gemma-2-2b-it": {
        "format": "gemma",
        "model": "google/gemma-2-2b-it (llama.cpp's copy, models/templates/google-gemma-2-2b-it.jinja)",
        "bos": "<bos>", "eos": "<eos>",
        "jinja": template_file("gemma-2-2b-it.jinja"),
    },
}
# The templates that read date_string (chat_template_kwargs), each rendered
# with one given on these conversations.
DATED_FORMATS = ["llama3.1", "llama3.2"]
DATE_STRING = "01 Feb 2030"

SYSTEM = {"role": "system", "content": "You are a helpful assistant"}
CONVERSATIONS = {
    # llama.cpp's tests/test-chat-template.cpp conversation (spaces kept in
    # the second answer: templates that strip show it).
    "llama_cpp": [SYSTEM,
                  {"role": "user", "content": "Hello"},
                  {"role": "assistant", "content": "Hi there"},
                  {"role": "user", "content": "Who are you"},
                  {"role": "assistant", "content": "   I am an assistant   "},
                  {"role": "user", "content": "Another question"}],
    "no_system": [{"role": "user", "content": "Once upon a time"},
                  {"role": "assistant", "content": "there was a cat."},
                  {"role": "user", "content": "What was its name?"}],
    # Python's strip() also takes Unicode spaces (U+00A0, U+3000) and
    # U+001F; a non-ASCII letter stays.
    "whitespace_unicode": [{"role": "user", "content": "\n\t ¿Qué tal, señor Müller?\u00a0\u3000\x1f\n"}],
    "system_and_user": [SYSTEM, {"role": "user", "content": "Tell me a story."}],
    # Spaces around a system message (Gemma 3 keeps them: it does not trim
    # the text it folds into the first turn), and a system message alone.
    "system_spaces": [{"role": "system", "content": "  Be brief.\n"}, {"role": "user", "content": " Hi "}],
    "system_only": [SYSTEM],
    # An empty system message (Phi-3.5's template leaves it out).
    "system_empty": [{"role": "system", "content": ""}, {"role": "user", "content": "Hi"}],
    "two_users": [{"role": "user", "content": "Hello"}, {"role": "user", "content": "Are you there?"}],
    "system_late": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                    {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}],
    # A system message at an odd place: Mistral's template passes the turn
    # check there and refuses the role.
    "system_second": [{"role": "user", "content": "Hi"}, {"role": "system", "content": "Be brief."}],
    "assistant_first": [{"role": "assistant", "content": "How can I help?"}, {"role": "user", "content": "Hi"}],
    # The prefix of an answer, for continue_final_message (its trailing
    # space is what a stripping template removes).
    "partial_answer": [{"role": "user", "content": "Name a colour."},
                       {"role": "assistant", "content": "The colour is "}],
}
OPTIONS = [
    {"add_generation_prompt": True, "continue_final_message": False},
    {"add_generation_prompt": False, "continue_final_message": False},
    {"add_generation_prompt": False, "continue_final_message": True},
    {"add_generation_prompt": True, "continue_final_message": True},
]


# Tools, as OpenAI's clients send them (key order kept), and conversations
# with a call and its result, for the templates that show them (TOOL_FORMATS).
# Arguments are objects here, as vLLM hands them to a template (it parses
# the client's JSON text first).
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city — now",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "e.g. \"Zürich\""},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 7.5}},
            "required": ["city"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}},
]
CALL = {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {
    "name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius", "days": 2, "note": None,
                                         "ratio": 0.25, "tiny": 1e-07, "tags": [], "nested": {}}}}]}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "18 °C, \"sunny\"\n\twindy\u0001"}
TOOL_CONVERSATIONS = {
    "tools_system_user": [SYSTEM, {"role": "user", "content": "  Weather in Zürich?  "}],
    "tools_user": [{"role": "user", "content": "Weather in Zürich?"}],
    "tools_call_result": [SYSTEM, {"role": "user", "content": "Weather in Zürich?"}, CALL, RESULT],
    "tools_call_result_answer": [{"role": "user", "content": "Weather?"}, CALL, RESULT,
                                 {"role": "assistant", "content": "It is 18 °C."},
                                 {"role": "user", "content": "And tomorrow?"}],
    "tools_ipython_result": [{"role": "user", "content": "Weather?"}, CALL,
                             {"role": "ipython", "content": "[1, 2]"}],
    "tools_only_system": [SYSTEM],
    "tools_two_calls": [{"role": "user", "content": "Both?"},
                        {"role": "assistant", "tool_calls": CALL["tool_calls"] * 2}],
    # Text before the calls, two calls in a turn, their results in a row
    # (Qwen's template joins them into one user turn), then an answer.
    "tools_text_calls_results": [
        {"role": "user", "content": "Weather and time?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [
            CALL["tool_calls"][0],
            {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": {}}}]},
        RESULT, {"role": "tool", "tool_call_id": "call_2", "content": "12:00"},
        {"role": "assistant", "content": "18 °C at noon."}],
}
# Without tools: a call and a result in an ordinary conversation.
NO_TOOLS_CONVERSATIONS = {
    "call_result_no_tools": [{"role": "user", "content": "Weather?"}, CALL, RESULT],
}

# Qwen3's thinking: answers with <think> blocks in their content or their
# reasoning given apart (vLLM hands an assistant message's reasoning_content
# to the template), before and after the last user query, in a tool loop
# (results as tool turns, or as a user turn of <tool_response> text, which
# the template does not count as a query). Each rendered with the template's
# enable_thinking undefined and False (True: as undefined, once).
QWEN3_CONVERSATIONS = {
    "think_history": [{"role": "user", "content": "What is 2+2?"},
                      {"role": "assistant", "content": "<think>\nAdd them.\n</think>\n\n4"},
                      {"role": "user", "content": "And 3+3?"}],
    "think_answer_last": [{"role": "user", "content": "And 3+3?"},
                          {"role": "assistant", "content": "<think>\n\n Short. \n\n</think>\n\n\nSix "}],
    "plain_answer_last": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "\n\nHello "}],
    "reasoning_field": [{"role": "user", "content": "And 3+3?"},
                        {"role": "assistant", "content": "Six", "reasoning_content": "\n 3+3 \n"}],
    "reasoning_field_history": [{"role": "user", "content": "And 3+3?"},
                                {"role": "assistant", "content": "Six", "reasoning_content": "Add."},
                                {"role": "user", "content": "Thanks"}],
    # reasoning_content given (even empty): the content is not searched.
    "reasoning_field_empty": [{"role": "user", "content": "Q"},
                              {"role": "assistant", "content": "<think>x</think>y", "reasoning_content": ""}],
    "think_unclosed": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "<think>\nStill thinking"}],
    "think_twice": [{"role": "user", "content": "Q"},
                    {"role": "assistant", "content": "<think>a</think>b<think>c</think>\nd"}],
    "think_nested_open": [{"role": "user", "content": "Q"},
                          {"role": "assistant", "content": "x<think>y<think>z</think>w"}],
    "system_think": [SYSTEM, {"role": "user", "content": "Q"},
                     {"role": "assistant", "content": "<think>\nHmm\n</think>\n\nA"},
                     {"role": "system", "content": "Be brief."}],
}
# OpenAI content arrays, for Gemma 3's template, which reads them (vLLM hands
# it the parts): each text part trimmed and joined with nothing; a system
# message's first part only. The C++ side is given the parts as sent.
def parts(*texts):
    return [{"type": "text", "text": t} for t in texts]


GEMMA3_PART_CONVERSATIONS = {
    "parts_user": [{"role": "user", "content": parts(" Hello ", "there\n", "\tfriend")}],
    "parts_system": [{"role": "system", "content": parts(" Be brief. ", "Ignored: only the first part shows")},
                     {"role": "user", "content": parts("Hi", " you ")}],
    "parts_mixed": [{"role": "user", "content": "A string "}, {"role": "assistant", "content": parts("one ", " two")},
                    {"role": "user", "content": parts("three")}],
    "parts_partial_answer": [{"role": "user", "content": "Name a colour."},
                             {"role": "assistant", "content": parts("The colour", " is ")}],
}
THINKING_CALL = {"role": "assistant", "content": "", "reasoning_content": "I need the weather tool.",
                 "tool_calls": CALL["tool_calls"]}
QWEN3_TOOL_CONVERSATIONS = {
    "tools_interleaved_thinking": [
        SYSTEM, {"role": "user", "content": "Weather?"}, THINKING_CALL, RESULT,
        {"role": "assistant", "content": "<think>\nGot it.\n</think>\n\nIt is 18 °C."}],
    "tools_result_as_user_text": [
        {"role": "user", "content": "Weather?"}, THINKING_CALL,
        {"role": "user", "content": "<tool_response>\nsunny\n</tool_response>"}],
    "tools_call_without_thinking": [
        {"role": "user", "content": "Weather?"}, dict(CALL, content=""), RESULT,
        {"role": "assistant", "content": "Done."}],
    "tools_thinking_then_new_query": [
        {"role": "user", "content": "Weather?"}, THINKING_CALL, RESULT,
        {"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "Thanks"}],
}


class FixedClock(datetime.datetime):
    """datetime whose now() is 5 March 2026, 09:30: what transformers'
    strftime_now gives a template during these renders."""

    @classmethod
    def now(cls, tz=None):
        return cls(2026, 3, 5, 9, 30)


chat_template_utils.datetime = FixedClock
TODAY = FixedClock.now().strftime("%d %b %Y")


def with_empty_content(messages):
    """A call without text as this server hands it to a template: content ""
    (its proto's unset string). Qwen3's template concatenates an assistant's
    content, which transformers given no content key at all refuses."""
    return [dict(m, content="") if "content" not in m else m for m in messages]


def render(tok, fmt, messages, **kwargs):
    """The case for transformers' rendering of `messages` in `fmt` with
    apply_chat_template's `kwargs`: its text, or the template's refusal."""
    t = TEMPLATES[fmt]
    case = {"format": fmt, "messages": messages, **kwargs}
    if kwargs.get("tools") is None:
        case.pop("tools", None)
    try:
        case["text"] = tok.apply_chat_template(messages, chat_template=t["jinja"], tokenize=False, **kwargs)
    except (jinja2.TemplateError, ValueError) as e:
        case["error"] = str(e).split("\n")[0]
    return case


def tokenizer_for(bos, eos):
    # A one-word vocabulary is enough: only bos_token / eos_token are read.
    model = tokenizers.models.WordLevel({"[UNK]": 0, bos: 1, eos: 2}, unk_token="[UNK]")
    return PreTrainedTokenizerFast(tokenizer_object=tokenizers.Tokenizer(model), bos_token=bos, eos_token=eos,
                                   unk_token="[UNK]")


def sentencepiece_ids(sp, text, specials):
    ids = []
    for piece in re.split("(" + "|".join(re.escape(t) for t in specials) + ")", text):
        if piece in specials:
            ids.append(specials[piece])
        elif piece:
            ids.extend(sp.encode(piece))
    return ids


def stories_llama2_ids():
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(TOK512.read_bytes())
    proto.normalizer_spec.remove_extra_whitespaces = False
    sp = sentencepiece.SentencePieceProcessor(model_proto=proto.SerializeToString())
    specials = {sp.id_to_piece(sp.bos_id()): sp.bos_id(), sp.id_to_piece(sp.eos_id()): sp.eos_id()}
    tok = tokenizer_for("<s>", "</s>")
    out = []
    for conv_name in ["llama_cpp", "no_system", "whitespace_unicode", "system_and_user", "partial_answer"]:
        opt = {"add_generation_prompt": conv_name != "partial_answer",
               "continue_final_message": conv_name == "partial_answer"}
        messages = CONVERSATIONS[conv_name]
        text = tok.apply_chat_template(messages, chat_template=TEMPLATES["llama2"]["jinja"], tokenize=False, **opt)
        out.append({"conversation": conv_name, "messages": messages, **opt, "text": text,
                    "ids": sentencepiece_ids(sp, text, specials)})
    return out


def main():
    cases = []
    for fmt, t in TEMPLATES.items():
        tok = tokenizer_for(t["bos"], t["eos"])
        for conv_name, messages in CONVERSATIONS.items():
            for opt in OPTIONS:
                case = {"format": fmt, "conversation": conv_name, "messages": messages, **opt}
                if fmt == "llama3.2":
                    case["today"] = TODAY
                try:
                    case["text"] = tok.apply_chat_template(messages, chat_template=t["jinja"], tokenize=False, **opt)
                except (jinja2.TemplateError, ValueError) as e:
                    case["error"] = str(e).split("\n")[0]
                cases.append(case)
    for fmt, conv_name, messages in [(f, n, m) for f in TOOL_FORMATS for n, m in
                                     list(TOOL_CONVERSATIONS.items()) + list(NO_TOOLS_CONVERSATIONS.items())]:
        t = TEMPLATES[fmt]
        tok = tokenizer_for(t["bos"], t["eos"])
        tools = TOOLS if conv_name in TOOL_CONVERSATIONS else None
        if fmt == "qwen3":
            messages = with_empty_content(messages)
        for opt in OPTIONS[:2]:
            case = {"format": fmt, "conversation": conv_name, "messages": messages, **opt}
            if tools:
                case["tools"] = tools
            if fmt == "llama3.2":
                case["today"] = TODAY
            try:
                case["text"] = tok.apply_chat_template(messages, tools=tools, chat_template=t["jinja"], tokenize=False,
                                                       **opt)
            except (jinja2.TemplateError, ValueError) as e:
                case["error"] = str(e).split("\n")[0]
            cases.append(case)
    for variant, t in VARIANTS.items():
        assert t["jinja"] != TEMPLATES[t["format"]]["jinja"]
        tok = tokenizer_for(t["bos"], t["eos"])
        for conv_name, messages in CONVERSATIONS.items():
            for opt in OPTIONS:
                case = {"format": t["format"], "template": variant, "conversation": conv_name, "messages": messages,
                        **opt}
                try:
                    case["text"] = tok.apply_chat_template(messages, chat_template=t["jinja"], tokenize=False, **opt)
                except (jinja2.TemplateError, ValueError) as e:
                    case["error"] = str(e).split("\n")[0]
                cases.append(case)
    tok = tokenizer_for(TEMPLATES["gemma3"]["bos"], TEMPLATES["gemma3"]["eos"])
    for conv_name, messages in GEMMA3_PART_CONVERSATIONS.items():
        for opt in OPTIONS[:3]:
            cases.append({"conversation": conv_name, **render(tok, "gemma3", messages, **opt)})
    for fmt in DATED_FORMATS:
        tok = tokenizer_for(TEMPLATES[fmt]["bos"], TEMPLATES[fmt]["eos"])
        for conv_name in ["system_and_user", "no_system", "tools_call_result"]:
            tools = TOOLS if conv_name in TOOL_CONVERSATIONS else None
            messages = (TOOL_CONVERSATIONS if tools else CONVERSATIONS)[conv_name]
            for opt in OPTIONS[:2]:
                case = render(tok, fmt, messages, tools=tools, **opt, date_string=DATE_STRING)
                cases.append({"conversation": conv_name, **case, **({"today": TODAY} if fmt == "llama3.2" else {})})
    tok = tokenizer_for(TEMPLATES["qwen3"]["bos"], TEMPLATES["qwen3"]["eos"])
    for conv_name, messages in list(QWEN3_CONVERSATIONS.items()) + list(QWEN3_TOOL_CONVERSATIONS.items()):
        tools = TOOLS if conv_name in QWEN3_TOOL_CONVERSATIONS else None
        for opt in OPTIONS[:3]:
            for thinking in [{}, {"enable_thinking": False}] + ([{"enable_thinking": True}] if opt is OPTIONS[0] else []):
                case = render(tok, "qwen3", messages, tools=tools, **opt, **thinking)
                cases.append({"conversation": conv_name, **case})
    doc = {
        "generator": "tools/golden/chat_templates.py",
        "versions": {"python": sys.version.split()[0], "transformers": transformers.__version__,
                     "jinja2": jinja2.__version__, "tokenizers": tokenizers.__version__,
                     "sentencepiece": sentencepiece.__version__},
        "templates": {fmt: {"model": t["model"], "bos_token": t["bos"], "eos_token": t["eos"], "jinja": t["jinja"]}
                      for fmt, t in TEMPLATES.items()},
        "variants": {name: {"format": t["format"], "model": t["model"], "bos_token": t["bos"], "eos_token": t["eos"],
                            "jinja": t["jinja"]} for name, t in VARIANTS.items()},
        "cases": cases,
        "stories260K_llama2_ids": stories_llama2_ids(),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    n_err = sum("error" in c for c in cases)
    print(f"{OUT}: {len(cases)} cases ({n_err} refused)")


if __name__ == "__main__":
    main()
