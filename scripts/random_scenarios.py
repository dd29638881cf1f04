#!/usr/bin/env python3
"""Random conformance scenarios for differential runs against the reference.

    random_scenarios.py SEED COUNT OUT_DIR

Writes COUNT scenarios (crates/tern-agent/tests/conformance/FORMAT.md) to OUT_DIR, drawn
from SEED: scripted replies with every block kind and stop reason, tools with schemas,
argument preparation and behaviours, hook rules, listeners, queued and triggered actions.
Only what the format's determinism rules (1.10) allow is drawn: the executing calls of a
parallel batch sleep 1, 41, 81 ms, aborts come at events, never at a timer. The
reference's runner gives each its expected trace (`gen.mjs` runs it twice and refuses a
trace that differs); scripts/diff-scenarios.sh drives the whole comparison.
"""

import json
import random
import sys

TOOLS = {
    "calc": {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "tag": {"type": "string"}},
        "required": ["n"],
    },
    "list": {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "string"}}},
    },
    "pick": {
        "type": "object",
        "properties": {"choice": {"enum": ["a", "b"]}, "flag": {"type": "boolean"}},
        "required": ["choice"],
        "additionalProperties": False,
    },
    "free": {"type": "object", "properties": {}},
}


class Gen:
    def __init__(self, rng):
        self.r = rng
        self.call = 0
        self.abort_inside = True

    def chance(self, p):
        return self.r.random() < p

    def text(self):
        words = ["alpha", "beta", "γάμμα", "delta 🙂", "", "x" * 7, "line\nbreak", "中文"]
        return " ".join(self.r.choice(words) for _ in range(self.r.randint(1, 3)))

    def args(self, tool):
        r = self.r
        if self.chance(0.5):
            return {"calc": {"n": r.randint(0, 5)}, "list": {"items": ["a"]},
                    "pick": {"choice": "b"}}.get(tool, {})
        if tool == "calc":
            return r.choice([{"n": r.randint(-3, 9)}, {"n": str(r.randint(0, 9))},
                             {"n": 2, "tag": "t"}, {"tag": "missing n"}, {"n": "x"},
                             {"n": 1.5}, {"n": None}, {"tag": 3, "n": 4}])
        if tool == "list":
            return r.choice([{"items": ["a", "b"]}, {"items": "one"}, {}, {"items": [1, None]},
                             {"items": {"k": 1}}])
        if tool == "pick":
            return r.choice([{"choice": "a"}, {"choice": "c"}, {"choice": "b", "flag": "true"},
                             {"choice": "a", "extra": 1}, {}])
        return r.choice([{}, {"any": [1, {"x": "y"}]}, {"s": "v"}])

    def result(self):
        r = self.r
        res = r.choice([{"text": self.text()}, {"content": []},
                        {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                        {"text": "ok", "details": {"k": r.randint(0, 3)}}])
        if self.chance(0.15):
            res["isError"] = True
        if self.chance(0.15):
            res["terminate"] = True
        if self.chance(0.1):
            res["structuredContent"] = {"v": 1}
        return res

    def behaviour(self, sleep=None, nests=True):
        r = self.r
        steps = []
        if sleep is not None:
            steps.append({"sleep": sleep})
        for _ in range(r.choice([0, 0, 1, 2])):
            steps.append({"update": {"text": "u" + str(r.randint(0, 9))}})
        if self.chance(0.12):
            steps.append(r.choice([{"do": "snapshot"}] + [{"do": "abort"}] * self.abort_inside + [
                {"do": "steer", "text": "from a tool"}, {"do": "followUp", "text": "tool follow"},
                {"do": "clearAllQueues"},
            ]))
        # A nested call reaches only `free`, which nests nothing (no endless recursion).
        if nests and self.chance(0.06):
            steps.append({"runToolCall": {"id": "nested%d" % r.randint(0, 99),
                                          "name": r.choice(["free", "ghost"]),
                                          "arguments": r.choice([{"n": 1}, {}, {"n": "z"}])}})
        b = {"steps": steps} if steps else {}
        if self.chance(0.15):
            b["throw"] = "tool failed " + str(r.randint(0, 9))
        else:
            b["result"] = self.result()
        if self.chance(0.1):
            b["lateUpdates"] = [{"update": {"text": "late"}}]
        return b

    def tool_defs(self, names):
        defs = []
        for name in names:
            d = {"name": name, "description": name + " tool", "parameters": TOOLS[name],
                 "behavior": self.behaviour(nests=name != "free")}
            if self.chance(0.2):
                d["executionMode"] = "sequential"
            if self.chance(0.25):
                d["prepareArguments"] = self.r.choice([
                    [{"op": "rename", "from": "count", "to": "n"}],
                    [{"op": "default", "key": "n", "value": 1}],
                    [{"op": "drop", "key": "extra"}],
                    [{"op": "default", "key": "items", "value": []}, {"op": "drop", "key": "tag"}],
                ])
            defs.append(d)
        return defs

    def response(self, tools, sleeps):
        """A scripted reply; its calls of known tools are noted in `sleeps` (call id -> tool)."""
        r = self.r
        content = []
        for _ in range(r.choice([0, 1, 1, 2, 3])):
            kind = r.choice(["text", "text", "thinking", "call", "call", "call"])
            if kind == "text":
                content.append({"type": "text", "text": self.text()})
            elif kind == "thinking":
                content.append({"type": "thinking", "thinking": self.text()})
            else:
                self.call += 1
                cid = "c%d" % self.call
                name = r.choice(tools + ["ghost"]) if tools else "ghost"
                if self.chance(0.1):
                    name = "ghost"
                args = self.args(name if name in TOOLS else "free")
                if name == "calc" and self.chance(0.1):
                    args = {"count": 3}
                content.append({"type": "toolCall", "id": cid, "name": name, "arguments": args})
                if name in TOOLS:
                    sleeps.append((cid, name))
        resp = {"content": content}
        roll = r.random()
        if roll < 0.07:
            resp["stopReason"] = "length"
        elif roll < 0.12:
            resp["stopReason"] = "error"
            resp["errorMessage"] = "provider said no"
        elif roll < 0.15:
            resp["stopReason"] = "aborted"
        elif roll < 0.2 and any(b["type"] == "toolCall" for b in content):
            resp["stopReason"] = "stop"
        if self.chance(0.3):
            resp["chunkSize"] = r.choice([1, 2, 4])
            if self.chance(0.2):
                # Slow deltas, so that an action at a delta lands mid-stream (1.10).
                resp["delayMs"] = 30
        if self.chance(0.2):
            resp["usage"] = {"input": r.randint(1, 50), "output": r.randint(1, 20),
                             "cacheRead": 0, "cacheWrite": 0,
                             "totalTokens": 70,
                             "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0,
                                      "cacheWrite": 0, "total": 0.003}}
        special = r.random()
        if special < 0.04:
            resp["stream"] = "final-only"
        elif special < 0.07:
            resp["throw"] = "stream function threw"
        elif special < 0.1:
            resp["noTerminal"] = True
        elif special < 0.13:
            resp["streamThrow"] = "stream broke"
            resp["throwAfterEvents"] = r.randint(0, 3)
        elif special < 0.18 and content:
            resp["restartBefore"] = [r.randint(0, len(content))]
        return resp

    def hook_actions(self, rule):
        if self.chance(0.2):
            rule["actions"] = [self.r.choice([
                {"do": "steer", "text": "hook steer"}, {"do": "followUp", "text": "hook follow"},
                {"do": "snapshot"}, {"do": "clearSteeringQueue"},
            ] + [{"do": "abort"}] * self.abort_inside)]
        return rule

    def hooks(self, tools):
        r = self.r
        h = {}
        names = tools + ["ghost"]
        if self.chance(0.4):
            rules = []
            for _ in range(r.randint(0, 2)):
                rule = {}
                m = r.choice([{"toolName": r.choice(names)}, {"n": r.randint(1, 3)},
                              {"minRepeat": 2}, {}])
                if m:
                    rule["match"] = m
                outcome = r.choice(["block", "blockReason", "terminate", "throw", "mutate", "none"])
                if outcome == "block":
                    rule["block"] = True
                elif outcome == "blockReason":
                    rule.update({"block": True, "reason": "no " + self.text()})
                elif outcome == "terminate":
                    rule.update({"block": True, "terminate": True})
                elif outcome == "throw":
                    rule["throw"] = "before failed"
                elif outcome == "mutate":
                    rule["mutateArgs"] = {"n": 42}
                rules.append(self.hook_actions(rule))
            h["beforeToolCall"] = rules
        if self.chance(0.35):
            rules = []
            for _ in range(r.randint(0, 2)):
                rule = {}
                m = r.choice([{"toolName": r.choice(names)}, {"isError": True}, {"n": 2}, {}])
                if m:
                    rule["match"] = m
                if self.chance(0.2):
                    rule["throw"] = "after failed"
                else:
                    rule["override"] = r.choice([{"text": "overridden"}, {"isError": True},
                                                 {"terminate": True}, {"details": {"d": 1}},
                                                 {"isError": False, "terminate": False}])
                rules.append(self.hook_actions(rule))
            h["afterToolCall"] = rules
        if self.chance(0.35):
            rules = []
            for _ in range(r.randint(0, 2)):
                rule = {"action": r.choice(["end", "continue"])}
                m = r.choice([{"hasToolCalls": r.choice([True, False])}, {"n": r.randint(1, 3)},
                              {"stopReason": r.choice(["stop", "toolUse"])}, {}])
                if m:
                    rule["match"] = m
                rules.append(self.hook_actions(rule))
            h["finishTurn"] = rules
        if self.chance(0.25):
            rule = r.choice([{"model": "model-b"}, {"thinkingLevel": "high"},
                             {"systemPrompt": "swapped prompt"},
                             {"contextAppend": [{"role": "user", "content": "appended"}]},
                             {"match": {"n": 2}, "model": "model-c", "thinkingLevel": "low"}])
            h["prepareRequest"] = [self.hook_actions(rule)]
        if self.chance(0.2):
            rule = r.choice([{"messages": [{"role": "user", "content": "next turn note"}]},
                             {"model": "model-b"}, {"thinkingLevel": "medium"},
                             {"match": {"stopReason": "toolUse"}, "systemPrompt": "turn prompt"}])
            h["prepareNextTurn"] = [rule]
        if self.chance(0.15):
            h["transformContext"] = {"keepLast": r.randint(0, 3)}
        if self.chance(0.1):
            h["convertToLlm"] = {"toUser": ["note"]}
        return h

    def trigger_action(self):
        r = self.r
        at = r.choice([
            {"event": "tool_execution_start"}, {"event": "tool_execution_end"},
            {"event": "turn_end"}, {"event": "message_end", "role": "assistant"},
            {"event": "message_start", "role": "toolResult"}, {"event": "turn_start", "nth": 2},
            {"event": "tool_execution_start", "nth": 2}, {"event": "agent_end"},
            {"event": "message_update", "update": "text_delta"},
        ])
        act = r.choice([
            {"do": "steer", "text": "steered " + str(r.randint(0, 9))},
            {"do": "followUp", "text": "follow " + str(r.randint(0, 9))},
            {"do": "steer", "message": {"role": "note", "content": "custom"}},
            {"do": "abort"}, {"do": "snapshot"}, {"do": "clearSteeringQueue"},
            {"do": "clearAllQueues"}, {"do": "set", "thinkingLevel": "low"},
            {"do": "prompt", "text": "while busy"},
        ])
        act["at"] = at
        return act

    def scenario(self, index):
        r = self.r
        self.call = 0
        tools = r.sample(sorted(TOOLS), r.randint(0, 3))
        parallel = self.chance(0.7)
        agent = {"tools": tools}
        if self.chance(0.6):
            agent["systemPrompt"] = "You test."
        if not parallel:
            agent["toolExecution"] = "sequential"
        if self.chance(0.3):
            agent["steeringMode"] = "all"
        if self.chance(0.3):
            agent["followUpMode"] = "all"
        if self.chance(0.2):
            agent["thinkingLevel"] = r.choice(["low", "high"])
        if self.chance(0.1):
            agent["sessionId"] = "session-1"
        if self.chance(0.15):
            agent["messages"] = r.choice([
                [{"role": "user", "content": "earlier"},
                 {"role": "assistant", "content": [{"type": "text", "text": "before"}],
                  "stopReason": "stop", "api": "scripted", "provider": "scripted",
                  "model": "model-a"}],
                [{"role": "system", "content": "seeded system"}],
                [{"role": "note", "content": "custom first"}],
            ])
        # An abort from inside a tool or hook wakes the other calls of a parallel batch in
        # the same instant, where the order of their ends is the scheduler's (1.10).
        self.abort_inside = not parallel
        defs = self.tool_defs(tools)
        model = []
        by_call = {}
        for _ in range(r.randint(1, 6)):
            calls = []
            model.append(self.response(tools, calls))
            # Executing calls of one parallel batch finish in a scripted order (1.10).
            if parallel and len(calls) > 1:
                for i, (cid, name) in enumerate(calls):
                    by_call.setdefault(name, {})[cid] = self.behaviour(
                        sleep=1 + 40 * i, nests=name != "free")
        for d in defs:
            if d["name"] in by_call:
                d["calls"] = by_call[d["name"]]
        actions = []
        if self.chance(0.2):
            actions.append({"do": r.choice(["steer", "followUp"]), "text": "queued early"})
        if self.chance(0.15):
            actions.append({"do": "prompt", "messages": r.choice([
                [{"role": "user", "content": "as messages"}],
                [{"role": "system", "content": "prompt system"},
                 {"role": "user", "content": [{"type": "text", "text": "u"}]}],
                [{"role": "note", "content": "custom prompt"},
                 {"role": "user", "content": "u2"}],
            ])})
        else:
            actions.append({"do": "prompt", "text": "go"})
        for _ in range(r.choice([0, 1, 1, 2])):
            actions.append(self.trigger_action())
        if self.chance(0.15):
            actions.append(r.choice([
                {"do": "set", "tools": r.sample(tools, r.randint(0, len(tools)))},
                {"do": "set", "model": "model-b", "thinkingLevel": "medium"},
                {"do": "set", "toolExecution": "sequential"},
                {"do": "set", "messages": [{"role": "user", "content": "replaced"}]},
            ]))
        if self.chance(0.1):
            actions.append({"do": "runToolCall",
                            "toolCall": {"id": "rt1", "name": r.choice(tools + ["ghost"]),
                                         "arguments": self.args(r.choice(sorted(TOOLS)))},
                            "tools": tools, "aborted": self.chance(0.3)})
        tail = r.random()
        if tail < 0.2:
            actions.append({"do": "prompt", "text": "again"})
        elif tail < 0.3:
            actions.append({"do": "continue"})
        elif tail < 0.35:
            actions.append({"do": "reset"})
            actions.append({"do": "prompt", "text": "after reset"})
        elif tail < 0.45:
            actions.append({"do": "snapshot"})
        s = {
            "description": "random scenario %d" % index,
            "covers": ["random"],
            "tools": defs,
            "agent": agent,
            "hooks": self.hooks(tools),
            "model": model,
            "actions": actions,
        }
        if self.chance(0.15):
            s["listeners"] = [{"name": "late", "events": ["message_end", "turn_end"]}]
            if self.chance(0.4):
                s["listeners"][0]["delayMs"] = 5
            if self.chance(0.5):
                s["listeners"][0]["unsubscribeAfter"] = r.randint(1, 3)
        if self.chance(0.15):
            # No agent: a low-level loop over the same model and tools.
            del s["agent"]
            s.pop("listeners", None)
            form = r.choice(["runAgentLoop", "agentLoop", "runAgentLoopContinue",
                             "agentLoopContinue"])
            context = {"messages": [], "tools": tools}
            if form.endswith("Continue"):
                context["messages"] = r.choice([
                    [{"role": "user", "content": "continue me"}],
                    [{"role": "user", "content": "q"},
                     {"role": "assistant", "content": [{"type": "text", "text": "a"}],
                      "stopReason": "stop", "api": "scripted", "provider": "scripted",
                      "model": "model-a"}],
                    [{"role": "system", "content": "sys"}, {"role": "user", "content": "u"}],
                    [],
                ])
            action = {"do": form, "context": context,
                      "config": {"toolExecution": "parallel" if parallel else "sequential"}}
            if not form.endswith("Continue"):
                action["prompts"] = [{"role": "user", "content": [{"type": "text",
                                                                    "text": "low"}]}]
            s["actions"] = [action]
            # The runners' harnesses differ where the format has no agent to act on: queue
            # actions inside tools, and a stream function that throws under a low-level loop.
            for resp in s["model"]:
                resp.pop("throw", None)
                resp.pop("streamThrow", None)
                resp.pop("throwAfterEvents", None)
            for d in defs:
                for b in [d["behavior"]] + list(d.get("calls", {}).values()):
                    b["steps"] = [st for st in b.get("steps", [])
                                  if st.get("do") in (None, "abort")]
            for rules in s["hooks"].values():
                for rule in rules if isinstance(rules, list) else []:
                    if "actions" in rule:
                        rule["actions"] = [a for a in rule["actions"] if a["do"] == "abort"]
            if self.chance(0.3) and form.startswith("run"):
                s["actions"].append({"do": "abort", "at": {"event": "tool_execution_start"}})
        return s


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: random_scenarios.py SEED COUNT OUT_DIR")
    seed, count, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    gen = Gen(random.Random(seed))
    for i in range(count):
        with open("%s/r%d_%04d.json" % (out, seed, i), "w", encoding="utf-8") as f:
            json.dump(gen.scenario(i), f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
