"""Cases for Claude's strict-tool limits on anthropic-messages and bedrock-converse-stream: a
request whose `prefer` strict tools the provider rejects with one of Claude's limit messages is
sent again without them (`require` tools stay strict), with a `*_strict_tools_fallback`
diagnostic; with a session, the session's later requests send them non-strict at once.

The cases use two project extensions of the runner: `responses` (one per request) and
`calls: N` (the same request streamed N times in one process; later calls in `laterCalls`).

    python3 crates/tern-ai/tests/providers/authoring/strict_limits.py

writes streams/<api>/strict-limit-*.json; their expected outputs come from the reference runner
(tests/providers/reference/run.mjs), never from tern.
"""
import json

from recorded import load, retarget, write

PREFER = {"type": "json_schema", "strict": "prefer"}
REQUIRE = {"type": "json_schema", "strict": "require"}
READ = {"name": "read", "description": "Read a file.", "constrainedSampling": PREFER,
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "offset": {"type": "number"}},
                       "required": ["path"]}}
WRITE = {"name": "write", "description": "Write a file.", "constrainedSampling": REQUIRE,
         "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                        "required": ["path", "content"]}}
PLAIN = {"name": "ls", "description": "List a folder.",
         "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}

TOO_MANY = "Too many strict tools (21). The maximum number of strict tools is 20."
UNIONS = "Schemas contains too many parameters with union types (17). The maximum is 16."


def anthropic_error(message, kind="invalid_request_error", status=400):
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return {"status": status, "headers": {"content-type": "application/json", "request-id": "req_strict_1"},
            "chunks": [json.dumps(body)]}


def bedrock_error(message, code="ValidationException", status=400):
    return {"status": status, "headers": {"content-type": "application/json", "x-amzn-errortype": code,
                                          "x-amzn-requestid": "req-strict-1"},
            "chunks": [json.dumps({"message": message})]}


def case(api, source, name, description, tools, responses, session=None, calls=None, compat=None):
    c = retarget(load(api, source), api, name, description)
    ok = c.pop("response")
    model = c["request"]["model"]
    model["compat"] = {**model.get("compat", {}), **(compat or {})}
    c["request"]["context"]["tools"] = tools
    if session is not None:
        c["request"].setdefault("options", {})["sessionId"] = session
    c["responses"] = [ok if r == "ok" else r for r in responses]
    if calls is not None:
        c["calls"] = calls
    write(c)


def main():
    a, b = "anthropic-messages", "bedrock-converse-stream"
    strict_a = {"supportsStrictTools": True}
    strict_b = {"supportsStrictMode": True}
    case(a, "plain-text", "strict-limit-retry",
         "Claude rejects the strict tools (too many): the request goes again with the prefer tool non-strict "
         "(the require tool stays strict) and a fallback diagnostic; the session's next request sends it "
         "non-strict at once.",
         [READ, WRITE, PLAIN], [anthropic_error(TOO_MANY), "ok", "ok"], session="strict-session-a", calls=2,
         compat=strict_a)
    case(a, "plain-text", "strict-limit-retry-without-session",
         "Without a session nothing is remembered: every request is rejected once, then sent without "
         "prefer strict tools.",
         [READ, PLAIN], [anthropic_error(UNIONS), "ok", anthropic_error(UNIONS), "ok"], calls=2, compat=strict_a)
    case(a, "plain-text", "strict-limit-other-error",
         "A 400 that is not about strict-tool limits fails the request; no retry.",
         [READ, PLAIN], [anthropic_error("prompt is too long: 300000 tokens > 200000 maximum"), "ok"],
         session="strict-session-b", compat=strict_a)
    case(a, "plain-text", "strict-limit-require-only",
         "A limit rejection of a request without prefer strict tools (only require tools) fails it; no retry.",
         [WRITE, PLAIN], [anthropic_error(TOO_MANY), "ok"], session="strict-session-c", compat=strict_a)
    case(a, "plain-text", "strict-limit-wrong-type",
         "A limit message in an error that is not an invalid_request_error fails the request; no retry.",
         [READ], [anthropic_error(TOO_MANY, kind="api_error"), "ok"], session="strict-session-d", compat=strict_a)
    case(b, "text-basic", "strict-limit-retry",
         "Bedrock's ValidationException with Claude's limit message: the request goes again without prefer "
         "strict tools, with a fallback diagnostic; the session's next request sends them non-strict at once.",
         [READ, WRITE, PLAIN], [bedrock_error(UNIONS), "ok", "ok"], session="strict-session-e", calls=2,
         compat=strict_b)
    case(b, "text-basic", "strict-limit-other-error",
         "A ValidationException that is not about strict-tool limits fails the request; no retry.",
         [READ, PLAIN], [bedrock_error("Malformed input request"), "ok"], session="strict-session-f",
         compat=strict_b)
    case(b, "text-basic", "strict-limit-wrong-code",
         "Claude's limit message under another error code fails the request; no retry.",
         [READ, PLAIN], [bedrock_error(TOO_MANY, code="AccessDeniedException", status=403), "ok"],
         session="strict-session-g", compat=strict_b)


if __name__ == "__main__":
    main()
