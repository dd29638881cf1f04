"""Cases for the `google-vertex` API: the recorded `google-generative-ai` exchanges replayed
against a Vertex model with an API key (Gemini's wire format at Vertex's path), plus Vertex's
own: a base URL that names its API version, a run without an API key, an abort (also written
for `google-generative-ai`, which shares the Gemini SDK).

    python3 crates/tern-ai/tests/providers/authoring/vertex.py

writes streams/google-vertex/*.json next to this folder; their expected outputs come from the
reference runner (tests/providers/reference/run.mjs), never from tern.
"""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
API = "google-vertex"
SOURCE = os.path.join(ROOT, "streams", "google-generative-ai")


def load(name):
    with open(os.path.join(SOURCE, f"{name}.json"), encoding="utf-8") as f:
        return json.load(f)


def vertex(case, name, description=None):
    case = copy.deepcopy(case)
    case["id"] = f"{API}/{name}"
    case["api"] = API
    if description:
        case["description"] = description
    model = case["request"]["model"]
    model["provider"] = "google-vertex"
    model["baseUrl"] = "{{origin}}"
    # History written by this API, so signatures and ids replay as for Gemini.
    for m in case["request"]["context"].get("messages", []):
        if m.get("role") == "assistant" and m.get("api") == "google-generative-ai":
            m["api"] = API
            m["provider"] = "google-vertex"
    return case


def write(case):
    name = case["id"].split("/", 1)[1]
    with open(os.path.join(ROOT, "streams", API, f"{name}.json"), "w", encoding="utf-8") as f:
        json.dump(case, f, indent=2, ensure_ascii=False)
        f.write("\n")


def main():
    names = sorted(f[:-5] for f in os.listdir(SOURCE) if f.endswith(".json") and f != "abort-midstream.json")
    for name in names:
        write(vertex(load(name), name))

    c = vertex(load("plain-text"), "base-url-with-api-version",
               "A base URL that names its API version gets no /v1 of its own.")
    c["request"]["model"]["baseUrl"] = "{{origin}}/vertex/v1beta1"
    write(c)

    c = vertex(load("plain-text"), "adc-without-project",
               "The ADC marker instead of a key, and no project configured: fails before any request.")
    c["request"]["options"] = {**c["request"].get("options", {}), "apiKey": "gcp-vertex-credentials"}
    write(c)

    c = vertex(load("plain-text"), "abort-midstream", "The caller aborts after the first text delta.")
    c["response"] = {**c["response"], "chunkDelayMs": 150}
    c["abortAfterEvents"] = 3
    write(c)

    # The same abort against Gemini itself: both go through the Gemini SDK.
    c = copy.deepcopy(load("plain-text"))
    c["id"] = "google-generative-ai/abort-midstream"
    c["description"] = "The caller aborts after the first text delta."
    c["response"] = {**c["response"], "chunkDelayMs": 150}
    c["abortAfterEvents"] = 3
    with open(os.path.join(SOURCE, "abort-midstream.json"), "w", encoding="utf-8") as f:
        json.dump(c, f, indent=2, ensure_ascii=False)
        f.write("\n")

    c = vertex(load("plain-text"), "custom-headers", "Model and option headers are sent with the key.")
    c["request"]["model"]["headers"] = {"x-vertex-tag": "m"}
    c["request"]["options"] = {**c["request"].get("options", {}), "headers": {"x-request-tag": "o"}}
    write(c)


if __name__ == "__main__":
    main()
