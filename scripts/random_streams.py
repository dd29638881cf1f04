#!/usr/bin/env python3
"""Random provider streams for differential runs against the reference.

    random_streams.py SEED COUNT ROOT

Writes COUNT cases (shared/providers/FORMAT.md) to ROOT/streams/<api>/, half of them
`anthropic-messages` (blocks of every kind opened, filled and closed in any order, pings,
errors, every stop reason, a missing `message_start` or `message_stop`) and half
`openai-completions`, in the chunk shapes that servers speaking that API send (OpenAI,
OpenRouter, DeepSeek, vLLM, llama.cpp, Groq, ...): text, refusals, the reasoning
fields each of them names differently, tool calls split anywhere (with and without
`index`, ids repeated or missing, several interleaved), usage in the last chunk or beside
a finish reason, every finish reason and unknown ones, error objects, comments, choices
left empty, `[DONE]` or not, and the bytes split at random (inside UTF-8 characters too).
scripts/diff-streams.sh gives each the reference's output and checks tern's against it.
"""

import base64
import json
import os
import random
import sys

PROVIDERS = [
    ("openai", "gpt-4.1-mini", "{{origin}}/v1", False),
    ("openrouter", "deepseek/deepseek-r1", "{{origin}}/api/v1", True),
    ("deepseek", "deepseek-reasoner", "{{origin}}", True),
    ("groq", "openai/gpt-oss-20b", "{{origin}}/openai/v1", True),
    ("xai", "grok-3-mini", "{{origin}}/v1", True),
    ("cerebras", "qwen-3-32b", "{{origin}}/v1", True),
]

TOOL = {
    "name": "write_file",
    "description": "Write a file.",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "mode": {"type": "integer"}},
        "required": ["path"],
    },
}

WORDS = ["Hello", " world", "!", " ünïcödé", " 中文字", " 🙂🙃", "\n", " ", "", "a\"b", "\\n"]


def chunk(choices=None, **extra):
    body = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1767225600,
            "model": "m"}
    if choices is not None:
        body["choices"] = choices
    body.update(extra)
    return body


def choice(delta, finish=None):
    return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}


