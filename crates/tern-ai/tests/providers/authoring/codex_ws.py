"""Cases for the WebSocket transport of `openai-codex-responses`: the recorded Codex SSE
exchanges (streams/openai-codex-responses) replayed as WebSocket messages, with scripted
connections for what only the WebSocket has: a socket reused within a session with
`previous_response_id`, the connection-limit retry, the retry when the server lost the
previous response, the fallback to SSE (and the session remembering it), failures before
and after the stream started, a close with 1009, a connect timeout, an abort.

    python3 crates/tern-ai/tests/providers/authoring/codex_ws.py

writes ws/streams/openai-codex-responses/*.json next to this folder (the format is described
in reference/run_ws.mjs); their expected outputs come from the reference runner under Node 22
(`node22 reference/gen.mjs ../ws`), never from tern.
"""
import base64
import copy
import json
import os

from recorded import ROOT, load

API = "openai-codex-responses"
WS_STREAMS = os.path.join(ROOT, "ws", "streams", API)
SESSION = "ws-session-0001"


def events_of(case):
    """The JSON events of a recorded SSE case, in order."""
    body = b""
    for chunk in case["response"]["chunks"]:
        if isinstance(chunk, str):
            body += chunk.encode()
        elif "b64" in chunk:
            body += base64.b64decode(chunk["b64"])
        elif "hex" in chunk:
            body += bytes.fromhex(chunk["hex"])
        else:
            body += chunk["text"].encode()
    out = []
    for record in body.decode().replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].strip() for line in record.split("\n") if line.startswith("data:")]
        if data and "\n".join(data).strip() not in ("", "[DONE]"):
            out.append(json.loads("\n".join(data)))
    return out


def ws_case(source, name, description, options=None):
    """Case `name` with the request of Codex SSE case `source`, its SSE answer kept for a
    fallback, the transport option removed (the reference's default) unless `options` set it."""
    case = copy.deepcopy(load(API, source))
    case["id"] = f"{API}/{name}"
    case["description"] = description
    opts = {k: v for k, v in case["request"]["options"].items() if k != "transport"}
    opts.update(options or {})
    case["request"]["options"] = opts
    case.pop("covers", None)
    return case


def write(case):
    os.makedirs(WS_STREAMS, exist_ok=True)
    name = case["id"].split("/", 1)[1]
    with open(os.path.join(WS_STREAMS, f"{name}.json"), "w", encoding="utf-8") as f:
        json.dump(case, f, indent=2, ensure_ascii=False)
        f.write("\n")


def replies(*answers):
    return {"replies": list(answers)}


def response_id(events, new_id):
    """The events with the response id replaced (a second response of a session)."""
    text = json.dumps(events)
    old = next(e["response"]["id"] for e in events if "response" in e)
    return json.loads(text.replace(old, new_id))


