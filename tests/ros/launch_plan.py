#!/usr/bin/env python3
"""Print, as JSON, the processes launch/bringup.launch.py starts and in what order.

ROS 2's `launch`/`launch_ros` cannot be installed on these machines, so the launch file is
imported against the stand-ins in ./standins (only when the real launch_ros is absent), its
launch description is read back, and its event handlers are played: the router first, then
the wait for it, then — once the wait exits with the code given — what that exit starts.

    launch_plan.py [--launch FILE] [--router ARG] [--env-router VALUE] [--wait-exit CODE]

`--router` plays `router:=ARG` on the command line, `--env-router` an IRON_ROUTER in the
environment. Output: {"declared_router_default", "steps": [{"process": name, "cmd": [...]}
| {"node": {...}}], "on_wait_failure": [...]}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def use_standins() -> bool:
    try:
        import launch_ros  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(HERE / "standins"))
        return True
    return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launch", default=str(REPO / "launch" / "bringup.launch.py"))
    ap.add_argument("--router", help="router:=ARG on the command line")
    ap.add_argument("--env-router", help="IRON_ROUTER in the environment")
    ap.add_argument("--wait-exit", type=int, default=0, help="exit code of the router wait")
    args = ap.parse_args()
    if not use_standins():
        print("the real launch_ros is installed: run this where it is not, or with ros2 launch --print",
              file=sys.stderr)
        return 2
    if args.env_router is None:
        os.environ.pop("IRON_ROUTER", None)
    else:
        os.environ["IRON_ROUTER"] = args.env_router

    from launch.actions import DeclareLaunchArgument, ExecuteProcess, RegisterEventHandler, Shutdown
    from launch.event_handlers import OnProcessExit, OnProcessStart
    from launch.substitutions import EnvironmentVariable, LaunchConfiguration
    from launch_ros.actions import LifecycleNode
    from launch_ros.event_handlers import OnStateTransition

    spec = importlib.util.spec_from_file_location("bringup_launch", args.launch)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()

    arguments = {}

    def resolve(value):
        if isinstance(value, LaunchConfiguration):
            return arguments[value.args[0]]
        if isinstance(value, EnvironmentVariable):
            return os.environ.get(value.args[0], resolve(value.kwargs.get("default_value", "")))
        if isinstance(value, (list, tuple)):
            return [resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value

    class Exit:
        def __init__(self, code):
            self.returncode = code

    out = {"steps": [], "on_wait_failure": []}

    def play(entities, steps):
        handlers = [e for e in entities if isinstance(e, RegisterEventHandler)]
        for e in entities:
            if isinstance(e, DeclareLaunchArgument):
                name = e.args[0]
                default = e.kwargs.get("default_value")
                out.setdefault("declared", {})[name] = repr(default)
                arguments[name] = args.router if (name == "router" and args.router) else resolve(default)
            elif isinstance(e, ExecuteProcess):
                steps.append({"process": e.kwargs.get("name"), "cmd": [str(c) for c in resolve(e.kwargs["cmd"])]})
            elif isinstance(e, LifecycleNode):
                k = e.kwargs
                starts = [h.args[0] for h in handlers if isinstance(h.args[0], OnProcessStart)
                          and h.args[0].kwargs.get("target_action") is e]
                activates = [h.args[0] for h in handlers if isinstance(h.args[0], OnStateTransition)
                             and h.args[0].kwargs.get("target_lifecycle_node") is e]
                steps.append({"node": {
                    "package": k.get("package"),
                    "prefix": k.get("prefix"),
                    "executable": k.get("executable"),
                    "name": k.get("name"),
                    "namespace": k.get("namespace"),
                    "arguments": [str(a) for a in k.get("arguments", [])],
                    "parameters": resolve(k.get("parameters", [])),
                    "env": resolve(k.get("additional_env", {})),
                    "respawn": k.get("respawn"),
                    "autostart": bool(starts) and bool(activates),
                }})
        for h in handlers:
            handler = h.args[0]
            if isinstance(handler, OnProcessExit):
                target = handler.kwargs["target_action"].kwargs.get("name")
                on_exit = handler.kwargs["on_exit"]
                steps.append({"after_exit_of": target, "exit_code": args.wait_exit})
                play(on_exit(Exit(args.wait_exit), None), steps)
                failed = on_exit(Exit(1), None)
                out["on_wait_failure"] = [
                    {"shutdown": s.kwargs.get("reason")} for s in failed if isinstance(s, Shutdown)
                ]

    play(description.entities, out["steps"])
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
