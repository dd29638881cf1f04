"""Cases for the `mistral-conversations` API (Mistral's native chat completions stream):

    python3 crates/tern-ai/tests/providers/authoring/mistral.py

writes streams/mistral-conversations/*.json next to this folder; their expected outputs come
from the reference runner (tests/providers/reference/run.mjs), never from tern.
"""
import base64
import copy
import json

import recorded
from recorded import catalog_model

API = "mistral-conversations"
T0 = 1767225600000


def j(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def data(obj):
    return f"data: {j(obj)}\n\n"


def sse(chunks, status=200):
    return {"status": status,
            "headers": {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"},
            "chunks": chunks}


WEATHER = {"name": "get_weather", "description": "Get the current weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                            "unit": {"type": "string", "enum": ["c", "f"]}},
                          "required": ["city"]}}
SEARCH = {"name": "search_docs", "description": "Full-text search over the documentation.",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}


def user(text, ts=0):
    return {"role": "user", "content": text, "timestamp": T0 + ts}


def request(mid="mistral-small-2506", messages=None, tools=None, options=None, system="You are terse."):
    ctx = {"systemPrompt": system, "messages": messages or [user("Say hello.")]}
    if tools:
        ctx["tools"] = tools
    return {"model": catalog_model("mistral", mid), "context": ctx, "options": options or {}}


def chunk(delta=None, finish=None, usage=None, cid="cmpl-m01", model_id="mistral-small-2506"):
    c = {"id": cid, "object": "chat.completion.chunk", "created": 1767225600, "model": model_id,
         "choices": [{"index": 0, "delta": delta if delta is not None else {}, "finish_reason": finish}]}
    if usage is not None:
        c["usage"] = usage
    return data(c)


def usage(prompt=30, completion=8, total=None, **extra):
    u = {"prompt_tokens": prompt, "completion_tokens": completion,
         "total_tokens": total if total is not None else prompt + completion}
    u.update(extra)
    return u


def text_stream(parts, finish="stop", u=None):
    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": p}) for p in parts]
    out.append(chunk({}, finish, u or usage()))
    out.append("data: [DONE]\n\n")
    return out


def json_response(status, body, text=None):
    raw = text if text is not None else json.dumps(body, indent=2) + "\n"
    return {"status": status, "headers": {"content-type": "application/json"}, "chunks": [raw]}


def write(name, description, req, response, covers, **extra):
    case = {"id": f"{API}/{name}", "api": API, "description": description, "covers": covers,
            "request": req, "response": response}
    case.update(extra)
    recorded.write(case)


def call(index, cid, name, args):
    fn = {"name": name, "arguments": args}
    return {"id": cid, "type": "function", "index": index, "function": fn}


def main():
    write("plain-text", "Text in pieces, usage with cost, finish_reason stop, then [DONE].",
          request(options={"temperature": 0.2, "maxTokens": 256}),
          sse(text_stream(["Hel", "lo", " there."])), ["text", "usage", "stop"])

    smile = "Smile 😀 done".encode("utf-8")
    cut = smile.index("😀".encode("utf-8")) + 2
    body = (chunk({"role": "assistant", "content": ""}) + chunk({"content": "Smile 😀 done"})).encode("utf-8")
    at = body.index("😀".encode("utf-8")) + 2
    write("utf8-midline-split", "A chunk boundary inside a data line and inside a four-byte character.",
          request(),
          sse([{"b64": base64.b64encode(body[:at]).decode()}, {"b64": base64.b64encode(body[at:]).decode()},
               chunk({}, "stop", usage()), "data: [DONE]\n\n"]), ["utf8", "framing"])
    del smile, cut

    think = [chunk({"role": "assistant", "content": ""}),
             chunk({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "The user "}]}]}),
             chunk({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "wants a greeting."},
                                                                   {"type": "text", "text": ""}]}]}),
             chunk({"content": [{"type": "text", "text": "Hello"}]}),
             chunk({"content": "!"}),
             chunk({}, "stop", usage(40, 20))]
    write("thinking-reasoning-effort",
          "Thinking chunks (a list of text parts) then text; the level is clamped through the thinking map "
          "into reasoning_effort.",
          request("mistral-medium-latest", options={"reasoning": "medium"}), sse(think + ["data: [DONE]\n\n"]),
          ["thinking", "reasoning-effort"])

    custom = catalog_model("mistral", "mistral-medium-latest")
    custom["id"] = "magistral-custom"
    del custom["thinkingLevelMap"]
    req = request(options={"reasoning": "high"})
    req["model"] = custom
    write("prompt-mode-reasoning",
          "A reasoning model without a thinking map asks for prompt_mode reasoning; thinking after text opens a "
          "new block.",
          req, sse([chunk({"content": "Answer: "}),
                    chunk({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]}]}),
                    chunk({"content": "42"}), chunk({}, "stop", usage())]), ["thinking", "prompt-mode"])

    args = '{"city": "Par' + 'is", "unit": "c"}'
    frags = ['{"city"', ': "Par', 'is", "un', 'it": "c"}']
    assert "".join(frags) == args
    tc = [chunk({"role": "assistant", "content": "Checking."})]
    tc.append(chunk({"tool_calls": [call(0, "Ab1Cd2Ef3", "get_weather", frags[0])]}))
    tc += [chunk({"tool_calls": [{"index": 0, "id": "Ab1Cd2Ef3", "function": {"name": "get_weather", "arguments": f}}]})
           for f in frags[1:]]
    tc.append(chunk({}, "tool_calls", usage(60, 15)))
    write("tool-call-fragmented", "Text, then one tool call whose arguments arrive in fragments; tool_choice auto.",
          request(tools=[WEATHER], options={"toolChoice": "auto"}), sse(tc + ["data: [DONE]\n\n"]),
          ["tool-call", "partial-json"])

    par = [chunk({"tool_calls": [call(0, "CallOne01", "get_weather", '{"city":')]}),
           chunk({"tool_calls": [call(1, "CallTwo02", "search_docs", '{"query"')]}),
           chunk({"tool_calls": [{"index": 0, "id": "CallOne01", "function": {"name": "get_weather", "arguments": '"Oslo"}'}}]}),
           chunk({"tool_calls": [{"index": 1, "id": "CallTwo02", "function": {"name": "search_docs", "arguments": ': "snow"}'}}]}),
           chunk({}, "tool_calls", usage(70, 30))]
    write("parallel-tool-calls", "Two tool calls interleaved by index, ended after the stream in order.",
          request(tools=[WEATHER, SEARCH]), sse(par + ["data: [DONE]\n\n"]), ["tool-call", "parallel"])

    odd = [chunk({"tool_calls": [{"id": "null", "index": 0, "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]}),
           chunk({"tool_calls": [{"function": {"name": "search_docs", "arguments": None}}]}),
           chunk({"tool_calls": [{"index": 12, "function": {"name": "search_docs", "arguments": '{"query":"x"'}}]}),
           chunk({}, "tool_calls", usage())]
    write("tool-call-ids-and-object-arguments",
          "Calls without a usable id get one derived from their index; object arguments are sent as JSON text; an "
          "unterminated argument text is finalized at the end.",
          request(tools=[WEATHER, SEARCH]), sse(odd + ["data: [DONE]\n\n"]), ["tool-call", "ids"])

    write("usage-cache-tokens",
          "Cached prompt tokens (prompt_tokens_details) priced as cache reads; a session id sends x-affinity and "
          "prompt_cache_key.",
          request(options={"sessionId": "sess-mistral-1"}),
          sse(text_stream(["Cached."], u=usage(1200, 10, 1210, prompt_tokens_details={"cached_tokens": 1000}))),
          ["usage", "cache", "session"])

    write("usage-num-cached-tokens-no-total",
          "Cached tokens in num_cached_tokens (above the prompt: capped); no total_tokens, so the sum is used; the "
          "usage of a later chunk replaces it; cache retention none sends no session fields.",
          request(options={"sessionId": "sess-2", "cacheRetention": "none"}),
          sse([chunk({"content": "A"}, None, {"prompt_tokens": 10, "completion_tokens": 1, "num_cached_tokens": 50}),
               chunk({"content": "B"}), chunk({}, "stop", {"prompt_tokens": 100, "completion_tokens": 2,
                                                             "num_cached_tokens": 40}),
               "data: [DONE]\n\n"]), ["usage", "cache"])

    write("stop-length", "finish_reason model_length is a length stop.", request(),
          sse(text_stream(["Cut"], finish="model_length")), ["stop-reason"])

    write("stop-error", "finish_reason error: the message is retryable wording; blocks are ended first.", request(),
          sse(text_stream(["Part"], finish="error")), ["stop-reason", "error"])

    write("stop-unknown", "An unknown finish reason fails with Provider stopped with.", request(),
          sse(text_stream(["Hm"], finish="guardrail")), ["stop-reason", "error"])

    write("error-event-midstream",
          "An error object without choices in the stream fails it; the open text block stays unfinished.", request(),
          sse([chunk({"content": "Part"}), data({"object": "error", "message": "Service unavailable", "code": 503}),
               chunk({"content": " never"}), chunk({}, "stop", usage())]), ["error", "midstream"])

    write("http-429", "HTTP 429 with a JSON body: the body text in the message, no retry, no start event.", request(),
          json_response(429, {"object": "error", "message": "Requests rate limit exceeded", "type": "rate_limited",
                               "param": None, "code": "1300"}), ["http-error", "retry"])

    write("http-500-empty-body", "HTTP 500 with an empty body: the status text is the message.", request(),
          {"status": 500, "headers": {"content-type": "text/plain"}, "chunks": []}, ["http-error"])

    write("context-overflow", "HTTP 400 with Mistral's overflow text is a context overflow.", request(),
          json_response(400, {"object": "error", "message": "Prompt contains 300000 tokens and 0 draft tokens, "
                               "too large for model with 262144 maximum context length", "type": "invalid_request_error",
                               "param": None, "code": "3051"}), ["overflow", "http-error"])

    write("abrupt-end", "The body ends after text without a finish reason or [DONE].", request(),
          sse([chunk({"content": "Half a sen"}), chunk({"content": "tence"})]), ["abrupt", "error"])

    write("done-then-junk", "[DONE] ends the stream; what follows is never read; a comment and an event line "
          "before are ignored; the last record may lack its blank line.", request(),
          sse([": keep-alive\n\n", "event: chunk\n" + chunk({"content": "Fine"}), chunk({}, "stop", usage()),
               "data: [DONE]\n\n", "data: {not json\n\n"]), ["framing"])

    write("last-record-without-blank-line", "The final record has no blank line after it: still read.", request(),
          sse([chunk({"content": "Tail"}), chunk({}, "stop", usage()).rstrip("\n")]), ["framing"])

    write("abort-midstream", "The caller aborts after the first text delta.", request(),
          {**sse([chunk({"content": "One"}), chunk({"content": " two"}), chunk({"content": " three"}),
                  chunk({}, "stop", usage())]), "chunkDelayMs": 150}, ["abort"], abortAfterEvents=3)

    img = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    history = [
        {"role": "user", "content": [{"type": "text", "text": "What does Oslo look like?"},
                                     {"type": "image", "data": img, "mimeType": "image/png"}], "timestamp": T0},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Need the weather."},
            {"type": "text", "text": "Let me look."},
            {"type": "toolCall", "id": "call_img_1|fc_0001", "name": "get_weather", "arguments": {"city": "Oslo"}},
            {"type": "toolCall", "id": "Xy9Zz8Ww7", "name": "search_docs", "arguments": {"query": "snow"}}],
         "api": "openai-responses", "provider": "openai", "model": "gpt-5",
         "usage": {"input": 50, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 70,
                   "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
         "stopReason": "toolUse", "timestamp": T0 + 1},
        {"role": "toolResult", "toolCallId": "call_img_1|fc_0001", "toolName": "get_weather",
         "content": [{"type": "text", "text": "Snowing, -3C"}, {"type": "image", "data": img, "mimeType": "image/png"}],
         "isError": False, "timestamp": T0 + 2},
        {"role": "toolResult", "toolCallId": "Xy9Zz8Ww7", "toolName": "search_docs", "content": [],
         "isError": True, "timestamp": T0 + 3},
        user("Thanks. Summarize.", 4)]
    write("multimodal-tool-history",
          "History with an image, thinking from another model, tool calls whose ids are normalized to nine "
          "characters, results with an image and an empty error result.",
          request("mistral-small-2506", messages=history, tools=[WEATHER, SEARCH]),
          sse(text_stream(["Snowy."])), ["history", "images", "tool-ids"])

    text_only = copy.deepcopy(history)
    write("text-only-model-history", "The same history for a text-only model: images are left out with notes.",
          request("codestral-2508", messages=text_only, tools=[WEATHER, SEARCH]), sse(text_stream(["Ok."])),
          ["history", "images"])


if __name__ == "__main__":
    main()