def main():
    text = events_of(load(API, "plain-text"))
    tool = events_of(load(API, "tool-call-fragmented"))

    c = ws_case("plain-text", "ws-text",
                "Text over the WebSocket with the default transport and no session: the URL, the "
                "handshake headers (a fresh UUIDv7 request id), one response.create message.")
    c["websocket"] = [replies(text)]
    write(c)

    frag = copy.deepcopy(tool)
    # One argument delta arrives as a message split over three WebSocket frames.
    i = next(k for k, e in enumerate(frag) if e["type"] == "response.function_call_arguments.delta")
    whole = json.dumps(frag[i], separators=(",", ":"))
    frag[i] = {"$fragments": [whole[:10], whole[10:25], whole[25:]]}
    c = ws_case("tool-call-fragmented", "ws-tool-call-fragmented",
                "A tool call whose arguments arrive in many deltas (one of them in three frames), "
                "in a session whose id is longer than 64 characters: the session headers carry its "
                "first 64, toolUse.", {"sessionId": SESSION + "-" + "x" * 60})
    c["websocket"] = [replies(frag)]
    write(c)

    follow_up = [{"role": "user", "content": "And in French?", "timestamp": 1767225700000}]
    second = response_id(text, "resp_second_0002")
    c = ws_case("plain-text", "ws-session-continuation",
                "Two turns of one session with transport auto: the second reuses the socket and "
                "sends only the new input with previous_response_id.",
                {"sessionId": SESSION, "transport": "auto"})
    c["request"]["model"]["compat"]["supportsMidConvoEffort"] = False
    c["turns"] = [{"messages": follow_up}]
    c["websocket"] = [replies(text, second)]
    write(c)

    call = next(e for e in tool if e["type"] == "response.output_item.done")["item"]
    result = [{"role": "toolResult", "toolCallId": f"{call['call_id']}|{call['id']}", "toolName": call["name"],
               "content": [{"type": "text", "text": "Wrote 42 bytes."}], "isError": False,
               "timestamp": 1767225700000}]
    c = ws_case("tool-call-fragmented", "ws-continuation-after-tool-call",
                "A tool call, then its result on the same socket: the second request sends only "
                "the function_call_output with previous_response_id.",
                {"sessionId": SESSION, "transport": "websocket-cached"})
    c["request"]["model"]["compat"]["supportsMidConvoEffort"] = False
    c["turns"] = [{"messages": result}]
    c["websocket"] = [replies(tool, response_id(text, "resp_after_tool_0003"))]
    write(c)

    c = ws_case("plain-text", "ws-session-default-full-context",
                "Two turns of one session with the transport unset: the socket is reused but the "
                "second request carries the whole context.", {"sessionId": SESSION})
    c["request"]["model"]["compat"]["supportsMidConvoEffort"] = False
    c["turns"] = [{"messages": follow_up}]
    c["websocket"] = [replies(text, second)]
    write(c)

    c = ws_case("plain-text", "ws-idle-socket-closed-by-server",
                "The server closes the session's socket after the first turn: the second opens a "
                "new one with the whole context, no failure.", {"sessionId": SESSION, "transport": "auto"})
    c["request"]["model"]["compat"]["supportsMidConvoEffort"] = False
    c["turns"] = [{"messages": follow_up, "waitMs": 400}]
    c["websocket"] = [replies(text + [{"$wait": 20}, {"$close": {"code": 1000, "reason": "bye"}}]),
                      replies(second)]
    write(c)

    c = ws_case("plain-text", "ws-previous-response-not-found",
                "The server lost the previous response: the request is retried once on a new "
                "socket with the whole context.", {"sessionId": SESSION, "transport": "auto"})
    c["request"]["model"]["compat"]["supportsMidConvoEffort"] = False
    c["turns"] = [{"messages": follow_up}]
    lost = {"type": "error", "error": {"code": "previous_response_not_found",
                                       "message": "Previous response with id 'resp_68a1f0c2e4b8819aa1' not found."}}
    c["websocket"] = [replies(text, [lost]), replies(second)]
    write(c)

    c = ws_case("plain-text", "ws-upgrade-refused",
                "The upgrade is refused (403): a provider_transport_failure diagnostic, the "
                "request over SSE, and the session's next request goes straight to SSE.",
                {"sessionId": SESSION})
    c["turns"] = [{"messages": follow_up}]
    c["websocket"] = [{"refuse": 403}]
    c["responses"] = [c.pop("response")] * 2
    write(c)

    c = ws_case("plain-text", "ws-refused-no-session",
                "A refused upgrade without a session: the fallback is not remembered, so the "
                "next request tries the WebSocket again.", {"transport": "websocket"})
    c["turns"] = [{"messages": follow_up}]
    c["websocket"] = [{"refuse": 404}, replies(second)]
    write(c)

    c = ws_case("plain-text", "ws-failure-after-start",
                "The socket closes (1011) after the stream started: an error with the "
                "diagnostic, no fallback.", {"sessionId": SESSION})
    c["websocket"] = [replies(text[:4] + [{"$close": {"code": 1011, "reason": "upstream went away"}}])]
    write(c)

    c = ws_case("plain-text", "ws-dropped-after-start",
                "The TCP connection drops after the stream started: closed 1006.")
    c["websocket"] = [replies(text[:5] + [{"$terminate": True}])]
    write(c)

    limit = {"type": "error", "error": {"code": "websocket_connection_limit_reached",
                                        "message": "Too many open WebSocket connections."}}
    c = ws_case("plain-text", "ws-connection-limit-retry",
                "The connection limit is reached before the stream starts: one retry on a new "
                "socket, which answers.", {"sessionId": SESSION})
    c["websocket"] = [replies([limit]), replies(text)]
    write(c)

    c = ws_case("plain-text", "ws-connection-limit-twice",
                "The connection limit twice: the diagnostic carries the API error and the "
                "request falls back to SSE.")
    c["websocket"] = [replies([limit]), replies([limit])]
    write(c)

    c = ws_case("plain-text", "ws-close-1009",
                "The server closes with 1009 (message too big) before any event: fallback with "
                "the diagnostic's 'message too big'.")
    c["websocket"] = [replies([{"$close": {"code": 1009}}])]
    write(c)

    c = ws_case("plain-text", "ws-error-event",
                "A Codex error event before any other: the run fails with it, no fallback and no "
                "diagnostic.")
    c["websocket"] = [replies([{"type": "error", "code": "server_is_overloaded",
                                "message": "Our servers are busy."}])]
    write(c)

    c = ws_case("plain-text", "ws-connect-timeout",
                "The upgrade is never answered: the connect timeout, then SSE.",
                {"websocketConnectTimeoutMs": 1000})
    c["websocket"] = [{"hang": True}]
    write(c)

    c = ws_case("plain-text", "ws-abort",
                "The caller aborts after the third event while the socket is silent: aborted, "
                "no diagnostic.", {"sessionId": SESSION})
    c["abortAfterEvents"] = 3
    c["websocket"] = [replies(text[:4] + [{"$wait": 1500}] + text[4:])]
    write(c)

    c = ws_case("plain-text", "ws-abort-while-connecting",
                "The caller aborts while the upgrade is unanswered: aborted, no diagnostic, no "
                "fallback.", {"sessionId": SESSION})
    c["abortAfterMs"] = 1500
    c["websocket"] = [{"hang": True}]
    write(c)


if __name__ == "__main__":
    main()
