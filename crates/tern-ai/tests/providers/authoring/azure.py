"""Cases for the `azure-openai-responses` API: the recorded `openai-responses` exchanges
replayed against an Azure model (the same wire format, Azure's auth, URL and request
differences), plus Azure's own: session ids, retries, an abort.

    python3 crates/tern-ai/tests/providers/authoring/azure.py

writes streams/azure-openai-responses/*.json next to this folder; their expected outputs come
from the reference runner (tests/providers/reference/run.mjs), never from tern.
"""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
API = "azure-openai-responses"
SOURCE = os.path.join(ROOT, "streams", "openai-responses")
REPLAYED = ["plain-text", "utf8-midline-split", "tool-call-fragmented", "parallel-tool-calls",
            "reasoning-summary-encrypted", "usage-cache-tokens", "stop-length", "stop-content-filter",
            "error-event-midstream", "http-429", "http-500", "abrupt-end", "context-overflow",
            "keepalive-unknown-events", "response-failed", "multimodal-tool-history",
            "shape-unfinished-tool-call"]


def load(name):
    with open(os.path.join(SOURCE, f"{name}.json"), encoding="utf-8") as f:
        return json.load(f)


def azure(case, name, description=None):
    case = copy.deepcopy(case)
    case["id"] = f"{API}/{name}"
    case["api"] = API
    if description:
        case["description"] = description
    model = case["request"]["model"]
    model["provider"] = "azure"
    model["baseUrl"] = "{{origin}}/openai/v1"
    model.pop("compat", None)
    return case


def write(case):
    name = case["id"].split("/", 1)[1]
    with open(os.path.join(ROOT, "streams", API, f"{name}.json"), "w", encoding="utf-8") as f:
        json.dump(case, f, indent=2, ensure_ascii=False)
        f.write("\n")


def main():
    for name in REPLAYED:
        write(azure(load(name), name))

    plain = load("plain-text")
    c = azure(plain, "session-prompt-cache-key",
              "A session id becomes prompt_cache_key (even with retention none) and sends no session headers.")
    c["request"]["options"] = {"sessionId": "azure-session-0123456789-0123456789-0123456789-0123456789-overlong",
                               "cacheRetention": "none"}
    write(c)

    c = azure(plain, "strict-tools-and-tool-choice",
              "Without compat flags Azure marks tools strict: false; tool_choice is passed through.")
    c["request"]["context"]["tools"] = load("tool-call-fragmented")["request"]["context"]["tools"]
    c["request"]["options"] = {"toolChoice": "auto", "temperature": 0.5}
    write(c)

    c = azure(load("http-429"), "retry-429-then-text", "maxRetries 1: a 429 with retry-after 0 is retried once.")
    first = copy.deepcopy(c["response"])
    first["headers"]["retry-after"] = "0"
    c.pop("response")
    c["responses"] = [first, plain["response"]]
    c["request"]["options"] = {**c["request"]["options"], "maxRetries": 1}
    write(c)

    c = azure(plain, "abort-midstream", "The caller aborts after the first text delta.")
    c["response"] = {**c["response"], "chunkDelayMs": 150}
    c["abortAfterEvents"] = 3
    write(c)

    c = azure(plain, "custom-headers", "Model and option headers are sent; the key stays in api-key.")
    c["request"]["model"]["headers"] = {"x-ms-client": "tern-test"}
    c["request"]["options"] = {"headers": {"x-request-tag": "t1"}}
    write(c)


if __name__ == "__main__":
    main()
