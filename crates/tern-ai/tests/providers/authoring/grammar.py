"""Cases for grammar-constrained tools (OpenAI custom tools) and for failing requests whose
tools cannot go as their constrained sampling asks:

- `grammar-tools` on openai-responses, azure-openai-responses, openai-codex-responses and
  openai-completions: a model whose compat sets `supportsOpenAIGrammarTools`, a Lark tool, a
  regex-only tool (its Lark variant blank), an ordinary tool; the history replays earlier
  grammar calls (as custom calls, input taken from the tool's input property) and their
  results; on Responses and completions the reply streams a custom call, whose arguments are
  keyed by the tool's input property.
- `grammar-tools-unsupported` (openai-responses, openai-completions): the same without the
  compat flag: function tools, function calls, the `input` fallback for a custom call.
- `grammar-tool-*` (openai-responses): a bad grammar tool fails the request before it is sent.
- `constrained-require-fails` on every API: a `strict: "require"` tool whose schema has no
  strict form.

    python3 crates/tern-ai/tests/providers/authoring/grammar.py

writes streams/<api>/<case>.json; their expected outputs come from the reference runner
(tests/providers/reference/run.mjs), never from tern.
"""
import copy
import json

from constrained import STRICT_APIS, strict_case
from recorded import load, retarget, write

LARK = 'start: "SELECT " COLUMNS " FROM " TABLE\nCOLUMNS: /[a-z_, ]+/\nTABLE: /[a-z_]+/'
SQL = {"name": "sql", "description": "Run a read-only SQL query.",
       "constrainedSampling": {"type": "grammar", "variants": {"openai_lark": LARK, "openai_regex": "SELECT .+"}},
       "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "The query."}},
                      "required": ["query"]}}
DATE = {"name": "date", "description": "Look a day up.",
        "constrainedSampling": {"type": "grammar", "variants": {"openai_lark": "  \n", "openai_regex": r"\d{4}-\d{2}-\d{2}"}},
        "parameters": {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}}
