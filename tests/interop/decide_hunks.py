#!/usr/bin/env python3
"""Decide hunks over ROS 2 through zenoh-ros2-sdk (an rmw_zenoh client no one on Iron wrote),
as ``ros2 service call /iron/workspace/decide_hunks iron/srv/DecideHunks`` would.

    decide_hunks.py --router tcp/127.0.0.1:7447 --operator ana --proof <proof> approve <hunk> [<hunk> ...]
    decide_hunks.py --router ... --operator ana --proof <proof> reject <hunk>

The proof is the operator's signature, printed by
``iron operator sign hunks.decide "<hunk> <hunk>" approved|rejected --operator ana``.

Prints the response as one JSON line ({"ok", "error", "decided"}). Before the call the
service's liveliness token is looked up and checked against the golden type hash (a mismatch
is reported on stderr). Exit status: 0 when the service answered (ok or not), 3 on a timeout
or an error reply.
"""

from __future__ import annotations

import argparse
import sys

import interop_common as ic

SERVICE = "/iron/workspace/decide_hunks"
SRV_TYPE = "iron/srv/DecideHunks"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--router", required=True, help="router endpoint, tcp/HOST:PORT")
    ap.add_argument("--operator", required=True, help="who decides")
    ap.add_argument("--proof", default="", help="the operator's signature (iron operator sign)")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds to wait for the reply")
    ap.add_argument("decision", choices=("approve", "reject"))
    ap.add_argument("hunks", nargs="*")
    args = ap.parse_args(argv)

    ic.open_session(args.router)
    problem = ic.wait_for_endpoint("SS", SERVICE, SRV_TYPE, ic.golden()[SRV_TYPE], args.timeout)
    if problem:
        print(f"warning: discovery: {problem}", file=sys.stderr, flush=True)
    client = ic.service_client(SERVICE, SRV_TYPE, args.timeout, args.router)
    try:
        reply = ic.call(client, args.timeout, hunks=list(args.hunks),
                        approve=args.decision == "approve", operator=args.operator,
                        proof=args.proof)
    except ic.CallError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    ic.emit({"ok": bool(reply.ok), "error": reply.error, "decided": list(reply.decided)})
    return 0


if __name__ == "__main__":
    ic.shutdown(main())
