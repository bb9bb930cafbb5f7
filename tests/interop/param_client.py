#!/usr/bin/env python3
"""Read a node's ROS 2 parameters through zenoh-ros2-sdk (an rmw_zenoh client no one on Iron
wrote), as `ros2 param list` / `ros2 param get` would: <node>/list_parameters and
<node>/get_parameters (rcl_interfaces).

    param_client.py --router tcp/127.0.0.1:7447 --node /iron/demo [NAME ...]

Prints one JSON line: {"names": [...], "values": {NAME: value}} (the value of each NAME
asked for, by its type). Exit status: 0 on answers, 3 on a timeout or an error reply.
"""

from __future__ import annotations

import argparse
import sys

import interop_common as ic

# rcl_interfaces/msg/ParameterType: which field of a ParameterValue holds the value.
FIELDS = {1: "bool_value", 2: "integer_value", 3: "double_value", 4: "string_value",
          5: "byte_array_value", 6: "bool_array_value", 7: "integer_array_value",
          8: "double_array_value", 9: "string_array_value"}


def client(router: str, node: str, service: str, srv_type: str, timeout: float):
    name = f"{node}/{service}"
    problem = ic.wait_for_endpoint("SS", name, srv_type, ic.golden()[srv_type], timeout)
    if problem:
        print(f"warning: discovery: {problem}", file=sys.stderr, flush=True)
    return ic.service_client(name, srv_type, timeout, router)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--router", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("names", nargs="*")
    args = ap.parse_args(argv)
    node = args.node.rstrip("/")
    ic.open_session(args.router)
    try:
        lister = client(args.router, node, "list_parameters", "rcl_interfaces/srv/ListParameters", args.timeout)
        listed = ic.call(lister, args.timeout, prefixes=[], depth=0)
        out = {"names": sorted(listed.result.names), "values": {}}
        if args.names:
            getter = client(args.router, node, "get_parameters", "rcl_interfaces/srv/GetParameters", args.timeout)
            got = ic.call(getter, args.timeout, names=list(args.names))
            for name, value in zip(args.names, got.values):
                field = FIELDS.get(int(value.type))
                out["values"][name] = ic.to_jsonable(getattr(value, field)) if field else None
    except ic.CallError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    ic.emit(out)
    return 0


if __name__ == "__main__":
    ic.shutdown(main())
