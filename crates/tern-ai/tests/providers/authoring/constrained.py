"""Cases for JSON-schema constrained sampling on every API: a plain-text exchange whose request
declares tools with `constrainedSampling` (`strict: "prefer"`), one schema that fits the
strict subset, one that does not (it falls back), one a provider's own rules reject, and a
tool without it; each API's strict support switched on where a compat flag governs it.

    python3 crates/tern-ai/tests/providers/authoring/constrained.py

writes streams/<api>/constrained-tools.json; their expected outputs come from the reference
runner (tests/providers/reference/run.mjs), never from tern.
"""
from recorded import load, retarget, write

PREFER = {"type": "json_schema", "strict": "prefer"}
TOOLS = [
    {"name": "read", "description": "Read a file.", "constrainedSampling": PREFER,
     "parameters": {"type": "object", "properties": {
         "path": {"type": "string", "description": "The file."},
         "offset": {"type": "number"},
         "mode": {"type": "string", "enum": ["text", "bytes"]},
         "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}}},
         "required": ["path"]}},
    {"name": "loose", "description": "A schema strict mode cannot express.", "constrainedSampling": PREFER,
     "parameters": {"type": "object", "properties": {"anything": {}}}},
    {"name": "mailer", "description": "Bounds some strict modes reject.", "constrainedSampling": PREFER,
     "parameters": {"type": "object", "properties": {
         "to": {"type": "string", "format": "email"},
         "count": {"type": "integer", "minimum": 1}}, "required": ["to"]}},
    {"name": "plain", "description": "No constrained sampling.",
     "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
]

# api: (source case, model changes): strict support switched on where a compat flag governs it.
STRICT_APIS = {
    "openai-completions": ("plain-text", {"compat": {"supportsStrictMode": True}}),
    "openai-responses": ("plain-text", {}),
    "azure-openai-responses": ("plain-text", {}),
    "openai-codex-responses": ("plain-text", {}),
    "anthropic-messages": ("plain-text", {"compat": {"supportsStrictTools": True}}),
    "bedrock-converse-stream": ("text-basic", {"compat": {"supportsStrictMode": True}}),
    "mistral-conversations": ("plain-text", {"compat": {"supportsStrictMode": True}}),
    "google-generative-ai": ("plain-text", {"id": "gemini-3-pro-preview"}),
    "google-vertex": ("plain-text", {"id": "gemini-3-pro-preview"}),
}


def strict_case(api, name, description):
    """The API's source case retargeted as `name`, with its model's strict support on."""
    source, changes = STRICT_APIS[api]
    case = retarget(load(api, source), api, name, description)
    model = case["request"]["model"]
    for key, value in changes.items():
        if key == "compat":
            model["compat"] = {**model.get("compat", {}), **value}
        else:
            model[key] = value
    return case


def main():
    for api in STRICT_APIS:
        case = strict_case(api, "constrained-tools",
                           "Tools with constrainedSampling prefer: strict where the schema fits and the "
                           "provider supports strict tools, as declared otherwise.")
        case["request"]["context"]["tools"] = TOOLS
        write(case)


if __name__ == "__main__":
    main()
