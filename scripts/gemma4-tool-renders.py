#!/usr/bin/env python3
"""Writes runtime/chat/testdata/gemma4_tool_renders.json: conversations with
tools rendered by Gemma 4's own chat template
(runtime/chat/testdata/templates/gemma4.jinja, google/gemma-4-31B-it as
llama.cpp ships it in models/templates) with Python's jinja2 configured as
transformers does (trim_blocks, lstrip_blocks), bos "<bos>".

One adjustment is llama.cpp's (common/chat.cpp, the gemma4 format): when the
generation prompt is asked for and the rendered prompt ends with "<turn|>\n"
(the template opens no model turn after a tool turn that has content), it
appends "<|turn>model\n". The script applies it so the file holds what
llama.cpp gives the model.

Messages are written in Woolly's shape (runtime/chat.Message: tool_calls
[{id, name, arguments}], tool_call_id, tool_name) and converted to the
shape Hugging Face templates read. Run from the repository root:
    python3 scripts/gemma4-tool-renders.py
"""
import json
import jinja2

TEMPLATE = "runtime/chat/testdata/templates/gemma4.jinja"
OUT = "runtime/chat/testdata/gemma4_tool_renders.json"

weather = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city name."},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "description": "Days ahead.", "nullable": True},
    }, "required": ["city"]}}}
search = {"type": "function", "function": {
    "name": "search", "description": "Search the web.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"},
        "filters": {"type": "object", "description": "Filters.", "properties": {
            "site": {"type": "string"}, "recent": {"type": "boolean"}}, "required": ["site"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "points": {"type": "array", "description": "Points.", "items": {"type": "object", "properties": {
            "x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}},
    }, "required": ["query", "tags"]}}}
noparams = {"type": "function", "function": {"name": "get_time", "description": "The time now."}}
untyped = {"type": "function", "function": {"name": "ping", "description": "Ping.",
                                            "parameters": {"properties": {"host": {"type": "string"}}}}}

call_w = {"id": "call_1", "name": "get_weather", "arguments": {"unit": "celsius", "city": "Paris", "days": 2}}
call_s = {"id": "call_2", "name": "search", "arguments": {"query": "a \"quoted\" {x}", "tags": ["a", "b"],
                                                          "filters": {"site": "x.org", "recent": True}, "score": 0.5, "none": None}}

cases = [
    {"msgs": [{"role": "user", "content": "Weather in Paris?"}], "tools": [weather], "addGen": True},
    {"msgs": [{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "Hi"}],
     "tools": [weather, search, noparams, untyped], "addGen": True},
    {"msgs": [{"role": "user", "content": "Weather in Paris?"}], "tools": [weather], "addGen": True, "thinking": True},
    {"msgs": [{"role": "developer", "content": "Sys"}, {"role": "user", "content": "Weather?"}],
     "tools": [weather], "addGen": True, "thinking": False},
    # a call and its result: the model's turn stays open
    {"msgs": [{"role": "user", "content": "Weather in Paris?"},
              {"role": "assistant", "content": "", "tool_calls": [call_w]},
              {"role": "tool", "tool_call_id": "call_1", "content": "18C and sunny"}],
     "tools": [weather], "addGen": True},
    {"msgs": [{"role": "user", "content": "Weather in Paris?"},
              {"role": "assistant", "content": "", "tool_calls": [call_w]},
              {"role": "tool", "tool_call_id": "call_1", "content": "18C and sunny"}],
     "tools": [weather], "addGen": True, "thinking": True},
    # the answer after the result continues the same model turn; a later user turn
    {"msgs": [{"role": "user", "content": "Weather in Paris?"},
              {"role": "assistant", "content": "", "tool_calls": [call_w]},
              {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
              {"role": "assistant", "content": "It is 18C."},
              {"role": "user", "content": "Thanks"}],
     "tools": [weather], "addGen": True},
    # parallel calls, results matched by id and by name
    {"msgs": [{"role": "user", "content": "Both"},
              {"role": "assistant", "content": "", "tool_calls": [call_w, call_s]},
              {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
              {"role": "tool", "tool_name": "search", "content": "{\"hits\": 3}"}],
     "tools": [weather, search], "addGen": True},
    # content beside the call and a result: the template closes the turn, llama.cpp opens the next
    {"msgs": [{"role": "user", "content": "Weather?"},
              {"role": "assistant", "content": "Let me check.", "tool_calls": [call_w]},
              {"role": "tool", "tool_call_id": "call_1", "content": "18C"}],
     "tools": [weather], "addGen": True},
    # a call without its result
    {"msgs": [{"role": "user", "content": "Weather?"},
              {"role": "assistant", "content": "", "tool_calls": [call_w]}],
     "tools": [weather], "addGen": True},
    # history with calls, no tools in the request
    {"msgs": [{"role": "user", "content": "Weather?"},
              {"role": "assistant", "content": "", "tool_calls": [{"id": "c9", "name": "get_time", "arguments": {}}]},
              {"role": "tool", "tool_call_id": "c9", "content": "noon"},
              {"role": "assistant", "content": "<|channel>thought\nhm<channel|>Noon."}],
     "addGen": False},
]


def hf_message(m):
    out = {"role": m["role"], "content": m.get("content", "")}
    if m.get("tool_calls"):
        out["tool_calls"] = [{"id": c["id"], "type": "function",
                              "function": {"name": c["name"], "arguments": c["arguments"]}}
                             for c in m["tool_calls"]]
    if m.get("tool_call_id"):
        out["tool_call_id"] = m["tool_call_id"]
    if m.get("tool_name"):
        out["name"] = m["tool_name"]
    return out


def main():
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    tmpl = env.from_string(open(TEMPLATE).read())
    out = []
    for c in cases:
        kw = {"messages": [hf_message(m) for m in c["msgs"]], "add_generation_prompt": c["addGen"], "bos_token": "<bos>"}
        if c.get("tools"):
            kw["tools"] = c["tools"]
        if "thinking" in c:
            kw["enable_thinking"] = c["thinking"]
        text = tmpl.render(**kw)
        if c["addGen"] and text.endswith("<turn|>\n"):
            text += "<|turn>model\n"  # llama.cpp's adjustment (see above)
        rec = {"msgs": c["msgs"], "addGen": c["addGen"]}
        if c.get("tools"):
            rec["tools"] = c["tools"]
        if "thinking" in c:
            rec["thinking"] = c["thinking"]
        rec["want"] = text
        out.append(rec)
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
