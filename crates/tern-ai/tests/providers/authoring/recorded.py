"""What the authoring scripts share: reading a recorded case under streams/, retargeting it
at another API, writing it back, and a model of the provider catalog.

A script imports it from its own folder (`python3 .../authoring/azure.py` puts that folder on
the import path).
"""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STREAMS = os.path.join(ROOT, "streams")
CATALOG = os.path.join(ROOT, "..", "..", "src", "providers", "catalog.json")


def load(api, name):
    """The recorded case `streams/API/NAME.json`."""
    with open(os.path.join(STREAMS, api, f"{name}.json"), encoding="utf-8") as f:
        return json.load(f)


def retarget(case, api, name, description=None):
    """A copy of `case` as case `api/name` (its description replaced when one is given)."""
    case = copy.deepcopy(case)
    case["id"] = f"{api}/{name}"
    case["api"] = api
    if description:
        case["description"] = description
    return case


def write(case):
    """Writes `case` to the file its id names (`streams/API/NAME.json`)."""
    api, name = case["id"].split("/", 1)
    with open(os.path.join(STREAMS, api, f"{name}.json"), "w", encoding="utf-8") as f:
        json.dump(case, f, indent=2, ensure_ascii=False)
        f.write("\n")


def catalog_model(provider, mid):
    """The catalog's model `mid` of `provider`, served at the test origin."""
    with open(CATALOG, encoding="utf-8") as f:
        for m in json.load(f)["models"]:
            if m["provider"] == provider and m["id"] == mid:
                m = copy.deepcopy(m)
                m["baseUrl"] = "{{origin}}"
                for k in ("inputLimits", "type"):
                    m.pop(k, None)
                return m
    raise KeyError(mid)
