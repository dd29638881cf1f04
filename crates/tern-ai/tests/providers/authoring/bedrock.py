"""Cases for the `bedrock-converse-stream` API (Amazon Bedrock's ConverseStream):

    python3 crates/tern-ai/tests/providers/authoring/bedrock.py

writes streams/bedrock-converse-stream/*.json next to this folder; their expected outputs come
from the reference runner (tests/providers/reference/run.mjs), never from tern. The body is the
AWS event-stream framing: each chunk is one message the runner and the Rust replay server
encode (`{"event": TYPE, "payload": ...}`, `{"exception": ...}`, `{"error": CODE, ...}`, with
`badCrc` / `truncate` to corrupt one).
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
API = "bedrock-converse-stream"
T0 = 1767225600000

CLAUDE = {"id": "apac.anthropic.claude-sonnet-4-20250514-v1:0", "name": "Claude Sonnet 4 (APAC)",
          "api": API, "provider": "amazon-bedrock", "baseUrl": "{{origin}}", "reasoning": True,
          "input": ["text", "image"], "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
          "contextWindow": 200000, "maxTokens": 64000}
NOVA = {"id": "amazon.nova-pro-v1:0", "name": "Nova Pro", "api": API, "provider": "amazon-bedrock",
        "baseUrl": "{{origin}}", "reasoning": False, "input": ["text", "image"],
        "cost": {"input": 0.8, "output": 3.2, "cacheRead": 0.2, "cacheWrite": 0},
        "contextWindow": 300000, "maxTokens": 10000}

OPUS_46 = {"id": "anthropic.claude-opus-4-6-v1", "name": "Claude Opus 4.6", "api": API, "provider": "amazon-bedrock",
           "baseUrl": "{{origin}}", "reasoning": True, "input": ["text", "image"],
           "cost": {"input": 5.5, "output": 27.5, "cacheRead": 0.55, "cacheWrite": 6.875},
           "contextWindow": 1000000, "maxTokens": 128000, "compat": {"supportsStrictMode": True},
           "thinkingLevelMap": {"max": "max"}}
GPT = {"id": "global.openai.gpt-5.6-luna", "name": "GPT-5.6 Luna (Global)", "api": API, "provider": "amazon-bedrock",
       "baseUrl": "{{origin}}", "reasoning": True, "input": ["text", "image"],
       "cost": {"input": 0.2, "output": 1.2, "cacheRead": 0.02, "cacheWrite": 0.25},
       "contextWindow": 1050000, "maxTokens": 128000, "compat": {"supportsStrictMode": True},
       "thinkingLevelMap": {"xhigh": "xhigh"}}
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

WEATHER = {"name": "get_weather", "description": "Get the current weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def user(text, ts=0):
    return {"role": "user", "content": text, "timestamp": T0 + ts}


def request(model=CLAUDE, messages=None, tools=None, options=None, system="You are terse."):
    ctx = {"messages": messages or [user("Say hello.")]}
    if system is not None:
        ctx["systemPrompt"] = system
    if tools:
        ctx["tools"] = tools
    return {"model": model, "context": ctx, "options": options or {}}


def ev(kind, payload):
    return {"event": kind, "payload": payload}


START = ev("messageStart", {"role": "assistant"})


def text(i, t):
    return ev("contentBlockDelta", {"contentBlockIndex": i, "delta": {"text": t}})


def stop_block(i):
    return ev("contentBlockStop", {"contentBlockIndex": i})


def stop(reason):
    return ev("messageStop", {"stopReason": reason})


def meta(inp=12, out=5, cache_read=0, cache_write=0):
    usage = {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out + cache_read + cache_write}
    if cache_read:
        usage["cacheReadInputTokens"] = cache_read
    if cache_write:
        usage["cacheWriteInputTokens"] = cache_write
    return ev("metadata", {"usage": usage, "metrics": {"latencyMs": 321}})


def stream(chunks, status=200):
    return {"status": status, "headers": {"content-type": "application/vnd.amazon.eventstream",
                                          "x-amzn-requestid": "req-0001"}, "chunks": chunks}


def error_response(status, error_type, body):
    return {"status": status, "headers": {"content-type": "application/json", "x-amzn-errortype": error_type,
                                          "x-amzn-requestid": "req-err-1"}, "chunks": [json.dumps(body)]}


HELLO = [START, text(0, "Hello"), text(0, " there."), stop_block(0), stop("end_turn"), meta()]

CASES = {
    "text-basic": ("A text block in two deltas, end_turn, usage.", ["text", "usage"], request(), stream(HELLO)),
    "message-start-twice": ("messageStart again after the first text delta: a second start event, the block "
                            "goes on.", ["start", "text"], request(),
                            stream([START, text(0, "Hello"), START, text(0, " there."), stop_block(0),
                                    stop("end_turn"), meta()])),
    "text-nova-options": ("A non-Claude model: no cache points, no default maxTokens; temperature and maxTokens "
                          "options; stop_sequence.", ["request", "stop-reason"],
                          request(NOVA, system=None, options={"temperature": 0.5, "maxTokens": 300}),
                          stream([START, text(0, "Hi."), stop_block(0), stop("stop_sequence"), meta(4, 2)])),
    "env-scoped-bearer-token": ("The env option's AWS_BEARER_TOKEN_BEDROCK is the Authorization header when the "
                                "apiKey option is empty; its AWS_REGION moves nothing on a custom endpoint.",
                                ["request"],
                                request(NOVA, system=None, options={"apiKey": "", "env": {
                                    "AWS_BEARER_TOKEN_BEDROCK": "scoped-bedrock-token", "AWS_REGION": "eu-west-1"}}),
                                stream([START, text(0, "Hi."), stop_block(0), stop("end_turn"), meta(4, 2)])),
    "usage-cache": ("Cache read and write tokens priced; cacheRetention long puts 1h cache points.",
                    ["usage", "cost", "request"], request(options={"cacheRetention": "long"}),
                    stream([START, text(0, "Cached."), stop_block(0), stop("end_turn"),
                            meta(100, 20, cache_read=1000, cache_write=500)])),
    "cache-none": ("cacheRetention none: no cache points.", ["request"],
                   request(options={"cacheRetention": "none"}), stream(HELLO)),
    "thinking-signature": ("Reasoning text, its signature in two parts, then a text block.",
                           ["thinking", "request"], request(options={"reasoning": "medium"}),
                           stream([START,
                                   ev("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Let me think"}}}),
                                   ev("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": " briefly."}}}),
                                   ev("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig-A"}}}),
                                   ev("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig-B"}}}),
                                   stop_block(0), text(1, "Done."), stop_block(1), stop("end_turn"), meta(30, 40)])),
    "thinking-redacted": ("Redacted reasoning: the placeholder once, the payload base64 in the signature.",
                          ["thinking"], request(options={"reasoning": "low"}),
                          stream([START,
                                  ev("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": "AAEC"}}}),
                                  ev("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": "/w=="}}}),
                                  ev("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "ignored"}}}),
                                  stop_block(0), text(1, "Ok."), stop_block(1), stop("end_turn"), meta()])),
    "tool-call": ("A tool call with its input streamed as JSON text; tool_use.", ["tool-call", "request"],
                  request(tools=[WEATHER], messages=[user("Weather in Paris?")], options={"toolChoice": "auto"}),
                  stream([START,
                          ev("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tooluse_abc", "name": "get_weather"}}}),
                          ev("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{\"ci"}}}),
                          ev("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "ty\": \"Paris\"}"}}}),
                          stop_block(0), stop("tool_use"), meta(50, 10)])),
    "several-blocks": ("Text, then two tool calls, one with no input delta.", ["tool-call", "text"],
                       request(tools=[WEATHER], options={"toolChoice": "any"}),
                       stream([START, text(0, "Checking both."), stop_block(0),
                               ev("contentBlockStart", {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1", "name": "get_weather"}}}),
                               ev("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"city\":\"Rome\"}"}}}),
                               stop_block(1),
                               ev("contentBlockStart", {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "t2", "name": "get_weather"}}}),
                               stop_block(2), stop("tool_use"), meta()])),
    "history-tools": ("A transcript with an assistant tool call, its results (one an error) and thinking "
                      "with and without a signature.", ["request"],
                      request(tools=[WEATHER], options={"toolChoice": {"type": "tool", "name": "get_weather"}}, messages=[
                          user("Weather in Oslo and Bergen?"),
                          {"role": "assistant", "api": API, "provider": "amazon-bedrock", "model": CLAUDE["id"],
                           "content": [{"type": "thinking", "thinking": "Two cities.", "thinkingSignature": "sig-1"},
                                       {"type": "thinking", "thinking": "Unsigned.", "thinkingSignature": ""},
                                       {"type": "text", "text": "  "},
                                       {"type": "toolCall", "id": "call|1", "name": "get_weather", "arguments": {"city": "Oslo"}},
                                       {"type": "toolCall", "id": "call2", "name": "get_weather", "arguments": {"city": "Bergen", "": 1}}],
                           "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                                     "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                           "stopReason": "toolUse", "timestamp": T0 + 1},
                          {"role": "toolResult", "toolCallId": "call|1", "toolName": "get_weather",
                           "content": [{"type": "text", "text": "-3C"}], "isError": False, "timestamp": T0 + 2},
                          {"role": "toolResult", "toolCallId": "call2", "toolName": "get_weather",
                           "content": [{"type": "text", "text": ""}], "isError": True, "timestamp": T0 + 3},
                      ]), stream(HELLO)),
    "error-result-images": ("Claude takes no image inside an error tool result: a placeholder stands there and "
                            "the images follow all of the turn's results with a caption; a success keeps its image, "
                            "and Nova keeps them in place.", ["request"],
                            request(tools=[WEATHER], messages=[
                                user("Show the radar for Oslo and Bergen."),
                                {"role": "assistant", "api": API, "provider": "amazon-bedrock", "model": CLAUDE["id"],
                                 "content": [{"type": "toolCall", "id": "c1", "name": "get_weather", "arguments": {"city": "Oslo"}},
                                             {"type": "toolCall", "id": "c2", "name": "get_weather", "arguments": {"city": "Bergen"}}],
                                 "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                                           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                                 "stopReason": "toolUse", "timestamp": T0 + 1},
                                {"role": "toolResult", "toolCallId": "c1", "toolName": "get_weather",
                                 "content": [{"type": "text", "text": "radar failed"},
                                             {"type": "image", "mimeType": "image/png", "data": PIXEL},
                                             {"type": "image", "mimeType": "image/png", "data": PIXEL},
                                             {"type": "text", "text": "see above"}],
                                 "isError": True, "timestamp": T0 + 2},
                                {"role": "toolResult", "toolCallId": "c2", "toolName": "get_weather",
                                 "content": [{"type": "image", "mimeType": "image/png", "data": PIXEL}],
                                 "isError": False, "timestamp": T0 + 3},
                            ]), stream(HELLO)),
    "thinking-adaptive": ("Adaptive thinking on Claude Opus 4.6: effort, no budget, no beta.", ["thinking", "request"],
                          request(OPUS_46, options={"reasoning": "high"}), stream(HELLO)),
    "reasoning-gpt-history": ("A GPT model: reasoning.effort; its earlier reasoning replayed without a signature, "
                              "redacted reasoning as redactedContent.", ["thinking", "request"],
                              request(GPT, options={"reasoning": "minimal"}, messages=[
                                  user("First?"),
                                  {"role": "assistant", "api": API, "provider": "amazon-bedrock", "model": GPT["id"],
                                   "content": [{"type": "thinking", "thinking": "Plain thought.", "thinkingSignature": "x"},
                                               {"type": "thinking", "thinking": "[Reasoning redacted]",
                                                "thinkingSignature": "AAEC", "redacted": True},
                                               {"type": "text", "text": "One."}],
                                   "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                                             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                                   "stopReason": "stop", "timestamp": T0 + 1},
                                  user("Second?", 2)]),
                              stream([START, text(0, "Two."), stop_block(0), stop("end_turn"), meta()])),
    "image-input": ("A user image and text on Nova, the image as bytes with its format.", ["request"],
                    request(NOVA, messages=[{"role": "user", "content": [
                        {"type": "text", "text": "What is this?"},
                        {"type": "image", "mimeType": "image/png", "data": PIXEL}], "timestamp": T0}]),
                    stream([START, text(0, "A pixel."), stop_block(0), stop("end_turn"), meta()])),
    "exception-unknown-type": ("An exception type the SDK does not model: its payload is the message.",
                               ["exception", "error"], request(),
                               stream([START, {"exception": "accessDeniedException", "payload": {"message": "No access"}}])),
    "stop-max-tokens": ("max_tokens is length.", ["stop-reason"], request(),
                        stream([START, text(0, "Cut"), stop("max_tokens"), meta()])),
    "stop-context-window": ("model_context_window_exceeded is length.", ["stop-reason"], request(),
                            stream([START, text(0, "Cut"), stop_block(0), stop("model_context_window_exceeded"), meta()])),
    "stop-guardrail": ("guardrail_intervened is an error with the reason.", ["stop-reason", "error"], request(),
                       stream([START, text(0, "No"), stop_block(0), stop("guardrail_intervened"), meta()])),
    "stop-content-filtered": ("content_filtered is an error with the reason.", ["stop-reason", "error"], request(),
                              stream([START, stop("content_filtered")])),
    "no-stop-reason": ("The stream ends without messageStop.", ["error"], request(),
                       stream([START, text(0, "Partial"), stop_block(0), meta()])),
    "exception-throttling": ("A throttlingException event mid-stream.", ["exception", "error"], request(),
                             stream([START, text(0, "Part"), {"exception": "throttlingException",
                                                              "payload": {"message": "Too many tokens, please wait."}}])),
    "exception-model-stream": ("A modelStreamErrorException event with its original status.", ["exception", "error"], request(),
                               stream([START, {"exception": "modelStreamErrorException",
                                               "payload": {"message": "Model failed.", "originalStatusCode": 424,
                                                           "originalMessage": "upstream"}}])),
    "exception-validation-overflow": ("A validationException about input length: an overflow.",
                                      ["exception", "overflow"], request(),
                                      stream([START, {"exception": "validationException",
                                                      "payload": {"message": "Input is too long for requested model."}}])),
    "error-frame": ("An unmodeled error message (message-type error).", ["exception", "error"], request(),
                    stream([START, text(0, "x"), {"error": "InternalFailure", "message": "Something broke"}])),
    "unknown-event": ("An event type the SDK does not model is skipped.", ["text"], request(),
                      stream([START, ev("futureEvent", {"x": 1}), text(0, "Still here."), stop_block(0), stop("end_turn"), meta()])),
    "http-403": ("403 with an error type header and a JSON message.", ["http-error"], request(),
                 error_response(403, "UnrecognizedClientException:http://internal.amazon.com/coral/com.amazon.coral.service/",
                                {"message": "The security token included in the request is invalid."})),
    "http-429": ("429 ThrottlingException (no retries).", ["http-error"], request(options={"maxRetries": 0}),
                 error_response(429, "ThrottlingException", {"message": "Too many requests, please wait before trying again."})),
    "http-500": ("500 InternalServerException (no retries).", ["http-error"], request(options={"maxRetries": 0}),
                 error_response(500, "InternalServerException", {"Message": "Internal failure."})),
    "http-400-overflow": ("400 ValidationException about input length, the type in the body: an overflow.",
                          ["http-error", "overflow"], request(),
                          {"status": 400, "headers": {"content-type": "application/json", "x-amzn-requestid": "req-err-2"},
                           "chunks": [json.dumps({"__type": "com.amazon.bedrock#ValidationException",
                                                  "message": "Input is too long for requested model."})]}),
    "truncated": ("The body ends inside a message.", ["framing", "error"], request(),
                  stream([START, text(0, "Hel"), dict(text(0, "lo"), truncate=20)])),
    "bad-crc": ("A message whose checksum is wrong.", ["framing", "error"], request(),
                stream([START, text(0, "Hel"), dict(text(0, "lo"), badCrc="message")])),
    "bad-prelude-crc": ("A message whose prelude checksum is wrong.", ["framing", "error"], request(),
                        stream([START, dict(text(0, "lo"), badCrc="prelude")])),
}


def main():
    out_dir = os.path.join(ROOT, "streams", API)
    os.makedirs(out_dir, exist_ok=True)
    for name, (description, covers, req, response) in CASES.items():
        case = {"id": f"{API}/{name}", "api": API, "description": description, "covers": covers,
                "request": req, "response": response}
        with open(os.path.join(out_dir, f"{name}.json"), "w", encoding="utf-8") as f:
            json.dump(case, f, indent=2, ensure_ascii=False)
            f.write("\n")
    # The caller aborts after the first text delta (start, text_start, text_delta).
    abort = {"id": f"{API}/abort-midstream", "api": API, "description": "The caller aborts after the first text delta.",
             "covers": ["abort"], "request": request(),
             "response": dict(stream([START, text(0, "One"), text(0, " two"), text(0, " three"), stop_block(0),
                                      stop("end_turn"), meta()]), chunkDelayMs=150),
             "abortAfterEvents": 3}
    with open(os.path.join(out_dir, "abort-midstream.json"), "w", encoding="utf-8") as f:
        json.dump(abort, f, indent=2, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
