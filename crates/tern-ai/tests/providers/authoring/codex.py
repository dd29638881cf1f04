"""Cases for the `openai-codex-responses` API (SSE transport): the recorded `openai-responses`
exchanges replayed against a Codex model with a ChatGPT token, plus Codex's own: its error
events, `response.done` with `end_turn`, usage-limit wording, a token without an account id,
a session id, effort off.

    python3 crates/tern-ai/tests/providers/authoring/codex.py

writes streams/openai-codex-responses/*.json next to this folder; their expected outputs come
from the reference runner (tests/providers/reference/run.mjs), never from tern.
"""
import base64
import copy
import json

from recorded import catalog_model, load, retarget, write

API = "openai-codex-responses"
SOURCE = "openai-responses"
REPLAYED = ["plain-text", "utf8-midline-split", "tool-call-fragmented", "parallel-tool-calls",
            "reasoning-summary-encrypted", "usage-cache-tokens", "stop-length", "stop-content-filter",
            "http-500", "abrupt-end", "context-overflow", "keepalive-unknown-events",
            "multimodal-tool-history", "abort-midstream"]


def jwt(claims):
    payload = base64.b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJub25lIn0.{payload}.sig"


TOKEN = jwt({"https://api.openai.com/auth": {"chatgpt_account_id": "acct_test_123"}})


def codex(case, name, description=None, mid="gpt-6-sol"):
    case = retarget(case, API, name, description)
    case["request"]["model"] = catalog_model("openai-codex", mid)
    case["request"]["options"] = {**case["request"].get("options", {}), "apiKey": TOKEN, "transport": "sse"}
    return case


def ev(obj):
    return f"event: {obj['type']}\ndata: {json.dumps(obj, separators=(',', ':'))}\n\n"


def sse(chunks):
    return {"status": 200, "headers": {"content-type": "text/event-stream"}, "chunks": chunks}


def main():
    for name in REPLAYED:
        write(codex(load(SOURCE, name), name))

    plain = load(SOURCE, "plain-text")
    chunks = plain["response"]["chunks"]

    c = codex(plain, "error-event", "A Codex error event fails the stream with its message.")
    c["response"] = sse(chunks[:3] + [ev({"type": "error", "code": "server_is_overloaded",
                                          "message": "Our servers are busy."})])
    write(c)

    c = codex(plain, "error-event-code-only", "An error event with only a nested code.")
    c["response"] = sse(chunks[:2] + [ev({"type": "error", "error": {"code": "context_length_exceeded"}})])
    write(c)

    c = codex(plain, "response-failed", "response.failed fails with the response's error message.")
    c["response"] = sse(chunks[:2] + [ev({"type": "response.failed", "response": {"id": "resp_x", "status": "failed",
                                                                                   "error": {"code": "server_error", "message": "The model failed."}}})])
    write(c)

    done = json.loads(chunks[-1].split("data: ", 1)[1])
    done["type"] = "response.done"
    done["response"]["end_turn"] = False
    c = codex(plain, "response-done-end-turn",
              "response.done is the terminal event; end_turn is kept; what follows is not read.")
    c["response"] = sse(chunks[:-1] + [ev(done), "data: {not json\n\n"])
    write(c)

    odd = copy.deepcopy(done)
    odd["type"] = "response.completed"
    odd["response"]["status"] = "mystery"
    c = codex(plain, "unknown-status", "An unknown status is dropped before the Responses mapper sees it.")
    c["response"] = sse(chunks[:-1] + [ev(odd)])
    write(c)

    c = codex(plain, "http-429-usage-limit", "A 429 is ChatGPT's usage limit in words, with the plan.")
    c["response"] = {"status": 429, "headers": {"content-type": "application/json"},
                     "chunks": [json.dumps({"error": {"type": "usage_limit_reached", "plan_type": "PLUS",
                                                      "message": "The usage limit has been reached"}})]}
    write(c)

    c = codex(plain, "http-400-message", "Another HTTP error is its error message.")
    c["response"] = {"status": 400, "headers": {"content-type": "application/json"},
                     "chunks": [json.dumps({"error": {"type": "invalid_request_error", "message": "Bad input item."}})]}
    write(c)

    c = codex(plain, "token-without-account", "A token without the account claim fails before any request.")
    c["request"]["options"]["apiKey"] = jwt({"sub": "x"})
    write(c)

    c = codex(plain, "session-and-effort",
              "A session id becomes prompt_cache_key and session headers; a level goes in a configuration_update "
              "item with effort medium in the request.")
    c["request"]["options"].update({"sessionId": "codex-session-1", "reasoning": "high"})
    write(c)

    c = codex(plain, "no-mid-conversation-effort",
              "A model without mid-conversation effort sends the level as reasoning.effort.", mid="gpt-5.6-sol")
    c["request"]["options"].update({"reasoning": "minimal"})
    write(c)

    tools = load(SOURCE, "tool-call-fragmented")["request"]["context"]["tools"]
    search = {"name": "search_docs", "description": "Search the docs.",
              "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
    c = codex(plain, "tool-changes-mid-conversation",
              "Tools declared in additional_tools items: the first set at the head, a later system message adds "
              "one (after the incremental notice) and removes another (announced as text).")
    c["request"]["context"] = {
        "systemPrompt": "You can write files.", "tools": tools,
        "messages": [
            {"role": "user", "content": "Hi", "timestamp": 1767225600000},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello."}], "api": API,
             "provider": "openai-codex", "model": "gpt-6-sol", "providerThinkingLevel": "low",
             "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                       "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
             "stopReason": "stop", "timestamp": 1767225601000},
            {"role": "system", "content": "Searching is allowed now.", "toolsAdded": [search],
             "toolsRemoved": [{"name": "write_file"}], "timestamp": 1767225602000},
            {"role": "user", "content": "Search for snow.", "timestamp": 1767225603000}]}
    write(c)


if __name__ == "__main__":
    main()
