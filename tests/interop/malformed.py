#!/usr/bin/env python3
"""Throw malformed requests at a lifecycle node's services and its action's services.

    malformed.py --router tcp/127.0.0.1:7447 --node /iron/demo [--action /iron/demo/task]

zenoh-ros2-sdk's service client always sends a well-formed CDR request with an
attachment, so the bad requests go out through the raw ``zenoh`` API (the SDK's
own Zenoh session), on the key expressions the SDK builds for the service
(``<domain>/<service>/<dds type>/<RIHS01 hash>``, from
``zenoh_ros2_sdk.keyexpr.topic_keyexpr``), with the SDK's attachment encoding
(``zenoh_ros2_sdk.attachment.Attachment``), query target ALL_COMPLETE and no
consolidation, as rmw_zenoh clients do.

Cases per endpoint:
    empty              zero-byte payload
    garbage            48 pseudo-random bytes
    header-only        only the 4-byte CDR encapsulation header
    truncated          a valid request cut short
    bad-encapsulation  valid body behind an unknown encapsulation id (0x7f7f)
    length-bomb        header followed by 0x7fffffff-ish lengths/values
    no-attachment      valid request, no attachment
    bad-attachment     valid request, a 3-byte attachment

Each "valid request" is harmless if a server ignores the damage: ChangeState
asks for transition id 200 (does not exist), SendGoal is a 1-step goal,
GetResult and CancelGoal name a random unknown goal.

stdout: one JSON line per (endpoint, case) with the outcome ``error-reply``
(with its text), ``reply`` (payload size, whether it decodes as the response
type), or ``no-reply`` (dropped; the query timed out); a liveness line after
each endpoint; then probes (get_state, get_result and cancel of an unknown
goal) and a summary.  Exit status 0 only if the node still answers
``get_state`` at the end.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import uuid

import numpy as np
import zenoh

import interop_common as ic
from zenoh_ros2_sdk.attachment import Attachment
from zenoh_ros2_sdk.keyexpr import topic_keyexpr

LIFECYCLE = [
    ("change_state", "lifecycle_msgs/srv/ChangeState"),
    ("get_state", "lifecycle_msgs/srv/GetState"),
    ("get_available_states", "lifecycle_msgs/srv/GetAvailableStates"),
    ("get_available_transitions", "lifecycle_msgs/srv/GetAvailableTransitions"),
    ("get_transition_graph", "lifecycle_msgs/srv/GetAvailableTransitions"),
]
CASES = ["empty", "garbage", "header-only", "truncated", "bad-encapsulation", "length-bomb",
         "no-attachment", "bad-attachment"]


def uuid_msg(raw: bytes):
    return ic.message_class("unique_identifier_msgs/msg/UUID")(uuid=np.frombuffer(raw, dtype=np.uint8).copy())


def valid_request(client, srv_type: str, action_type: str):
    cls = client.request_msg_class
    if srv_type == "lifecycle_msgs/srv/ChangeState":
        return cls(transition=ic.message_class("lifecycle_msgs/msg/Transition")(id=200, label=""))
    if srv_type.endswith("_SendGoal"):
        goal = ic.message_class(f"{action_type}_Goal")(
            task_id=f"malformed-probe-{uuid.uuid4()}", session_id="", domain="", instruction="malformed probe",
            depth=0, parent_task_id="", context_json='{"steps": 1, "step_ms": 10}')
        return cls(goal_id=uuid_msg(uuid.uuid4().bytes), goal=goal)
    if srv_type.endswith("_GetResult"):
        return cls(goal_id=uuid_msg(uuid.uuid4().bytes))
    if srv_type == "action_msgs/srv/CancelGoal":
        info = ic.message_class("action_msgs/msg/GoalInfo")(
            goal_id=uuid_msg(uuid.uuid4().bytes),
            stamp=ic.message_class("builtin_interfaces/msg/Time")(sec=0, nanosec=0))
        return cls(goal_info=info)
    return cls(**ic.empty_request_fields(client))


def cases(valid: bytes, rng: random.Random):
    att = True
    cut = len(valid) - max(1, (len(valid) - 4) // 2)
    yield "empty", b"", att
    yield "garbage", bytes(rng.getrandbits(8) for _ in range(48)), att
    yield "header-only", valid[:4], att
    yield "truncated", valid[:cut], att
    yield "bad-encapsulation", b"\x7f\x7f\x00\x00" + valid[4:], att
    yield "length-bomb", valid[:4] + b"\xf0\xff\xff\x7f" * 6, att
    yield "no-attachment", valid, None
    yield "bad-attachment", valid, b"\x01\x02\x03"


class Prober:
    def __init__(self, timeout: float):
        self.sess = ic.session()
        self.timeout = timeout
        self.gid = uuid.uuid4().bytes
        self.seq = 1000

    def query(self, keyexpr: str, payload: bytes, attachment) -> list:
        if attachment is True:
            self.seq += 1
            attachment = Attachment(sequence_id=self.seq, timestamp_ns=time.time_ns(), gid=self.gid).to_bytes()
        kwargs = dict(
            target=zenoh.QueryTarget.ALL_COMPLETE,
            consolidation=zenoh.ConsolidationMode.NONE,
            timeout=self.timeout,
            payload=zenoh.ZBytes(payload),
            encoding=zenoh.Encoding("application/cdr"),
        )
        if attachment is not None:
            kwargs["attachment"] = zenoh.ZBytes(attachment)
        replies = []
        for reply in self.sess.session.get(keyexpr, **kwargs):
            replies.append(reply)
        return replies


def describe(replies: list, client) -> tuple[str, dict]:
    if not replies:
        return "no-reply", {}
    details = []
    outcome = "reply"
    for reply in replies:
        if reply.err is not None:
            outcome = "error-reply"
            details.append({"error": reply.err.payload.to_bytes().decode("utf-8", "replace")[:300]})
            continue
        body = reply.ok.payload.to_bytes()
        d = {"bytes": len(body)}
        try:
            msg = ic.session().store.deserialize_cdr(body, client.response_store_type)
            d["decoded"] = ic.to_jsonable(msg)
        except Exception as exc:  # noqa: BLE001
            d["decoded"] = None
            d["decode_error"] = str(exc)[:200]
        att = reply.ok.attachment
        d["attachment"] = None if att is None else att.to_bytes().hex()
        details.append(d)
    return outcome, {"replies": details}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--router", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--action", default=None, help="action name (default: <node>/task; '' for none)")
    ap.add_argument("--action-type", default="iron/action/AolTask")
    ap.add_argument("--timeout", type=float, default=2.0, help="seconds per malformed query (default 2)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    node = args.node.rstrip("/")
    action = f"{node}/task" if args.action is None else args.action.rstrip("/")

    ic.open_session(args.router)
    golden = ic.golden()
    endpoints = [(f"{node}/{svc}", t) for svc, t in LIFECYCLE]
    if action:
        endpoints += [
            (f"{action}/_action/send_goal", f"{args.action_type}_SendGoal"),
            (f"{action}/_action/get_result", f"{args.action_type}_GetResult"),
            (f"{action}/_action/cancel_goal", "action_msgs/srv/CancelGoal"),
        ]
    rng = random.Random(args.seed)
    prober = Prober(args.timeout)
    get_state = ic.service_client(f"{node}/get_state", "lifecycle_msgs/srv/GetState", 3.0, args.router)

    def alive() -> bool:
        try:
            ic.call(get_state, 3.0, **ic.empty_request_fields(get_state))
            return True
        except ic.CallError:
            return False

    if not alive():
        ic.emit({"summary": "node does not answer get_state before any malformed input", "node_serves": False})
        return 3

    counts: dict[str, int] = {}
    died_after = None
    for name, srv_type in endpoints:
        problem = ic.wait_for_endpoint("SS", name, srv_type, golden[srv_type], 2.0)
        if problem:
            ic.emit({"endpoint": name, "discovery": problem})
        client = ic.service_client(name, srv_type, args.timeout, args.router)
        keyexpr = topic_keyexpr(ic.DOMAIN_ID, name, client.dds_type_name, golden[srv_type])
        valid = bytes(ic.session().store.serialize_cdr(valid_request(client, srv_type, args.action_type),
                                                         client.request_store_type))
        for case, payload, attachment in cases(valid, rng):
            outcome, detail = describe(prober.query(keyexpr, payload, attachment), client)
            counts[outcome] = counts.get(outcome, 0) + 1
            ic.emit({"endpoint": name, "case": case, "sent_bytes": len(payload), "outcome": outcome, **detail})
        client.close()
        ok = alive()
        ic.emit({"endpoint": name, "node_answers_get_state": ok})
        if not ok:
            died_after = name
            break

    probes = {}
    if died_after is None and action:
        unknown = uuid.uuid4().bytes
        gr = ic.service_client(f"{action}/_action/get_result", f"{args.action_type}_GetResult", 3.0, args.router)
        try:
            r = ic.call(gr, 3.0, goal_id=uuid_msg(unknown))
            probes["get_result_unknown_goal"] = {"status": int(r.status), "expected_status": 0}
        except ic.CallError as exc:
            probes["get_result_unknown_goal"] = {"error": str(exc)}
        cg = ic.service_client(f"{action}/_action/cancel_goal", "action_msgs/srv/CancelGoal", 3.0, args.router)
        try:
            info = ic.message_class("action_msgs/msg/GoalInfo")(
                goal_id=uuid_msg(unknown), stamp=ic.message_class("builtin_interfaces/msg/Time")(sec=0, nanosec=0))
            r = ic.call(cg, 3.0, goal_info=info)
            probes["cancel_unknown_goal"] = {"return_code": int(r.return_code), "expected_return_code": 2,
                                             "goals_canceling": len(r.goals_canceling)}
        except ic.CallError as exc:
            probes["cancel_unknown_goal"] = {"error": str(exc)}
        for name, res in probes.items():
            ic.emit({"probe": name, **res})

    serves = died_after is None and alive()
    ic.emit({"summary": counts, "node_serves": serves, **({"died_after": died_after} if died_after else {})})
    return 0 if serves else 1


if __name__ == "__main__":
    try:
        rc = main()
    except Exception:  # noqa: BLE001
        import traceback

        traceback.print_exc()
        rc = 4
    ic.shutdown(rc)
