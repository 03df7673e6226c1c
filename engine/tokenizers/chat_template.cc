#include "engine/tokenizers/chat_template.h"

#include <array>
#include <optional>
#include "absl/strings/string_view.h"
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/tokenizers/chat_render_qwen25.h"
#include "engine/tokenizers/chat_render_qwen3.h"
#include "engine/tokenizers/python_json.h"
#include "engine/tokenizers/unicode_util.h"
#include "nlohmann/json.hpp"

namespace attnserve {
namespace {

struct FormatEntry {
  ChatFormat format;
  absl::string_view name;
  // The published template this format reproduces, as Jinja source (the
  // text of tokenizer_config.json's "chat_template" once JSON-decoded).
  absl::string_view jinja;
};

// Each from the model named beside it; tools/golden/chat_templates.py holds
// the same texts and renders them with transformers, and the C++ test checks
// that KnownChatTemplate recognises each golden file's template.
constexpr std::array<FormatEntry, 13> kFormats = {{
    // teknium/OpenHermes-2.5-Mistral-7B
    {ChatFormat::kChatMl, "chatml",
     R"({% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %})"},
    // meta-llama/Llama-2-7b-chat-hf
    {ChatFormat::kLlama2, "llama2",
     R"({% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %})"},
    // meta-llama/Meta-Llama-3-8B-Instruct
    {ChatFormat::kLlama3, "llama3",
     R"({% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %})"},
    // HuggingFaceH4/zephyr-7b-beta (TinyLlama-1.1B-Chat-v1.0 carries the same)
    {ChatFormat::kZephyr, "zephyr",
     "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\\n' + message['content'] + "
     "eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\\n' + message['content'] + eos_token "
     "}}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\\n'  + message['content'] + eos_token "
     "}}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% "
     "endfor %}"},
    // google/gemma-7b-it
    {ChatFormat::kGemma, "gemma",
     R"({{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %})"},
    // microsoft/Phi-3-mini-4k-instruct (revision 3a81184)
    {ChatFormat::kPhi3, "phi3",
     R"({{ bos_token }}{% for message in messages %}{{'<|' + message['role'] + '|>' + '\n' + message['content'] + '<|end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %})"},
    // mistralai/Mixtral-8x7B-Instruct-v0.1 (revision 1e637f2; Mistral-7B-Instruct-v0.2 carries the same)
    {ChatFormat::kMistral, "mistral",
     R"({{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %})"},
    // Qwen/Qwen2-72B-Instruct (revision 1af63c6): ChatML with a default system message
    {ChatFormat::kQwen2, "qwen2",
     R"({% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %})"},
    // meta-llama/Llama-3.1-8B-Instruct, as published quotations give it (its
    // tool paths are never taken: tools and tool roles are refused upstream)
    {ChatFormat::kLlama31, "llama3.1",
     R"jinja({{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\n\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- "<|python_tag|>" + tool_call.name + ".call(" }}
            {%- for arg_name, arg_val in tool_call.arguments | items %}
                {{- arg_name + '="' + arg_val + '"' }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- endif %}
                {%- endfor %}
            {{- ")" }}
        {%- else  %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- '{"name": "' + tool_call.name + '", ' }}
            {{- '"parameters": ' }}
            {{- tool_call.arguments | tojson }}
            {{- "}" }}
        {%- endif %}
        {%- if builtin_tools is defined %}
            {#- This means we're in ipython mode #}
            {{- "<|eom_id|>" }}
        {%- else %}
            {{- "<|eot_id|>" }}
        {%- endif %}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %})jinja"},
    // Qwen/Qwen2.5-7B-Instruct (every Qwen2.5-Instruct size carries it):
    // tools in the system turn, <tool_call> / <tool_response> blocks
    {ChatFormat::kQwen25, "qwen2.5",
     R"jinja({%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %})jinja"},
    // google/gemma-3-1b-it (every Gemma 3 instruct size carries it): Gemma's
    // turns; a system message's text and a blank line open the first turn
    {ChatFormat::kGemma3, "gemma3",
     R"jinja({{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '

' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '

' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '
' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>
' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model
'}}
{%- endif -%})jinja"},
    // Qwen/Qwen3-0.6B (the hybrid-thinking Qwen3 sizes carry it): Qwen2.5's
    // tools and calls without a default system message; earlier answers'
    // thinking dropped, enable_thinking=false closing an empty think block
    {ChatFormat::kQwen3, "qwen3",
     R"jinja({%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in message.content %}
                {%- set content = message.content.split('</think>')[-1].lstrip('\n') %}
                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %})jinja"},
    // meta-llama/Llama-3.2-3B-Instruct (Llama-3.2-1B-Instruct carries it
    // too): Llama-3.1's without built-in tools, dated by the clock
    {ChatFormat::kLlama32, "llama3.2",
     R"jinja({{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- if strftime_now is defined %}
        {%- set date_string = strftime_now("%d %b %Y") %}
    {%- else %}
        {%- set date_string = "26 Jul 2024" %}
    {%- endif %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
        {{- '{"name": "' + tool_call.name + '", ' }}
        {{- '"parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}" }}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %})jinja"},
}};

// What Python's str.strip() (and so Jinja's trim) removes: Unicode
// whitespace and the separators U+001C..U+001F.
bool IsPythonSpace(char32_t c) { return IsUnicodeWhitespace(c) || (c >= 0x1C && c <= 0x1F); }

// Decodes the one code point at text[pos...] (nullopt if invalid).
std::optional<std::pair<char32_t, size_t>> CodePointAt(absl::string_view text, size_t pos) {
  const unsigned char lead = static_cast<unsigned char>(text[pos]);
  const size_t len = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || pos + len > text.size()) return std::nullopt;
  std::vector<char32_t> cps;
  std::vector<uint32_t> offsets;
  if (!DecodeUtf8(text.substr(pos, len), &cps, &offsets).ok() || cps.size() != 1) return std::nullopt;
  return std::make_pair(cps[0], len);
}

// Python's str.strip() (str.rstrip() with `left` false).
std::string PyStrip(absl::string_view text, bool left = true) {
  size_t begin = 0;
  while (left && begin < text.size()) {
    auto cp = CodePointAt(text, begin);
    if (!cp.has_value() || !IsPythonSpace(cp->first)) break;
    begin += cp->second;
  }
  size_t end = text.size();
  while (end > begin) {
    size_t start = end - 1;  // back to the lead byte of the last code point
    while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    auto cp = CodePointAt(text, start);
    if (!cp.has_value() || start + cp->second != end || !IsPythonSpace(cp->first)) break;
    end = start;
  }
  return std::string(text.substr(begin, end - begin));
}

absl::Status Refusal(size_t index, absl::string_view what, ChatFormat format) {
  return absl::InvalidArgumentError(
      absl::StrCat("messages[", index, "]: ", what, " (the ", ChatFormatName(format), " chat template)"));
}

constexpr char kAlternate[] = "Conversation roles must alternate user/assistant/user/assistant/...";

// user at even places of `first..`, anything else at odd ones, as the
// templates' raise_exception tests it.
absl::Status CheckAlternation(absl::Span<const ChatMessage> m, size_t first, ChatFormat format) {
  for (size_t i = first; i < m.size(); ++i) {
    if ((m[i].role == "user") != ((i - first) % 2 == 0)) return Refusal(i, kAlternate, format);
  }
  return absl::OkStatus();
}

// Llama-3.1's template with its custom-tool branches (no builtin_tools,
// tools_in_user_message as its default true): the tools go, as JSON with an
// indent of 4, into the first message after the system one; a call is
// {"name": ..., "parameters": ...}; a tool's result is an "ipython" turn
// holding its content as a JSON string.
//
// Llama-3.2's is the same without built-in tools; the two differ in the
// date of the system block when the caller gives none (date_string):
// Llama-3.1's is its default, Llama-3.2's the clock's (strftime_now).
absl::StatusOr<std::string> RenderLlama3x(ChatFormat format, absl::Span<const ChatMessage> m, bool gen,
                                          const ChatRenderOptions& o) {
  constexpr absl::string_view kDefaultDate = "26 Jul 2024";
  std::string date(kDefaultDate);
  if (o.date_string.has_value()) {
    date = *o.date_string;
  } else if (format == ChatFormat::kLlama32 && !o.today.empty()) {
    date = o.today;
  }
  std::vector<nlohmann::ordered_json> tools;
  for (size_t t = 0; t < o.tools.size(); ++t) {
    nlohmann::ordered_json tool = nlohmann::ordered_json::parse(o.tools[t], nullptr, /*allow_exceptions=*/false);
    if (tool.is_discarded()) return absl::InvalidArgumentError(absl::StrCat("tools[", t, "]: not valid JSON"));
    tools.push_back(std::move(tool));
  }
  // The system block always comes, dated as the template's default; a
  // first system message's text (trimmed) goes at its end.
  size_t next = 0;
  std::string system;
  if (m[0].role == "system") {
    system = PyStrip(m[0].content);
    next = 1;
  }
  std::string out = o.bos_token;
  absl::StrAppend(&out, "<|start_header_id|>system<|end_header_id|>\n\n", tools.empty() ? "" : "Environment: ipython\n",
                  "Cutting Knowledge Date: December 2023\nToday Date: ", date, "\n\n", system, "<|eot_id|>");
  if (!tools.empty()) {
    // The first message after the system one, whatever its role, carries
    // the tools.
    if (next >= m.size()) {
      return Refusal(next, "Cannot put tools in the first user message when there's no first user message!", format);
    }
    absl::StrAppend(&out, "<|start_header_id|>user<|end_header_id|>\n\n",
                    "Given the following functions, please respond with a JSON for a function call with its proper "
                    "arguments that best answers the given prompt.\n\n",
                    "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and "
                    "its value}.Do not use variables.\n\n");
    for (const nlohmann::ordered_json& tool : tools) absl::StrAppend(&out, PythonJsonDumps(tool, 4), "\n\n");
    absl::StrAppend(&out, PyStrip(m[next].content), "<|eot_id|>");
    ++next;
  }
  for (size_t i = next; i < m.size(); ++i) {
    const ChatMessage& msg = m[i];
    if (!msg.tool_calls.empty()) {
      if (msg.tool_calls.size() != 1) return Refusal(i, "This model only supports single tool-calls at once!", format);
      const ChatToolCall& call = msg.tool_calls[0];
      nlohmann::ordered_json arguments = nlohmann::ordered_json::parse(call.arguments, nullptr, false);
      if (arguments.is_discarded()) {
        return absl::InvalidArgumentError(
            absl::StrCat("messages[", i, "].tool_calls[0].function.arguments: not valid JSON"));
      }
      absl::StrAppend(&out, "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"", call.name,
                      "\", \"parameters\": ", PythonJsonDumps(arguments), "}<|eot_id|>");
    } else if (msg.role == "tool" || msg.role == "ipython") {
      absl::StrAppend(&out, "<|start_header_id|>ipython<|end_header_id|>\n\n",
                      PythonJsonDumps(nlohmann::ordered_json(msg.content)), "<|eot_id|>");
    } else {
      absl::StrAppend(&out, "<|start_header_id|>", msg.role, "<|end_header_id|>\n\n", PyStrip(msg.content),
                      "<|eot_id|>");
    }
  }
  if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

absl::StatusOr<std::string> Render(ChatFormat format, absl::Span<const ChatMessage> m, bool gen,
                                   const ChatRenderOptions& o) {
  if (!ChatFormatHasTools(format)) {
    if (!o.tools.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tools: the ", ChatFormatName(format),
                       " chat template does not show tools (llama3.1's, llama3.2's, qwen2.5's and qwen3's do)"));
    }
    for (size_t i = 0; i < m.size(); ++i) {
      if (!m[i].tool_calls.empty()) return Refusal(i, "the template has no tool calls", format);
    }
  }
  std::string out;
  switch (format) {
    case ChatFormat::kChatMl:
      for (const ChatMessage& msg : m) absl::StrAppend(&out, "<|im_start|>", msg.role, "\n", msg.content, "<|im_end|>\n");
      if (gen) out += "<|im_start|>assistant\n";
      return out;
    case ChatFormat::kLlama2: {
      const bool system = m[0].role == "system";
      const size_t first = system ? 1 : 0;
      if (absl::Status s = CheckAlternation(m, first, format); !s.ok()) return s;
      for (size_t i = first; i < m.size(); ++i) {
        std::string content = m[i].content;
        if (i == first && system) content = absl::StrCat("<<SYS>>\n", m[0].content, "\n<</SYS>>\n\n", content);
        if (m[i].role == "user") {
          absl::StrAppend(&out, o.bos_token, "[INST] ", PyStrip(content), " [/INST]");
        } else if (m[i].role == "assistant") {
          absl::StrAppend(&out, " ", PyStrip(content), " ", o.eos_token);
        }
      }
      return out;  // the template has no generation prompt: [/INST] is it
    }
    case ChatFormat::kLlama3:
      for (size_t i = 0; i < m.size(); ++i) {
        if (i == 0) out += o.bos_token;
        absl::StrAppend(&out, "<|start_header_id|>", m[i].role, "<|end_header_id|>\n\n", PyStrip(m[i].content),
                        "<|eot_id|>");
      }
      if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    case ChatFormat::kZephyr:
      for (const ChatMessage& msg : m) {
        if (msg.role == "user" || msg.role == "system" || msg.role == "assistant") {
          absl::StrAppend(&out, "<|", msg.role, "|>\n", msg.content, o.eos_token, "\n");
        }
      }
      if (gen) out += "<|assistant|>\n";  // inside the loop, at loop.last
      return out;
    case ChatFormat::kGemma: {
      out += o.bos_token;
      if (m[0].role == "system") return Refusal(0, "System role not supported", format);
      if (absl::Status s = CheckAlternation(m, 0, format); !s.ok()) return s;
      for (const ChatMessage& msg : m) {
        absl::StrAppend(&out, "<start_of_turn>", msg.role == "assistant" ? "model" : msg.role, "\n",
                        PyStrip(msg.content), "<end_of_turn>\n");
      }
      if (gen) out += "<start_of_turn>model\n";
      return out;
    }
    case ChatFormat::kGemma3: {
      // The system message is not a turn: its text (untrimmed) and a blank
      // line open the first turn after it (a user's: turns alternate from there).
      out += o.bos_token;
      const bool system = m[0].role == "system";
      const size_t first = system ? 1 : 0;
      if (absl::Status s = CheckAlternation(m, first, format); !s.ok()) return s;
      for (size_t i = first; i < m.size(); ++i) {
        absl::StrAppend(&out, "<start_of_turn>", m[i].role == "assistant" ? "model" : m[i].role, "\n",
                        i == first && system ? absl::StrCat(m[0].content, "\n\n") : "", PyStrip(m[i].content),
                        "<end_of_turn>\n");
      }
      if (gen) out += "<start_of_turn>model\n";
      return out;
    }
    case ChatFormat::kMistral:
      out += o.bos_token;
      for (size_t i = 0; i < m.size(); ++i) {
        if ((m[i].role == "user") != (i % 2 == 0)) return Refusal(i, kAlternate, format);
        if (m[i].role == "user") {
          absl::StrAppend(&out, "[INST] ", m[i].content, " [/INST]");
        } else if (m[i].role == "assistant") {
          absl::StrAppend(&out, m[i].content, o.eos_token);
        } else {
          return Refusal(i, "Only user and assistant roles are supported!", format);
        }
      }
      return out;  // no generation prompt: [/INST] is it
    case ChatFormat::kQwen2:
      if (m[0].role != "system") out += "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n";
      for (const ChatMessage& msg : m) absl::StrAppend(&out, "<|im_start|>", msg.role, "\n", msg.content, "<|im_end|>\n");
      if (gen) out += "<|im_start|>assistant\n";
      return out;
    case ChatFormat::kLlama31:
    case ChatFormat::kLlama32: return RenderLlama3x(format, m, gen, o);
    case ChatFormat::kQwen25: return RenderQwen25(m, gen, o);
    case ChatFormat::kQwen3: return RenderQwen3(m, gen, o);
    case ChatFormat::kPhi3:
      out += o.bos_token;
      for (const ChatMessage& msg : m) absl::StrAppend(&out, "<|", msg.role, "|>\n", msg.content, "<|end|>\n");
      out += gen ? "<|assistant|>\n" : o.eos_token;
      return out;
  }
  return absl::InternalError("unknown chat format");
}

}  // namespace

absl::string_view ChatFormatName(ChatFormat format) {
  for (const FormatEntry& e : kFormats) {
    if (e.format == format) return e.name;
  }
  return "unknown";
}

bool ChatFormatHasTools(ChatFormat format) {
  return format == ChatFormat::kLlama31 || format == ChatFormat::kLlama32 || format == ChatFormat::kQwen25 ||
         format == ChatFormat::kQwen3;
}

absl::string_view ChatEndOfTurn(ChatFormat format) {
  switch (format) {
    case ChatFormat::kChatMl:
    case ChatFormat::kQwen2:
    case ChatFormat::kQwen25:
    case ChatFormat::kQwen3: return "<|im_end|>";
    case ChatFormat::kLlama3:
    case ChatFormat::kLlama31:
    case ChatFormat::kLlama32: return "<|eot_id|>";
    case ChatFormat::kGemma:
    case ChatFormat::kGemma3: return "<end_of_turn>";
    case ChatFormat::kPhi3: return "<|end|>";
    default: return "";
  }
}

std::vector<absl::string_view> ChatMarkerTokens(ChatFormat format) {
  switch (format) {
    case ChatFormat::kChatMl:
    case ChatFormat::kQwen2:
    case ChatFormat::kQwen25:
    case ChatFormat::kQwen3: return {"<|im_start|>", "<|im_end|>"};
    case ChatFormat::kLlama3:
    case ChatFormat::kLlama31:
    case ChatFormat::kLlama32: return {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
    case ChatFormat::kGemma:
    case ChatFormat::kGemma3: return {"<start_of_turn>", "<end_of_turn>"};
    case ChatFormat::kPhi3: return {"<|user|>", "<|assistant|>", "<|end|>"};
    default: return {};
  }
}

std::string ChatFormatNames() {
  std::vector<absl::string_view> names;
  for (const FormatEntry& e : kFormats) names.push_back(e.name);
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<ChatFormat> ChatFormatFromName(absl::string_view name) {
  for (const FormatEntry& e : kFormats) {
    if (e.name == name) return e.format;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("chat template '", name, "' is not one of: ", ChatFormatNames()));
}

std::optional<ChatFormat> KnownChatTemplate(absl::string_view jinja) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(jinja);
  for (const FormatEntry& e : kFormats) {
    if (e.jinja == trimmed) return e.format;
  }
  return std::nullopt;
}

absl::StatusOr<std::string> RenderChat(ChatFormat format, absl::Span<const ChatMessage> messages,
                                       const ChatRenderOptions& options) {
  if (messages.empty()) return absl::InvalidArgumentError("messages: the conversation is empty");
  if (!options.continue_final_message) return Render(format, messages, options.add_generation_prompt, options);
  if (options.add_generation_prompt) {
    return absl::InvalidArgumentError(
        "continue_final_message and add_generation_prompt: not both (one continues the last message, the other "
        "starts a new one)");
  }
  if (!messages.back().tool_calls.empty() || messages.back().role == "tool") {
    return absl::InvalidArgumentError(absl::StrCat("continue_final_message: the last message (messages[",
                                                   messages.size() - 1, "]) is a tool call or result, not text"));
  }
  // As transformers: mark the end of the last message, render, and cut at the
  // mark; where the template stripped the message (the mark's trailing space
  // is gone), the text before the mark loses its trailing space too.
  static constexpr absl::string_view kTag = "CONTINUE_FINAL_MESSAGE_TAG ";
  std::vector<ChatMessage> tagged(messages.begin(), messages.end());
  absl::StrAppend(&tagged.back().content, kTag);
  absl::StatusOr<std::string> rendered = Render(format, tagged, false, options);
  if (!rendered.ok()) return rendered.status();
  const absl::string_view bare = kTag.substr(0, kTag.size() - 1);
  const size_t at = absl::string_view(*rendered).rfind(bare);
  // Also as transformers: the message's text, stripped, must be in the
  // prompt (a template that rewrites it, as qwen3 does a <think> block,
  // would have the model continue something else).
  if (at == std::string::npos || rendered->find(PyStrip(messages.back().content)) == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("continue_final_message: the ", ChatFormatName(format),
                                                   " chat template does not show the final message's content"));
  }
  const bool spacing_kept = absl::string_view(*rendered).substr(at, kTag.size()) == kTag;
  std::string out = rendered->substr(0, at);
  return spacing_kept ? out : PyStrip(out, /*left=*/false);
}

}  // namespace attnserve
