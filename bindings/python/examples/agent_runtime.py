"""An agent runtime's side of aurora_mcp, in miniature.

1. Start the host on a config directory and export its frozen tools as
   LLM tool definitions (name, description, JSON Schema).
2. Feed the model's tool calls through Host.call.
3. Handle the three outcomes the way a runtime must:
   succeeded -> hand the result to the model;
   failed    -> nothing happened: tell the model, it may try again;
   unknown   -> it may have happened: never retry blindly, surface it.

usage: python3 agent_runtime.py CONFIG_DIR
(the "model" here is a fixed list of tool calls; a real runtime gets them
from its LLM.)
"""
import json
import sys

from aurora_mcp import Host


def tool_definitions(host):
    """The frozen tools as LLM tool definitions.  Tool ids hold dots,
    which some LLM APIs refuse in names: map them both ways."""
    defs, by_name = [], {}
    for t in host.tools:
        name = t.id.replace(".", "__")
        by_name[name] = t.id
        defs.append({"name": name, "description": t.description,
                     "input_schema": t.input_schema})
    return defs, by_name


def run_tool_call(host, by_name, name, arguments):
    """One model tool call -> the message that goes back to the model."""
    tool_id = by_name.get(name)
    if tool_id is None:
        return {"is_error": True, "content": f"no tool named {name}"}
    out = host.call(tool_id, arguments, timeout=30.0)
    if out.succeeded:
        return {"is_error": False, "content": out.text}
    if out.failed:
        return {"is_error": True,
                "content": f"the tool did not run ({out.text}); you may try "
                           "again or differently"}
    # unknown: it may have run.  A payment or a message may have gone
    # out: do not let the model repeat it; a human or a check decides.
    return {"is_error": True,
            "content": f"the outcome is unknown ({out.text}); do NOT repeat "
                       "this call, ask the user to check first"}


def main(config_dir):
    with Host(config_dir) as host:
        defs, by_name = tool_definitions(host)
        print(json.dumps({"tools": defs})[:200] + " ...")
        model_calls = [
            ("aur__mcp__org__aurora__demo__add", {"a": 2, "b": 40}),
            ("aur__mcp__org__aurora__demo__fail", {}),
            ("aur__mcp__org__aurora__demo__nope", {}),
        ]
        for name, args in model_calls:
            reply = run_tool_call(host, by_name, name, args)
            print(name, "->", json.dumps(reply))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "examples/demo")