PLAIN = {"name": "ls", "description": "List a folder.",
         "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
TOOLS = [SQL, DATE, PLAIN]

USAGE = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def history(model, call_ids):
    """A turn that called `sql` and `date`, their results, and the next question; the calls
    were made by `model` (its api, provider and id) with the given tool-call ids."""
    return [
        {"role": "user", "content": "How many users are there, and what day is it?", "timestamp": 1767225600000},
        {"role": "assistant", "api": model["api"], "provider": model["provider"], "model": model["id"],
         "content": [
             {"type": "text", "text": "Let me check."},
             {"type": "toolCall", "id": call_ids[0], "name": "sql", "arguments": {"query": "SELECT count FROM users"}},
             {"type": "toolCall", "id": call_ids[1], "name": "date", "arguments": {"day": "2026-01-01"}},
             {"type": "toolCall", "id": call_ids[2], "name": "ls", "arguments": {"path": "."}},
         ],
         "usage": USAGE, "stopReason": "toolUse", "timestamp": 1767225601000},
        {"role": "toolResult", "toolCallId": call_ids[0], "toolName": "sql",
         "content": [{"type": "text", "text": "42"}], "isError": False, "timestamp": 1767225602000},
        {"role": "toolResult", "toolCallId": call_ids[1], "toolName": "date",
         "content": [{"type": "text", "text": "Thursday"}], "isError": False, "timestamp": 1767225602001},
        {"role": "toolResult", "toolCallId": call_ids[2], "toolName": "ls",
         "content": [{"type": "text", "text": "a.txt"}], "isError": False, "timestamp": 1767225602002},
        {"role": "user", "content": "Now list the admins.", "timestamp": 1767225603000},
    ]


def r_ev(data):
    return f"event: {data['type']}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def responses_custom_call_chunks():
    """A Responses reply that streams one custom call of `sql`."""
    item = {"id": "ctc_new1", "type": "custom_tool_call", "status": "in_progress", "call_id": "call_new1",
            "name": "sql", "input": ""}
    done = dict(item, status="completed", input='SELECT name FROM admins WHERE "x"')
    return [
        r_ev({"type": "response.created", "sequence_number": 0,
              "response": {"id": "resp_g1", "object": "response", "status": "in_progress", "output": [], "usage": None}}),
        r_ev({"type": "response.output_item.added", "output_index": 0, "item": item}),
        r_ev({"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ctc_new1",
              "delta": "SELECT name "}),
        r_ev({"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ctc_new1",
              "delta": 'FROM admins WHERE "x"'}),
        r_ev({"type": "response.custom_tool_call_input.done", "output_index": 0, "item_id": "ctc_new1",
              "input": 'SELECT name FROM admins WHERE "x"'}),
        r_ev({"type": "response.output_item.done", "output_index": 0, "item": done}),
        r_ev({"type": "response.completed", "sequence_number": 9,
              "response": {"id": "resp_g1", "object": "response", "status": "completed", "output": [],
                           "usage": {"input_tokens": 40, "input_tokens_details": {"cached_tokens": 0},
                                     "output_tokens": 12, "output_tokens_details": {"reasoning_tokens": 0},
                                     "total_tokens": 52}}}),
    ]


def c_chunk(delta, finish=None):
    body = {"id": "chatcmpl-g1", "object": "chat.completion.chunk", "created": 1767225600, "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
    return f"data: {json.dumps(body, separators=(',', ':'))}\n\n"


def completions_custom_call_chunks():
    """A Chat Completions reply that streams one custom call of `sql`, and a custom call whose
    name arrives after it turned freeform."""
    return [
        c_chunk({"role": "assistant", "content": None}),
        c_chunk({"tool_calls": [{"index": 0, "id": "call_c1", "type": "custom",
                                 "custom": {"name": "sql", "input": "SELECT name "}}]}),
        c_chunk({"tool_calls": [{"index": 0, "custom": {"input": 'FROM admins WHERE "x"'}}]}),
        c_chunk({"tool_calls": [{"index": 1, "id": "call_c2", "type": "function", "function": {"name": "date"}}]}),
        c_chunk({"tool_calls": [{"index": 1, "custom": {"input": "2026-02-02"}}]}),
        c_chunk({}, "tool_calls"),
        "data: " + json.dumps({"id": "chatcmpl-g1", "object": "chat.completion.chunk", "created": 1767225600,
                               "model": "gpt-4.1-mini", "choices": [],
                               "usage": {"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40}},
                              separators=(",", ":")) + "\n\n",
        "data: [DONE]\n\n",
    ]


def grammar_case(api, source, name, description, compat, call_ids, chunks=None, tools=TOOLS):
    case = retarget(load(api, source), api, name, description)
    model = case["request"]["model"]
    model["compat"] = {**model.get("compat", {}), **compat}
    if not compat.get("supportsOpenAIGrammarTools"):
        model["compat"].pop("supportsOpenAIGrammarTools", None)
    model.setdefault("api", api)
    context = case["request"]["context"]
    context["tools"] = copy.deepcopy(tools)
    context["messages"] = history(model, call_ids)
    if chunks is not None:
        case["response"] = {"status": 200, "headers": {"content-type": "text/event-stream"}, "chunks": chunks}
    write(case)


def grammar_cases():
    on = {"supportsOpenAIGrammarTools": True}
    # Responses: same-model ids; the date call's item id is a function call's (`fc_`), so it
    # goes without one; the ls call's is a custom call's, dropped the other way.
    responses_ids = ["call_g1|ctc_g1", "call_g2|fc_g2", "call_g3|ctc_g3"]
    grammar_case("openai-responses", "plain-text", "grammar-tools",
                 "Grammar tools on a model with OpenAI grammar tools: custom tools with their Lark or regex "
                 "grammar, earlier grammar calls replayed as custom_tool_call items (input from the tool's input "
                 "property, ctc_ ids kept), their results as custom_tool_call_output; the reply's custom call is "
                 "keyed by the input property.",
                 on, responses_ids, responses_custom_call_chunks())
    grammar_case("openai-responses", "plain-text", "grammar-tools-unsupported",
                 "The grammar tools on a model without OpenAI grammar tools: function tools, function calls, and "
                 "a custom call keyed by the fallback property `input`.",
                 {}, responses_ids, responses_custom_call_chunks())
    grammar_case("azure-openai-responses", "plain-text", "grammar-tools",
                 "Grammar tools on Azure: custom tools and custom calls as on OpenAI Responses.",
                 on, ["call_g1|ctc_g1", "call_g2|fc_g2", "call_g3|fc_g3"], responses_custom_call_chunks())
    grammar_case("openai-codex-responses", "plain-text", "grammar-tools",
                 "Grammar tools on Codex: custom tools inside the additional_tools item, custom calls replayed, "
                 "the reply's custom call keyed by the input property.",
                 on, ["call_g1|ctc_g1", "call_g2|fc_g2", "call_g3|fc_g3"], responses_custom_call_chunks())
    grammar_case("openai-completions", "plain-text", "grammar-tools",
                 "Grammar tools on Chat Completions with OpenAI grammar tools: custom tools with the grammar "
                 "under format.grammar, earlier grammar calls replayed as type custom; streamed custom calls keyed "
                 "by the input property (also one that turns freeform after its name).",
                 on, ["call_g1", "call_g2", "call_g3"], completions_custom_call_chunks())
    grammar_case("openai-completions", "plain-text", "grammar-tools-unsupported",
                 "The grammar tools on a Chat Completions model without OpenAI grammar tools: function tools and "
                 "calls; streamed custom calls keyed by `input`.",
                 {}, ["call_g1", "call_g2", "call_g3"], completions_custom_call_chunks())


def bad(name, description, tool, messages=None):
    case = retarget(load("openai-responses", "plain-text"), "openai-responses", name, description)
    case["request"]["model"]["compat"] = {**case["request"]["model"].get("compat", {}),
                                          "supportsOpenAIGrammarTools": True}
    case["request"]["context"]["tools"] = [tool, PLAIN]
    if messages is not None:
        case["request"]["context"]["messages"] = messages
    write(case)


def bad_grammar_cases():
    def variant(**changes):
        tool = copy.deepcopy(SQL)
        for k, v in changes.items():
            tool[k] = v
        return tool
    bad("grammar-tool-no-variant", "A grammar tool whose variants are all blank fails the request.",
        variant(constrainedSampling={"type": "grammar", "variants": {"openai_lark": " ", "openai_regex": ""}}))
    bad("grammar-tool-two-required", "A grammar tool with two required properties fails the request.",
        variant(parameters={"type": "object", "properties": {"query": {"type": "string"}, "db": {"type": "string"}},
                            "required": ["query", "db"]}))
    bad("grammar-tool-not-object", "A grammar tool whose parameters are not an object schema fails the request.",
        variant(parameters={"type": "string"}))
    bad("grammar-tool-number-input", "A grammar tool whose input property is not a string fails the request.",
        variant(parameters={"type": "object", "properties": {"query": {"type": "number"}}, "required": ["query"]}))
    bad("grammar-tool-missing-property", "A grammar tool whose required property has no schema fails the request.",
        variant(parameters={"type": "object", "properties": {}, "required": ["query"]}))
    model = load("openai-responses", "plain-text")["request"]["model"]
    model = dict(model, api="openai-responses")
    messages = history(model, ["call_g1|ctc_g1", "call_g2|fc_g2", "call_g3|fc_g3"])
    messages[1]["content"][1]["arguments"] = {"query": 7}
    bad("grammar-call-input-not-string",
        "A replayed grammar call whose input property is not a string fails the request.", SQL, messages)


REQUIRE = {"type": "json_schema", "strict": "require"}
LOOSE = {"name": "loose", "description": "A schema strict mode cannot express.", "constrainedSampling": REQUIRE,
         "parameters": {"type": "object", "properties": {"anything": {}}}}
FITS = {"name": "read", "description": "Read a file.", "constrainedSampling": REQUIRE,
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}

def require_cases():
    for api in STRICT_APIS:
        case = strict_case(api, "constrained-require-fails",
                           "A strict: require tool whose schema has no strict form fails the request, "
                           "with the reference's message, before anything is sent.")
        case["request"]["context"]["tools"] = [FITS, LOOSE]
        write(case)
    for api, source in [("anthropic-messages", "plain-text"), ("openai-completions", "plain-text"),
                        ("bedrock-converse-stream", "text-basic"), ("google-generative-ai", "plain-text")]:
        case = retarget(load(api, source), api, "constrained-require-unsupported",
                        "A strict: require tool on a model without strict tools fails the request.")
        model = case["request"]["model"]
        model.get("compat", {}).pop("supportsStrictTools", None)
        model.get("compat", {}).pop("supportsStrictMode", None)
        if api == "openai-completions":
            model["compat"] = {**model.get("compat", {}), "supportsStrictMode": False}
        case["request"]["context"]["tools"] = [FITS]
        write(case)


def main():
    grammar_cases()
    bad_grammar_cases()
    require_cases()


if __name__ == "__main__":
    main()
