"""Cases for the wire shapes each provider client must handle like pi-ai 1.6.0: output item
types beyond messages and function calls, error records with the message nested under
`error`, stop reasons the client does not know, ids for parts that come without one.

    python3 crates/tern-ai/tests/providers/authoring/shapes.py

writes streams/<api>/shape-*.json next to this folder; their expected outputs come from the
reference runner (shared/providers/reference/run.mjs), never from tern.
"""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def j(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def data(obj):
    return f"data: {j(obj)}\n\n"


def event(name, obj):
    return f"event: {name}\ndata: {j(obj)}\n\n"


def sse(chunks, status=200):
    return {
        "status": status,
        "headers": {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"},
        "chunks": chunks,
    }


def base_request(api, case):
    with open(os.path.join(ROOT, "streams", api, f"{case}.json"), encoding="utf-8") as f:
        return copy.deepcopy(json.load(f)["request"])


def json_response(status, body):
    return {"status": status, "headers": {"content-type": "application/json"},
            "chunks": [json.dumps(body, indent=2, ensure_ascii=False) + "\n"]}


def write(api, name, description, request, chunks, covers, response=None):
    case = {
        "id": f"{api}/{name}",
        "api": api,
        "description": description,
        "covers": covers,
        "request": request,
        "response": response or sse(chunks),
    }
    d = os.path.join(ROOT, "streams", api)
    with open(os.path.join(d, f"{name}.json"), "w", encoding="utf-8") as f:
        json.dump(case, f, indent=2, ensure_ascii=False)
        f.write("\n")


# --------------------------------------------------------------------------------------------
# openai-responses

R = "openai-responses"
RESP_ID = "resp_shape01"


def r_ev(obj):
    return event(obj["type"], obj)


def r_created(seq=0):
    return r_ev({"type": "response.created", "sequence_number": seq,
                 "response": {"id": RESP_ID, "object": "response", "status": "in_progress", "output": [], "usage": None}})


def r_usage(inp=40, out=12, cached=0, reasoning=0):
    return {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cached}, "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": reasoning}, "total_tokens": inp + out}


def r_completed(status="completed", extra=None, output=None, kind="response.completed"):
    resp = {"id": RESP_ID, "object": "response", "status": status, "output": output or [], "usage": r_usage()}
    resp.update(extra or {})
    return r_ev({"type": kind, "sequence_number": 99, "response": resp})


def r_message(idx, item_id, text, phase=None):
    item = {"id": item_id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}
    if phase:
        item["phase"] = phase
    done = dict(item, status="completed",
                content=[{"type": "output_text", "text": text, "annotations": []}])
    return [
        r_ev({"type": "response.output_item.added", "output_index": idx, "item": item}),
        r_ev({"type": "response.content_part.added", "output_index": idx, "item_id": item_id, "content_index": 0,
              "part": {"type": "output_text", "text": "", "annotations": []}}),
        r_ev({"type": "response.output_text.delta", "output_index": idx, "item_id": item_id, "content_index": 0,
              "delta": text}),
        r_ev({"type": "response.output_text.done", "output_index": idx, "item_id": item_id, "content_index": 0,
              "text": text}),
        r_ev({"type": "response.output_item.done", "output_index": idx, "item": done}),
    ]


