"""Abort cases for the four original APIs: each one's plain-text exchange, with the caller
aborting right after the first text delta (`abortAfterEvents`, understood by the project's
reference runner and by tern's replay runner) and room between chunks so the abort lands
between them.

    python3 crates/tern-ai/tests/providers/authoring/aborts.py

writes streams/<api>/abort-midstream.json next to this folder (google-generative-ai's is
written by vertex.py); their expected outputs come from the reference runner, never from tern.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def main():
    for api in ["openai-completions", "openai-responses", "anthropic-messages"]:
        with open(os.path.join(ROOT, "streams", api, "plain-text.json"), encoding="utf-8") as f:
            case = json.load(f)
        case["id"] = f"{api}/abort-midstream"
        case["description"] = "The caller aborts after the first text delta."
        case["response"] = {**case["response"], "chunkDelayMs": 150}
        case["abortAfterEvents"] = 3
        with open(os.path.join(ROOT, "streams", api, "abort-midstream.json"), "w", encoding="utf-8") as f:
            json.dump(case, f, indent=2, ensure_ascii=False)
            f.write("\n")


if __name__ == "__main__":
    main()
