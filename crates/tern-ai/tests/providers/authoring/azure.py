"""Cases for the `azure-openai-responses` API: the recorded `openai-responses` exchanges
replayed against an Azure model (the same wire format, Azure's auth, URL and request
differences), plus Azure's own: session ids, retries, an abort.

    python3 crates/tern-ai/tests/providers/authoring/azure.py

writes streams/azure-openai-responses/*.json next to this folder; their expected outputs come
from the reference runner (tests/providers/reference/run.mjs), never from tern.
"""
import copy

from recorded import load, retarget, write

API = "azure-openai-responses"
SOURCE = "openai-responses"
REPLAYED = ["plain-text", "utf8-midline-split", "tool-call-fragmented", "parallel-tool-calls",
            "reasoning-summary-encrypted", "usage-cache-tokens", "stop-length", "stop-content-filter",
            "error-event-midstream", "http-429", "http-500", "abrupt-end", "context-overflow",
            "keepalive-unknown-events", "response-failed", "multimodal-tool-history",
            "shape-unfinished-tool-call"]


def azure(case, name, description=None):
    case = retarget(case, API, name, description)
    model = case["request"]["model"]
    model["provider"] = "azure"
    model["baseUrl"] = "{{origin}}/openai/v1"
    model.pop("compat", None)
    return case


def main():
    for name in REPLAYED:
        write(azure(load(SOURCE, name), name))

    plain = load(SOURCE, "plain-text")
    c = azure(plain, "session-prompt-cache-key",
              "A session id becomes prompt_cache_key (even with retention none) and sends no session headers.")
    c["request"]["options"] = {"sessionId": "azure-session-0123456789-0123456789-0123456789-0123456789-overlong",
                               "cacheRetention": "none"}
    write(c)

    c = azure(plain, "strict-tools-and-tool-choice",
              "Without compat flags Azure marks tools strict: false; tool_choice is passed through.")
    c["request"]["context"]["tools"] = load(SOURCE, "tool-call-fragmented")["request"]["context"]["tools"]
    c["request"]["options"] = {"toolChoice": "auto", "temperature": 0.5}
    write(c)

    c = azure(load(SOURCE, "http-429"), "retry-429-then-text", "maxRetries 1: a 429 with retry-after 0 is retried once.")
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

    c = azure(plain, "env-scoped-settings",
              "The env option's values come before the process's: the API version and the deployment map.")
    model_id = c["request"]["model"]["id"]
    c["request"]["options"] = {"env": {
        "AZURE_OPENAI_API_VERSION": "2025-04-01-preview",
        "AZURE_OPENAI_DEPLOYMENT_NAME_MAP": f"other=unused, {model_id}=team-deployment"}}
    write(c)

    c = azure(plain, "custom-headers", "Model and option headers are sent; the key stays in api-key.")
    c["request"]["model"]["headers"] = {"x-ms-client": "tern-test"}
    c["request"]["options"] = {"headers": {"x-request-tag": "t1"}}
    write(c)


if __name__ == "__main__":
    main()
