"""Cases for the `google-vertex` API: the recorded `google-generative-ai` exchanges replayed
against a Vertex model with an API key (Gemini's wire format at Vertex's path), plus Vertex's
own: a base URL that names its API version, a run without an API key, an abort (also written
for `google-generative-ai`, which shares the Gemini SDK).

    python3 crates/tern-ai/tests/providers/authoring/vertex.py

writes streams/google-vertex/*.json next to this folder; their expected outputs come from the
reference runner (tests/providers/reference/run.mjs), never from tern.
"""
import os

from recorded import STREAMS, load, retarget, write

API = "google-vertex"
SOURCE = "google-generative-ai"


def vertex(case, name, description=None):
    case = retarget(case, API, name, description)
    model = case["request"]["model"]
    model["provider"] = "google-vertex"
    model["baseUrl"] = "{{origin}}"
    # History written by this API, so signatures and ids replay as for Gemini.
    for m in case["request"]["context"].get("messages", []):
        if m.get("role") == "assistant" and m.get("api") == "google-generative-ai":
            m["api"] = API
            m["provider"] = "google-vertex"
    return case


def main():
    names = sorted(f[:-5] for f in os.listdir(os.path.join(STREAMS, SOURCE)) if f.endswith(".json") and f != "abort-midstream.json")
    for name in names:
        write(vertex(load(SOURCE, name), name))

    c = vertex(load(SOURCE, "plain-text"), "base-url-with-api-version",
               "A base URL that names its API version gets no /v1 of its own.")
    c["request"]["model"]["baseUrl"] = "{{origin}}/vertex/v1beta1"
    write(c)

    c = vertex(load(SOURCE, "plain-text"), "adc-without-project",
               "The ADC marker instead of a key, and no project configured: fails before any request.")
    c["request"]["options"] = {**c["request"].get("options", {}), "apiKey": "gcp-vertex-credentials"}
    write(c)

    c = vertex(load(SOURCE, "plain-text"), "abort-midstream", "The caller aborts after the first text delta.")
    c["response"] = {**c["response"], "chunkDelayMs": 150}
    c["abortAfterEvents"] = 3
    write(c)

    # The same abort against Gemini itself: both go through the Gemini SDK.
    c = retarget(load(SOURCE, "plain-text"), SOURCE, "abort-midstream",
                 "The caller aborts after the first text delta.")
    c["response"] = {**c["response"], "chunkDelayMs": 150}
    c["abortAfterEvents"] = 3
    write(c)

    c = vertex(load(SOURCE, "plain-text"), "custom-headers", "Model and option headers are sent with the key.")
    c["request"]["model"]["headers"] = {"x-vertex-tag": "m"}
    c["request"]["options"] = {**c["request"].get("options", {}), "headers": {"x-request-tag": "o"}}
    write(c)


if __name__ == "__main__":
    main()