class Gen:
    def __init__(self, rng):
        self.r = rng

    def chance(self, p):
        return self.r.random() < p

    def text(self):
        return "".join(self.r.choice(WORDS) for _ in range(self.r.randint(1, 3)))

    def args_pieces(self):
        r = self.r
        full = r.choice(['{"path":"a.txt","mode":420}', '{"path":"ü/🙂.md"}', "{}", "",
                         '{"path":"x"', '{"path": "a", "mode": "7"}', "not json",
                         '{"path":"a"}{"path":"b"}'])
        cuts = sorted(r.sample(range(len(full) + 1), min(len(full) + 1, r.randint(0, 4))))
        pieces, last = [], 0
        for c in cuts:
            pieces.append(full[last:c])
            last = c
        pieces.append(full[last:])
        return [p for p in pieces if p or self.chance(0.3)]

    def body(self):
        r = self.r
        events = []
        if self.chance(0.7):
            events.append(chunk([choice({"role": "assistant", "content": r.choice(["", None]),
                                         "refusal": None})]))
        reasoning_field = r.choice(["reasoning_content", "reasoning", "reasoning_text"])
        calls = 0
        for _ in range(r.randint(0, 7)):
            kind = r.choice(["text", "text", "reasoning", "tool", "tool", "odd", "refusal"])
            if kind == "text":
                events.append(chunk([choice({"content": self.text()})]))
            elif kind == "reasoning":
                events.append(chunk([choice({reasoning_field: self.text()})]))
            elif kind == "refusal":
                events.append(chunk([choice({"refusal": self.text()})]))
            elif kind == "tool":
                index = calls if self.chance(0.8) else r.randint(0, max(calls, 1))
                calls += 1
                pieces = self.args_pieces() or [""]
                for i, piece in enumerate(pieces):
                    call = {"function": {"arguments": piece}}
                    if self.chance(0.85):
                        call["index"] = index
                    if i == 0 or self.chance(0.1):
                        if self.chance(0.9):
                            call["id"] = "call_%d" % index
                        call["type"] = "function"
                        call["function"]["name"] = r.choice(["write_file", "write_file",
                                                             "other", ""])
                    events.append(chunk([choice({"tool_calls": [call]})]))
            else:
                events.append(r.choice([
                    chunk([]), chunk(None), chunk([choice({})]),
                    chunk([choice({"content": None, reasoning_field: None})]),
                    ": keep-alive",
                    chunk([choice({"content": "x"})], usage=None),
                ]))
        finish = r.choice(["stop", "length", "tool_calls", "content_filter", "function_call",
                           "eos", None, "stop"])
        usage = {"prompt_tokens": r.randint(0, 90), "completion_tokens": r.randint(0, 60),
                 "total_tokens": 150}
        if self.chance(0.5):
            usage["prompt_tokens_details"] = {"cached_tokens": r.randint(0, 20)}
        if self.chance(0.4):
            usage["completion_tokens_details"] = {"reasoning_tokens": r.randint(0, 30)}
        where = r.random()
        if finish is not None:
            if where < 0.3:
                events.append(chunk([choice({}, finish)], usage=usage))
            else:
                events.append(chunk([choice({}, finish)]))
                if where < 0.8:
                    events.append(chunk([], usage=usage))
        if self.chance(0.08):
            events.append({"error": {"message": "overloaded", "type": "server_error",
                                     "code": r.choice([None, 529, "rate"])}})
        lines = []
        for e in events:
            lines.append(e + "\n\n" if isinstance(e, str) else
                         "data: " + json.dumps(e, ensure_ascii=False) + "\n\n")
        if self.chance(0.8):
            lines.append("data: [DONE]\n\n")
        return lines

    def split(self, lines):
        """The body's bytes in chunks cut anywhere, UTF-8 characters included."""
        data = "".join(lines).encode("utf-8")
        if self.chance(0.5):
            return lines
        cuts = sorted(self.r.sample(range(1, max(len(data), 2)),
                                    min(max(len(data) - 1, 1), self.r.randint(1, 12))))
        out, last = [], 0
        for c in cuts + [len(data)]:
            out.append(data[last:c])
            last = c
        # A chunk that a cut left without whole characters goes as raw bytes.
        return [p.decode("utf-8") if self._utf8(p) else {"b64": base64.b64encode(p).decode()}
                for p in out]

    @staticmethod
    def _utf8(b):
        try:
            b.decode("utf-8")
            return True
        except UnicodeDecodeError:
            return False

    def anthropic_body(self):
        """An Anthropic Messages stream: blocks opened, filled and closed in any order."""
        r = self.r
        events = []

        def ev(kind, **data):
            data = {"type": kind, **data}
            events.append("event: %s\ndata: %s\n\n" % (kind, json.dumps(data, ensure_ascii=False)))

        usage = {"input_tokens": r.randint(0, 900), "output_tokens": 1}
        if self.chance(0.5):
            usage.update({"cache_creation_input_tokens": r.randint(0, 50),
                          "cache_read_input_tokens": r.randint(0, 50)})
        if self.chance(0.95):
            ev("message_start", message={"id": "msg_1", "type": "message", "role": "assistant",
                                         "model": "claude", "content": [], "stop_reason": None,
                                         "usage": usage})
        open_blocks = []
        for index in range(r.randint(0, 4)):
            kind = r.choice(["text", "thinking", "tool_use", "tool_use", "redacted_thinking",
                             "server_tool_use"])
            block = {"text": {"type": "text", "text": ""},
                     "thinking": {"type": "thinking", "thinking": "", "signature": ""},
                     "tool_use": {"type": "tool_use", "id": "toolu_%d" % index,
                                  "name": r.choice(["write_file", "other"]), "input": {}},
                     "redacted_thinking": {"type": "redacted_thinking", "data": "Zm9v"},
                     "server_tool_use": {"type": "server_tool_use", "id": "srv_%d" % index,
                                         "name": "web_search", "input": {}}}[kind]
            ev("content_block_start", index=index, content_block=block)
            open_blocks.append(index)
            for _ in range(r.randint(0, 3)):
                if kind == "text":
                    ev("content_block_delta", index=index,
                       delta={"type": "text_delta", "text": self.text()})
                elif kind == "thinking":
                    ev("content_block_delta", index=index,
                       delta=r.choice([{"type": "thinking_delta", "thinking": self.text()},
                                       {"type": "signature_delta", "signature": "sig" + self.text()}]))
                elif kind in ("tool_use", "server_tool_use"):
                    for piece in self.args_pieces():
                        ev("content_block_delta", index=index,
                           delta={"type": "input_json_delta", "partial_json": piece})
            if self.chance(0.3):
                ev("ping")
            if self.chance(0.85):
                ev("content_block_stop", index=index)
                open_blocks.remove(index)
        if self.chance(0.08):
            ev("error", error={"type": r.choice(["overloaded_error", "api_error"]),
                               "message": "Overloaded"})
        if self.chance(0.9):
            ev("message_delta", delta={"stop_reason": r.choice(
                ["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal",
                 "pause_turn", "model_context_window_exceeded", "odd", None]),
                "stop_sequence": None}, usage={"output_tokens": r.randint(0, 90)})
        if self.chance(0.85):
            ev("message_stop")
        return events

    def case(self, seed, i):
        if self.chance(0.5):
            return self.anthropic_case(seed, i)
        return self.completions_case(seed, i)

    def anthropic_case(self, seed, i):
        r = self.r
        options = {"maxTokens": 1024}
        if self.chance(0.4):
            options["reasoning"] = r.choice(["low", "high"])
        model = {"id": "claude-sonnet-4-5", "name": "Claude", "provider": "anthropic",
                 "baseUrl": "{{origin}}", "reasoning": True, "input": ["text"],
                 "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
                 "contextWindow": 200000, "maxTokens": 64000}
        tools = self.chance(0.7)
        chunks = self.split(self.anthropic_body())
        return make_case("anthropic-messages", seed, i, model, options, tools, chunks)

    def completions_case(self, seed, i):
        r = self.r
        provider, model_id, base, reasoning = r.choice(PROVIDERS)
        chunks = self.split(self.body())
        options = {"maxTokens": 256}
        if reasoning and self.chance(0.5):
            options["reasoning"] = r.choice(["low", "medium", "high"])
        model = {"id": model_id, "name": model_id, "provider": provider, "baseUrl": base,
                 "reasoning": reasoning, "input": ["text"],
                 "cost": {"input": 1, "output": 2, "cacheRead": 0.5, "cacheWrite": 0},
                 "contextWindow": 128000, "maxTokens": 8192}
        tools = self.chance(0.7)
        return make_case("openai-completions", seed, i, model, options, tools, chunks)


def make_case(api, seed, i, model, options, tools, chunks):
    """A case of `api` (FORMAT.md): one user turn, the tool or none, the chunks replayed."""
    name = "r%d-%04d" % (seed, i)
    return api, name, {
        "id": "%s/%s" % (api, name),
        "api": api,
        "description": "random stream %d of seed %d" % (i, seed),
        "request": {
            "model": model,
            "context": {"systemPrompt": "Be brief.",
                        "messages": [{"role": "user", "content": "Go.",
                                      "timestamp": 1767225600000}],
                        "tools": [TOOL] if tools else []},
            "options": options,
        },
        "response": {"status": 200,
                     "headers": {"content-type": "text/event-stream; charset=utf-8"},
                     "chunkDelayMs": 0, "chunks": chunks},
    }


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: random_streams.py SEED COUNT ROOT")
    seed, count, root = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    gen = Gen(random.Random(seed))
    for i in range(count):
        api, name, case = gen.case(seed, i)
        out = os.path.join(root, "streams", api)
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(case, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