def responses_cases():
    tools_req = base_request(R, "tool-call-fragmented")
    plain = base_request(R, "plain-text")

    # custom_tool_call: a freeform tool call streamed as input deltas.
    item = {"id": "ctc_01", "type": "custom_tool_call", "status": "in_progress", "call_id": "call_custom_1",
            "name": "apply_patch", "input": ""}
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hello \"world\"\n*** End Patch"
    write(R, "shape-item-custom-tool-call",
          "A custom_tool_call item (freeform tool input) becomes a tool call whose arguments are {input: <text>}: "
          "input deltas stream as pieces of that JSON object, the done event and the done item close it; the "
          "response then stops with toolUse.",
          tools_req,
          [r_created(),
           r_ev({"type": "response.output_item.added", "output_index": 0, "item": item}),
           r_ev({"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ctc_01",
                 "delta": patch[:20]}),
           r_ev({"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ctc_01",
                 "delta": patch[20:]}),
           r_ev({"type": "response.custom_tool_call_input.done", "output_index": 0, "item_id": "ctc_01",
                 "input": patch}),
           r_ev({"type": "response.output_item.done", "output_index": 0,
                 "item": dict(item, status="completed", input=patch)}),
           r_completed()],
          ["custom-tool-call", "output-item-types"])

    # custom_tool_call announced with its whole input, closed by the done item only.
    item2 = {"id": "ctc_02", "type": "custom_tool_call", "status": "in_progress", "call_id": "call_custom_2",
             "name": "run_sql", "input": "SELECT 1;", "namespace": "db"}
    write(R, "shape-item-custom-tool-call-initial-input",
          "A custom_tool_call item that arrives with its input already set (no delta events), then a done item "
          "that extends it; namespace is kept. A second custom call is closed only by an input.done event and "
          "never gets its done item, so the toolUse stop is refused as an unfinished tool call.",
          tools_req,
          [r_created(),
           r_ev({"type": "response.output_item.added", "output_index": 0, "item": item2}),
           r_ev({"type": "response.output_item.done", "output_index": 0,
                 "item": dict(item2, status="completed", input="SELECT 1;\nSELECT 2;")}),
           r_ev({"type": "response.output_item.added", "output_index": 1,
                 "item": {"id": "ctc_03", "type": "custom_tool_call", "call_id": "call_custom_3", "name": "shell"}}),
           r_ev({"type": "response.custom_tool_call_input.done", "output_index": 1, "item_id": "ctc_03",
                 "input": "ls -la"}),
           r_completed()],
          ["custom-tool-call", "output-item-types"])

    # Item types that create no block, mixed with text.
    other_items = [
        {"id": "ws_1", "type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "rust"}},
        {"id": "fs_1", "type": "file_search_call", "status": "completed", "queries": ["x"], "results": None},
        {"id": "ig_1", "type": "image_generation_call", "status": "completed", "result": "aGVsbG8="},
        {"id": "ci_1", "type": "code_interpreter_call", "status": "completed", "code": "print(1)", "outputs": []},
        {"id": "mcp_1", "type": "mcp_call", "name": "lookup", "server_label": "kb", "arguments": "{\"q\":1}",
         "output": "ok"},
        {"id": "mcpl_1", "type": "mcp_list_tools", "server_label": "kb", "tools": []},
        {"id": "cc_1", "type": "computer_call", "call_id": "call_cc", "action": {"type": "screenshot"},
         "status": "completed"},
        {"id": "lsc_1", "type": "local_shell_call", "call_id": "call_ls", "action": {"type": "exec", "command": ["ls"]},
         "status": "completed"},
    ]
    chunks = [r_created()]
    for i, it in enumerate(other_items):
        chunks.append(r_ev({"type": "response.output_item.added", "output_index": i, "item": dict(it, status="in_progress")}))
        chunks.append(r_ev({"type": f"response.{it['type']}.in_progress", "output_index": i, "item_id": it["id"]}))
        chunks.append(r_ev({"type": "response.function_call_arguments.delta", "output_index": i, "item_id": it["id"],
                            "delta": "{\"x\":"}))
        chunks.append(r_ev({"type": "response.output_text.delta", "output_index": i, "item_id": it["id"],
                            "delta": "stray"}))
        chunks.append(r_ev({"type": "response.output_item.done", "output_index": i, "item": it}))
    chunks += r_message(len(other_items), "msg_after", "Found it.")
    chunks.append(r_completed(output=other_items))
    write(R, "shape-item-builtin-tools",
          "Built-in tool items (web_search_call, file_search_call, image_generation_call, code_interpreter_call, "
          "mcp_call, mcp_list_tools, computer_call, local_shell_call) create no block; deltas addressed to their "
          "output_index are ignored; the message after them is content 0.",
          plain, chunks, ["output-item-types", "ignored"])

    # A message item that only arrives as output_item.done; a reasoning item with content text.
    write(R, "shape-item-done-without-added",
          "output_item.done items with no earlier output_item.added: a reasoning item (content text, no summary) "
          "and a message with output_text plus refusal parts create their block and end it at once.",
          plain,
          [r_created(),
           r_ev({"type": "response.output_item.done", "output_index": 0,
                 "item": {"id": "rs_9", "type": "reasoning", "summary": [],
                          "content": [{"type": "reasoning_text", "text": "Step one."},
                                      {"type": "reasoning_text", "text": "Step two."}]}}),
           r_ev({"type": "response.output_item.done", "output_index": 1,
                 "item": {"id": "msg_9", "type": "message", "status": "completed", "role": "assistant",
                          "phase": "final_answer",
                          "content": [{"type": "output_text", "text": "Partly ", "annotations": []},
                                      {"type": "refusal", "refusal": "refused."}]}}),
           r_completed()],
          ["output-item-types", "reasoning", "refusal"])

    # Tool calls that only arrive as done items.
    write(R, "shape-tool-items-done-without-added",
          "A function_call item and a custom_tool_call item seen only in output_item.done: each creates its "
          "tool call from the item (arguments parsed, custom input sent as one JSON piece) and ends it at once.",
          tools_req,
          [r_created(),
           r_ev({"type": "response.output_item.done", "output_index": 0,
                 "item": {"id": "fc_d1", "type": "function_call", "status": "completed", "call_id": "call_d1",
                          "name": "write_file", "arguments": "{\"path\":\"x.txt\",\"content\":\"hi\"}"}}),
           r_ev({"type": "response.output_item.done", "output_index": 1,
                 "item": {"id": "ctc_d2", "type": "custom_tool_call", "status": "completed", "call_id": "call_d2",
                          "name": "apply_patch", "input": "line1\nline2\t\"q\""}}),
           r_completed()],
          ["tool-call", "custom-tool-call", "output-item-types"])

    # Unknown response status: the reference keeps usage, id and the raw status, then throws.
    write(R, "shape-unknown-status",
          "response.completed with a status the client does not know: the stream fails with "
          "`Unhandled stop reason: <status>`; responseId, usage and rawStopReason from that response are kept; "
          "the open text block gets no end event.",
          plain,
          [r_created(),
           r_ev({"type": "response.output_item.added", "output_index": 0,
                 "item": {"id": "msg_u", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}),
           r_ev({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_u", "content_index": 0,
                 "delta": "Hi"}),
           r_completed(status="paused", extra={"id": "resp_shape_final", "service_tier": "flex"})],
          ["stop-reason-unknown"])

    # An error record named `error` whose message is nested under `error`.
    write(R, "shape-error-event-nested",
          "An `event: error` record whose data nests the failure under `error` ({type, code, message}): the "
          "SDK takes the nested object, so the message is the nested message.",
          plain,
          [r_created()] + r_message(0, "msg_e", "Partial")[:3] +
          [event("error", {"type": "error", "sequence_number": 5,
                           "error": {"type": "server_error", "code": "server_error",
                                     "message": "The server had an error while processing your request.",
                                     "param": None}})],
          ["error-nested"])

    # Nested error without a message: the SDK shows the JSON of the nested object.
    write(R, "shape-error-nested-no-message",
          "A record with no event name whose JSON has an `error` object without `message`: the SDK's message "
          "is the compact JSON of that object.",
          plain,
          [r_created(), data({"type": "error", "error": {"type": "rate_limit_exceeded", "code": 429}})],
          ["error-nested"])

    # `thread.*` events are yielded wrapped by the SDK and never fail the stream.
    write(R, "shape-thread-events-ignored",
          "Records named `thread.*` (Assistants-style events) are wrapped by the SDK, so their `error` fields "
          "do not fail the stream and their contents are ignored; an `event: error` with JSON null data then "
          "fails with the SDK's `(no status code or body)`.",
          plain,
          [r_created(),
           event("thread.run.failed", {"id": "run_1", "error": {"message": "ignored"}, "type": "response.failed"}),
           ] + r_message(0, "msg_t", "Still here") + [event("error", None)],
          ["error-nested", "ignored"])

    # incomplete without a reason, failed with incomplete_details only, cancelled.
    write(R, "shape-incomplete-no-reason",
          "response.incomplete without incomplete_details: error `Response incomplete without a provider "
          "reason`, rawStopReason `incomplete`, usage kept.",
          plain,
          [r_created()] + r_message(0, "msg_i", "Cut") +
          [r_completed(status="incomplete", kind="response.incomplete")],
          ["stop-reason"])
    write(R, "shape-failed-incomplete-details",
          "response.failed without an error object but with incomplete_details: the message is "
          "`incomplete: <reason>`.",
          plain,
          [r_created(),
           r_ev({"type": "response.failed", "response": {"id": RESP_ID, "status": "failed", "error": None,
                                                         "incomplete_details": {"reason": "content_filter"}}})],
          ["stop-reason", "error"])
    write(R, "shape-cancelled",
          "response.completed whose status is `cancelled`: error stop reason without a message from the "
          "mapping, so the stream fails with `An unknown error occurred`; rawStopReason `cancelled`.",
          plain,
          [r_created()] + r_message(0, "msg_c", "Stopped") + [r_completed(status="cancelled")],
          ["stop-reason"])

    # Reasoning removals reported by the terminal response become a diagnostic.
    write(R, "shape-input-transformations",
          "response.completed with input_transformations: reasoning removals other than turn_boundary are "
          "recorded as an `openai_input_transformations` diagnostic with {type, id, action, reason} (null "
          "values kept, absent ones dropped); other entries and turn_boundary removals are left out.",
          plain,
          [r_created()] + r_message(0, "msg_d", "Ok") +
          [r_completed(extra={"input_transformations": [
              {"type": "reasoning", "id": "rs_old1", "action": "removed", "reason": "prefix_mismatch", "extra": 1},
              {"type": "reasoning", "id": "rs_old2", "action": "removed", "reason": "turn_boundary"},
              {"type": "reasoning", "action": "removed", "reason": None},
              {"type": "reasoning", "id": "rs_old3", "action": "kept", "reason": "x"},
              {"type": "message", "id": "m", "action": "removed", "reason": "x"},
              None]})],
          ["diagnostics"])

    # Parts without their text field: Array.join writes them as empty strings.
    write(R, "shape-item-parts-without-text",
          "Done items whose parts lack their text: a summary part without `text` and an output_text part "
          "without `text` (or a part of another type without `refusal`) join as empty strings.",
          plain,
          [r_created(),
           r_ev({"type": "response.output_item.added", "output_index": 0,
                 "item": {"id": "rs_p", "type": "reasoning", "summary": []}}),
           r_ev({"type": "response.reasoning_summary_text.delta", "output_index": 0, "item_id": "rs_p",
                 "summary_index": 0, "delta": "Think"}),
           r_ev({"type": "response.output_item.done", "output_index": 0,
                 "item": {"id": "rs_p", "type": "reasoning",
                          "summary": [{"type": "summary_text", "text": "First"}, {"type": "summary_text"},
                                      {"type": "summary_text", "text": "Third"}]}}),
           r_ev({"type": "response.output_item.added", "output_index": 1,
                 "item": {"id": "msg_p", "type": "message", "status": "in_progress", "content": [],
                          "role": "assistant"}}),
           r_ev({"type": "response.output_text.delta", "output_index": 1, "item_id": "msg_p", "content_index": 0,
                 "delta": "AB"}),
           r_ev({"type": "response.output_item.done", "output_index": 1,
                 "item": {"id": "msg_p", "type": "message", "status": "completed", "role": "assistant",
                          "content": [{"type": "output_text", "text": "A", "annotations": []},
                                      {"type": "output_text", "annotations": []},
                                      {"type": "output_audio", "transcript": "x"},
                                      {"type": "output_text", "text": "B", "annotations": []}]}}),
           r_completed()],
          ["reasoning", "output-item-types"])

    # Tool call completed without its output_item.done.
    write(R, "shape-unfinished-tool-call",
          "A function_call item whose output_item.done never arrives before response.completed: the toolUse "
          "stop is refused with `completed with an unfinished tool call`.",
          tools_req,
          [r_created(),
           r_ev({"type": "response.output_item.added", "output_index": 0,
                 "item": {"id": "fc_u1", "type": "function_call", "status": "in_progress", "call_id": "call_u1",
                          "name": "write_file", "arguments": "{\"path\":\"a\""}}),
           r_ev({"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_u1",
                 "delta": ",\"content\":\"x\"}"}),
           r_completed()],
          ["tool-call", "unfinished"])


# --------------------------------------------------------------------------------------------
# anthropic-messages

A = "anthropic-messages"


def a_ev(obj):
    return event(obj["type"], obj)


def a_start(msg_id="msg_shape01", model="claude-sonnet-4-5-20250929", usage=None):
    u = usage or {"input_tokens": 30, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                  "output_tokens": 1}
    return a_ev({"type": "message_start", "message": {"id": msg_id, "type": "message", "role": "assistant",
                                                      "model": model, "content": [], "stop_reason": None,
                                                      "stop_sequence": None, "usage": u}})


def a_text(index, text):
    return [
        a_ev({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        a_ev({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
        a_ev({"type": "content_block_stop", "index": index}),
    ]


def a_stop(reason, usage=None, details=None):
    delta = {"stop_reason": reason, "stop_sequence": None}
    if details is not None:
        delta["stop_details"] = details
    return [a_ev({"type": "message_delta", "delta": delta, "usage": usage or {"output_tokens": 9}}),
            a_ev({"type": "message_stop"})]


def anthropic_cases():
    plain = base_request(A, "plain-text")
    tools_req = base_request(A, "tool-call-fragmented")

    write(A, "shape-unknown-stop-reason",
          "A stop_reason the client does not know (model_context_window_exceeded): the stream fails with "
          "`Unhandled stop reason: <value>` on the spot, rawStopReason keeps the value, the usage of that "
          "message_delta is not applied; the message counts as a context overflow.",
          plain,
          [a_start()] + a_text(0, "Partial answer") + a_stop("model_context_window_exceeded", {"output_tokens": 55}),
          ["stop-reason-unknown"])

    write(A, "shape-stop-sensitive",
          "stop_reason `sensitive`: error `Provider stopped with: sensitive`, rawStopReason kept, usage of the "
          "delta applied.",
          plain, [a_start()] + a_text(0, "Hmm") + a_stop("sensitive"), ["stop-reason"])

    write(A, "shape-stop-pause-turn",
          "stop_reason `pause_turn` maps to stop; a stop_sequence before it is irrelevant.",
          plain, [a_start()] + a_text(0, "Searching...") + a_stop("pause_turn"), ["stop-reason"])

    server_blocks = [
        a_ev({"type": "content_block_start", "index": 0,
              "content_block": {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {}}}),
        a_ev({"type": "content_block_delta", "index": 0,
              "delta": {"type": "input_json_delta", "partial_json": "{\"query\":\"rust\"}"}}),
        a_ev({"type": "content_block_stop", "index": 0}),
        a_ev({"type": "content_block_start", "index": 1,
              "content_block": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
                                "content": [{"type": "web_search_result", "title": "Rust", "url": "https://r.example",
                                             "encrypted_content": "abc"}]}}),
        a_ev({"type": "content_block_stop", "index": 1}),
        a_ev({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}}),
        a_ev({"type": "content_block_delta", "index": 2,
              "delta": {"type": "citations_delta", "citation": {"type": "web_search_result_location",
                                                                 "url": "https://r.example", "cited_text": "x"}}}),
        a_ev({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "Rust is fast."}}),
        a_ev({"type": "content_block_delta", "index": 2, "delta": {"type": "thinking_delta", "thinking": "nope"}}),
        a_ev({"type": "content_block_stop", "index": 2}),
        a_ev({"type": "content_block_start", "index": 3,
              "content_block": {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "kb", "server_name": "s",
                                "input": {}}}),
        a_ev({"type": "content_block_stop", "index": 3}),
        a_ev({"type": "content_block_start", "index": 4,
              "content_block": {"type": "code_execution_tool_result", "tool_use_id": "x", "content": {}}}),
        a_ev({"type": "content_block_stop", "index": 4}),
    ]
    write(A, "shape-server-tool-blocks",
          "Server tool blocks (server_tool_use, web_search_tool_result, mcp_tool_use, "
          "code_execution_tool_result) create nothing and their deltas are ignored; a citations_delta and a "
          "delta of the wrong kind inside the text block are ignored; the text is content 0.",
          plain, [a_start()] + server_blocks + a_stop("end_turn"), ["block-types", "ignored"])

    write(A, "shape-redacted-thinking",
          "A redacted_thinking block (start and stop only) becomes a redacted thinking block; a thinking block "
          "without a signature in its start gets one from signature_delta pieces.",
          dict(plain, options={"maxTokens": 2048, "reasoning": "low"}),
          [a_start(),
           a_ev({"type": "content_block_start", "index": 0,
                 "content_block": {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}}),
           a_ev({"type": "content_block_stop", "index": 0}),
           a_ev({"type": "content_block_start", "index": 1, "content_block": {"type": "thinking", "thinking": ""}}),
           a_ev({"type": "content_block_delta", "index": 1, "delta": {"type": "thinking_delta", "thinking": "Plan."}}),
           a_ev({"type": "content_block_delta", "index": 1, "delta": {"type": "signature_delta", "signature": "c2ln"}}),
           a_ev({"type": "content_block_delta", "index": 1, "delta": {"type": "signature_delta", "signature": "bmF0"}}),
           a_ev({"type": "content_block_stop", "index": 1})] + a_text(2, "Done.") + a_stop("end_turn"),
          ["thinking", "redacted"])

    write(A, "shape-fallback-block",
          "A `fallback` content block before any content is skipped; after a text block it fails the stream "
          "with `unsupported mid-output model fallback`.",
          plain,
          [a_start(),
           a_ev({"type": "content_block_start", "index": 0, "content_block": {"type": "fallback", "model": "x"}}),
           a_ev({"type": "content_block_stop", "index": 0})] + a_text(1, "Hi") +
          [a_ev({"type": "content_block_start", "index": 2, "content_block": {"type": "fallback", "model": "y"}})] +
          a_stop("end_turn"),
          ["block-types", "error"])

    write(A, "shape-error-unnamed-record",
          "An error JSON sent without an `event:` line is ignored (dispatch is by event name), so the stream "
          "ends without message_stop.",
          plain,
          [a_start()] + a_text(0, "Hello") +
          [data({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})],
          ["error-nested", "ignored"])

    write(A, "shape-error-event-nested",
          "`event: error` whose data nests the failure under `error`: the message is the raw data text.",
          plain,
          [a_start()] + a_text(0, "Hello")[:2] +
          [event("error", {"type": "error", "error": {"details": None, "type": "api_error",
                                                      "message": "Internal server error"},
                           "request_id": "req_011"})],
          ["error-nested"])

    write(A, "shape-input-transformations",
          "input_transformations reported by message_start and replaced by message_delta: the last list "
          "becomes an `anthropic_input_transformations` diagnostic of {type, path, reason} (nulls dropped) on "
          "a successful message.",
          plain,
          [a_ev({"type": "message_start", "message": {
              "id": "msg_tr1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
              "content": [], "stop_reason": None, "usage": {"input_tokens": 30, "output_tokens": 1},
              "input_transformations": [{"type": "ignored", "path": "x"}]}})] + a_text(0, "Hi") +
          [a_ev({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4},
                 "input_transformations": [
                     {"type": "thinking_removed", "path": "messages.1.content.0", "reason": "signature_invalid",
                      "other": True},
                     {"type": "tool_rewritten", "path": None, "reason": "schema"},
                     {}]}),
           a_ev({"type": "message_stop"})],
          ["diagnostics"])

    write(A, "shape-tool-use-prefilled-input",
          "A tool_use block whose start carries a non-empty input and no input_json_delta: the block shows "
          "the start input until the stop, where the (empty) streamed text finalizes the arguments; usage "
          "from message_delta keeps input when input_tokens is null and takes the 1h cache split.",
          tools_req,
          [a_start(usage={"input_tokens": 120, "cache_creation_input_tokens": 50, "cache_read_input_tokens": 10,
                          "cache_creation": {"ephemeral_5m_input_tokens": 20, "ephemeral_1h_input_tokens": 30},
                          "output_tokens": 1}),
           a_ev({"type": "content_block_start", "index": 0,
                 "content_block": {"type": "tool_use", "id": "toolu_pre1", "name": "write_file",
                                   "input": {"path": "a.txt", "content": "x"}}}),
           a_ev({"type": "content_block_stop", "index": 0})] +
          a_stop("tool_use", usage={"input_tokens": None, "output_tokens": 40, "cache_creation_input_tokens": 60,
                                    "cache_creation": {"ephemeral_1h_input_tokens": 45},
                                    "output_tokens_details": {"thinking_tokens": 7}}),
          ["tool-call", "usage"])


# --------------------------------------------------------------------------------------------
# google-generative-ai

G = "google-generative-ai"


def g_chunk(parts=None, finish=None, usage=None, response_id="shapeResp01", extra_candidates=None):
    cand = {"index": 0}
    if parts is not None:
        cand["content"] = {"parts": parts, "role": "model"}
    if finish:
        cand["finishReason"] = finish
    obj = {"candidates": [cand] + (extra_candidates or [])}
    if usage:
        obj["usageMetadata"] = usage
    obj["modelVersion"] = "gemini-2.5-flash"
    if response_id is not None:
        obj["responseId"] = response_id
    return "data: " + j(obj) + "\r\n\r\n"


def g_usage(p=20, c=8, t=None, cached=None, thoughts=None):
    u = {"promptTokenCount": p, "candidatesTokenCount": c, "totalTokenCount": t or p + c}
    if cached is not None:
        u["cachedContentTokenCount"] = cached
    if thoughts is not None:
        u["thoughtsTokenCount"] = thoughts
    return u


def google_cases():
    plain = base_request(G, "plain-text")
    tools_req = base_request(G, "tool-call-fragmented")

    write(G, "shape-unknown-finish-reason",
          "A finishReason the client does not know: the stream fails with `Unhandled stop reason: <value>` "
          "(rawStopReason keeps it, the usage of that chunk is not applied); the open text block gets no end.",
          plain,
          [g_chunk([{"text": "Hello"}], usage=g_usage(c=1)),
           g_chunk([{"text": " there"}], finish="NEW_FUTURE_REASON", usage=g_usage(c=3))],
          ["stop-reason-unknown"])

    write(G, "shape-finish-malformed-function-call",
          "finishReason MALFORMED_FUNCTION_CALL with no parts: error `Provider stopped with: "
          "MALFORMED_FUNCTION_CALL`; the earlier text block is closed first.",
          tools_req,
          [g_chunk([{"text": "Let me call it."}], usage=g_usage()),
           g_chunk(None, finish="MALFORMED_FUNCTION_CALL", usage=g_usage(c=9))],
          ["stop-reason"])

    write(G, "shape-function-call-ids",
          "Function calls: one with the server's id, one repeating that id and one without an id both get a "
          "generated `<name>_<ms>_<n>` id; a part's thoughtSignature is kept on its call; args missing -> {}.",
          tools_req,
          [g_chunk([{"functionCall": {"id": "call_a", "name": "write_file",
                                      "args": {"path": "a", "content": "1"}}, "thoughtSignature": "c2lnMQ=="},
                    {"functionCall": {"id": "call_a", "name": "write_file", "args": {"path": "b", "content": "2"}}},
                    {"functionCall": {"name": "write_file"}}],
                   finish="STOP", usage=g_usage())],
          ["tool-call", "generated-id"])

    write(G, "shape-parts-ignored",
          "Parts with neither text nor functionCall (inlineData, executableCode, codeExecutionResult, "
          "functionResponse, fileData) are ignored; an empty text part still opens the text block; a thought "
          "part switches to thinking and back; the last non-empty signature of a block wins; only "
          "candidates[0] is read.",
          plain,
          [g_chunk([{"text": ""}], usage=g_usage(c=0)),
           g_chunk([{"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                    {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                    {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
                    {"fileData": {"mimeType": "text/plain", "fileUri": "gs://x"}},
                    {"text": "A", "thoughtSignature": "QUFBQQ=="}],
                   extra_candidates=[{"index": 1, "content": {"parts": [{"text": "IGNORED"}], "role": "model"}}]),
           g_chunk([{"text": "think", "thought": True, "thoughtSignature": "QkJCQg=="},
                    {"text": " more", "thought": True}]),
           g_chunk([{"text": "B", "thoughtSignature": ""}, {"text": "C", "thoughtSignature": "Q0NDQw=="}],
                   finish="STOP", usage=g_usage(c=4, thoughts=2, cached=5))],
          ["part-types", "ignored", "thinking"])

    write(G, "shape-error-record-nested",
          "A data record that is only `{error: {code, message, status}}` mid-stream (code 503): the SDK fails "
          "with `got status: <status>. <JSON>`; a following chunk is never read.",
          plain,
          [g_chunk([{"text": "Par"}], usage=g_usage(c=1)),
           data({"error": {"code": 503, "message": "The model is overloaded. Please try again later.",
                           "status": "UNAVAILABLE"}}),
           g_chunk([{"text": "tial"}], finish="STOP")],
          ["error-nested"])

    write(G, "shape-error-record-outside-range",
          "An `{error: ...}` record whose code is not an HTTP error status (200) is read as an ordinary chunk "
          "(no candidates), so the stream goes on and ends normally.",
          plain,
          [g_chunk([{"text": "Hi"}]),
           data({"error": {"code": 200, "message": "odd", "status": "OK"}}),
           g_chunk([{"text": "!"}], finish="STOP", usage=g_usage())],
          ["error-nested"])

    write(G, "shape-error-record-codes",
          "`{error}` records whose code is a string (\"503\") or a non-error number are read as chunks; a "
          "fractional code in [400, 600) (429.5) fails the stream; status missing prints `undefined`.",
          plain,
          [g_chunk([{"text": "Hi"}]),
           data({"error": {"code": "503", "message": "string code", "status": "UNAVAILABLE"}}),
           data({"error": {"code": 399, "message": "below"}}),
           g_chunk([{"text": "!"}]),
           data({"error": {"code": 429.5, "message": "fraction"}})],
          ["error-nested"])

    write(G, "shape-finish-other-stops",
          "finishReason LANGUAGE after thinking and text: error `Provider stopped with: LANGUAGE`; blocks "
          "closed first; responseId from the first chunk that has one.",
          plain,
          [g_chunk([{"text": "hmm", "thought": True}], response_id=None),
           g_chunk([{"text": "Bonjour"}], response_id="laterId"),
           g_chunk(None, finish="LANGUAGE", usage=g_usage(), response_id="lastId")],
          ["stop-reason"])


# --------------------------------------------------------------------------------------------
# openai-completions

C = "openai-completions"


def c_chunk(delta=None, finish=None, usage=None, cid="chatcmpl-shape01", model="gpt-4.1-mini-2025-04-14",
            choices=True):
    obj = {"id": cid, "object": "chat.completion.chunk", "created": 1767225600, "model": model}
    if choices:
        obj["choices"] = [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}]
    else:
        obj["choices"] = []
    if usage is not None:
        obj["usage"] = usage
    return data(obj)


def c_usage(p=30, c=10):
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def completions_cases():
    plain = base_request(C, "plain-text")
    tools_req = base_request(C, "tool-call-fragmented")

    write(C, "shape-custom-tool-call",
          "Tool-call deltas of type `custom` ({custom: {name, input}}) become a tool call with arguments "
          "{input: <text>}; input pieces stream as pieces of that JSON, the block is closed after the stream "
          "(`\"}` delta); a function call follows in the same response.",
          tools_req,
          [c_chunk({"role": "assistant", "content": None}),
           c_chunk({"tool_calls": [{"index": 0, "id": "call_cu1", "type": "custom",
                                    "custom": {"name": "apply_patch", "input": ""}}]}),
           c_chunk({"tool_calls": [{"index": 0, "custom": {"input": "*** Begin Patch\n"}}]}),
           c_chunk({"tool_calls": [{"index": 0, "custom": {"input": "+\"quoted\"\n*** End Patch"}}]}),
           c_chunk({"tool_calls": [{"index": 1, "id": "call_fn2", "type": "function",
                                    "function": {"name": "write_file", "arguments": "{\"path\":\"a\",\"content\":\"b\"}"}}]}),
           c_chunk({}, finish="tool_calls"),
           c_chunk(None, usage=c_usage(), choices=False),
           "data: [DONE]\n\n"],
          ["custom-tool-call", "tool-call"])

    write(C, "shape-custom-tool-call-switch",
          "A tool call that starts as a function call and then receives a custom-only delta turns freeform: "
          "its arguments restart as {input: \"\"}, the function arguments received so far are dropped, and a "
          "later function delta no longer appends.",
          tools_req,
          [c_chunk({"tool_calls": [{"index": 0, "id": "call_sw1", "type": "function",
                                    "function": {"name": "write_file", "arguments": "{\"path\":"}}]}),
           c_chunk({"tool_calls": [{"index": 0, "custom": {"input": "raw text"}}]}),
           c_chunk({"tool_calls": [{"index": 0, "function": {"arguments": "\"ignored\"}"}}]}),
           c_chunk({"tool_calls": [{"index": 0, "custom": {"input": " more"}}]}),
           c_chunk({}, finish="tool_calls", usage=c_usage()),
           "data: [DONE]\n\n"],
          ["custom-tool-call"])

    write(C, "shape-custom-tool-call-empty",
          "A custom tool call that never receives input: closing it sends the whole `{\"input\":\"\"}` at once.",
          tools_req,
          [c_chunk({"tool_calls": [{"index": 0, "id": "call_cu2", "type": "custom", "custom": {"name": "noop"}}]}),
           c_chunk({}, finish="tool_calls", usage=c_usage()),
           "data: [DONE]\n\n"],
          ["custom-tool-call"])

    write(C, "shape-unknown-finish-reason",
          "finish_reason values the client does not know (`network_error`, then `guardrail_intervened`): the "
          "last one wins, error `Provider finish_reason: <value>` with rawStopReason kept; blocks are closed "
          "first.",
          plain,
          [c_chunk({"content": "Hello"}),
           c_chunk({}, finish="network_error"),
           c_chunk({"content": " again"}, finish="guardrail_intervened"),
           c_chunk(None, usage=c_usage(), choices=False),
           "data: [DONE]\n\n"],
          ["stop-reason-unknown"])

    write(C, "shape-error-nested-no-message",
          "A chunk whose `error` object has no message (`{code, metadata: {raw}}`): the message is the compact "
          "JSON of the error object, and OpenRouter-style metadata.raw is appended on its own line.",
          plain,
          [c_chunk({"content": "Part"}),
           data({"id": "chatcmpl-shape01", "object": "chat.completion.chunk",
                 "error": {"code": 502, "metadata": {"raw": "upstream connect error", "provider_name": "X"}}})],
          ["error-nested"])

    write(C, "shape-error-event-nested",
          "`event: error` whose data nests the failure under `error` with metadata.raw: the message is the "
          "nested message, then the raw metadata on a new line.",
          plain,
          [c_chunk({"content": "Part"}),
           event("error", {"error": {"message": "Provider returned error", "code": 429,
                                     "metadata": {"raw": "Rate limited upstream", "provider_name": "Y"}}})],
          ["error-nested"])

    write(C, "shape-done-not-exact",
          "Only a data field that is exactly `[DONE]` ends the stream: `[DONE] ` with a trailing space is "
          "parsed as JSON and fails with the SDK's malformed-event error.",
          plain,
          [c_chunk({"content": "Hi"}), c_chunk({}, finish="stop", usage=c_usage()), "data: [DONE] \n\n"],
          ["done-sentinel", "error"])

    write(C, "shape-http-error-metadata-raw",
          "An HTTP 400 whose error carries OpenRouter's metadata.raw: the message is `<status>: <error JSON>`, "
          "and since that JSON escapes the raw text differently, the raw text is appended on a new line.",
          plain, None, ["error-nested", "http-error"],
          response=json_response(400, {"error": {"message": "Provider returned error", "code": 400,
                                                 "metadata": {"raw": "{\"error\":\"bad \\\"thing\\\"\"}",
                                                              "provider_name": "Upstream"}}}))

    write(C, "shape-tool-calls-without-index",
          "Tool-call deltas without `index`: matched by id; a delta with neither index nor id opens a new call "
          "with an empty id that a later delta's id fills in; a delta with no arguments emits an empty delta.",
          tools_req,
          [c_chunk({"tool_calls": [{"id": "call_x1", "type": "function",
                                    "function": {"name": "write_file", "arguments": "{\"path\":"}}]}),
           c_chunk({"tool_calls": [{"id": "call_x1", "function": {"arguments": "\"p\",\"content\":\"c\"}"}}]}),
           c_chunk({"tool_calls": [{"type": "function", "function": {"name": "", "arguments": ""}}]}),
           c_chunk({"tool_calls": [{"id": "call_x2", "function": {"name": "write_file", "arguments": "{}"}}]}),
           c_chunk({}, finish="tool_calls", usage=c_usage()),
           "data: [DONE]\n\n"],
          ["tool-call", "generated-id"])

    write(C, "shape-thread-and-odd-chunks",
          "Records the SDK does not hand over as chunks: a `thread.*` event (its `error` does not fail), JSON "
          "that is not an object (null, a number, an array), a chunk without choices but with usage; usage in "
          "choices[0].usage as fallback; anything after [DONE] is not read.",
          plain,
          [event("thread.message.delta", {"id": "x", "error": {"message": "ignored"}}),
           "data: null\n\n", "data: 42\n\n", "data: []\n\n",
           c_chunk({"content": "Hi"}),
           data({"id": "chatcmpl-shape01", "object": "chat.completion.chunk", "model": "gpt-4.1-mini-2025-04-14",
                 "choices": [{"index": 0, "delta": {}, "finish_reason": "stop",
                              "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}}]}),
           "data: [DONE]\n\n",
           c_chunk({"content": "after done"})],
          ["ignored", "usage"])


if __name__ == "__main__":
    responses_cases()
    anthropic_cases()
    google_cases()
    completions_cases()
