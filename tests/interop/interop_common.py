"""Shared plumbing for Iron's interop scripts built on zenoh-ros2-sdk.

Importing this module, before anything imports ``zenoh_ros2_sdk``:

* points ``HOME`` (and the SDK's cache directory) at a throwaway directory, and
  disables the SDK's "clone message definitions from GitHub" fallback, so a
  missing definition is an error instead of a network access;
* builds a local message directory in the layout the SDK's registry expects
  (``<dir>/<package>/{msg,srv,action}/<Name>.<ext>``) from the standard Jazzy
  definitions bundled in the hiroz-codegen 0.2.1 crate (found in the cargo
  registry, or at ``IRON_STD_INTERFACES``), the corrected ``lifecycle_msgs``
  messages in ``ros/overrides/`` (hiroz-codegen's TransitionEvent has
  ``builtin_interfaces/Time timestamp`` where ROS 2 Jazzy has ``uint64``), and
  the repository's own ``msg/``, ``srv/`` and ``action/`` directories.

Action definitions are split the way rosidl splits them: ``X_Goal``,
``X_Result`` and ``X_Feedback`` from the three sections of ``X.action``, plus
``X_FeedbackMessage`` (``goal_id`` + ``feedback``), and the request/response
parts of the ``X_SendGoal`` and ``X_GetResult`` services.

The Zenoh session is opened in **client** mode, connected to the given router
endpoint only, with multicast scouting and gossip off.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, Optional, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OVERRIDES = REPO / "ros" / "overrides"
STD_PACKAGES = (
    "action_msgs",
    "builtin_interfaces",
    "lifecycle_msgs",
    "rcl_interfaces",
    "service_msgs",
    "type_description_interfaces",
    "unique_identifier_msgs",
)


def _std_interfaces() -> Path:
    """hiroz-codegen 0.2.1's bundled Jazzy definitions (cargo fetches them with the build)."""
    if os.environ.get("IRON_STD_INTERFACES"):
        return Path(os.environ["IRON_STD_INTERFACES"])
    cargo_home = Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo")
    hits = sorted(cargo_home.glob("registry/src/*/hiroz-codegen-0.2.1/assets/jazzy"))
    if not hits:
        sys.exit(
            "interop: hiroz-codegen 0.2.1 is not in the cargo registry under "
            f"{cargo_home}; run `cargo fetch` (or set IRON_STD_INTERFACES)"
        )
    return hits[0]


# Resolved before HOME is replaced below.
STD_INTERFACES = _std_interfaces()
PACKAGE = "iron"
DOMAIN_ID = int(os.environ.get("ROS_DOMAIN_ID", "0") or 0)

# --------------------------------------------------------------------------
# Sandbox: throwaway HOME, no git downloads.  Must run before the SDK import.
# --------------------------------------------------------------------------
_SANDBOX = Path(tempfile.mkdtemp(prefix="iron-interop-"))
atexit.register(shutil.rmtree, _SANDBOX, True)
os.environ["HOME"] = str(_SANDBOX / "home")
os.environ["ZENOH_ROS2_SDK_CACHE"] = str(_SANDBOX / "home" / "sdk-cache")
os.environ["GIT_TERMINAL_PROMPT"] = "0"
os.environ["GIT_ALLOW_PROTOCOL"] = "none"  # git refuses every transport
os.environ.pop("ZENOH_SESSION_CONFIG_URI", None)
os.environ.pop("ZENOH_CONFIG_OVERRIDE", None)
(_SANDBOX / "home").mkdir()

import zenoh  # noqa: E402
import zenoh_ros2_sdk  # noqa: E402
from zenoh_ros2_sdk import _cache as _sdk_cache  # noqa: E402
from zenoh_ros2_sdk import message_registry as _sdk_registry_mod  # noqa: E402
from zenoh_ros2_sdk import utils as sdk_utils  # noqa: E402
from zenoh_ros2_sdk.session import ZenohSession  # noqa: E402


def _no_download(*_args, **_kwargs):
    raise RuntimeError("interop sandbox: downloading message definitions is disabled")


# The registry only downloads for packages it maps to a repository; map none.
_sdk_registry_mod.get_repository_for_package = lambda _pkg: None
_sdk_registry_mod.clone_to_cache = _no_download
_sdk_registry_mod.get_message_file_path = _no_download
_sdk_cache.clone_to_cache = _no_download

SDK_VERSION = getattr(zenoh_ros2_sdk, "__version__", "?")


# --------------------------------------------------------------------------
# Local message directory
# --------------------------------------------------------------------------
def _strip_comment(line: str) -> str:
    return line.split("#", 1)[0].strip()


def split_sections(text: str, expected: int, what: str) -> list[str]:
    """Split a .srv/.action text on lines that are exactly '---' (rosidl rule)."""
    sections: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip() == "---":
            sections.append([])
        else:
            sections[-1].append(line)
    if len(sections) != expected:
        raise ValueError(f"{what}: expected {expected} sections, found {len(sections)}")
    return ["\n".join(s).strip("\n") + "\n" for s in sections]


def action_part_definitions(pkg: str, name: str, text: str) -> Dict[str, str]:
    """The message definitions rosidl derives from one .action file.

    Keys are full type names.  Service parts carry their Request/Response
    definition texts.  Nested types are written fully qualified
    (``pkg/action/Name_Goal``) so both the SDK hasher and rosbags resolve them
    to the right package/namespace.
    """
    goal, result, feedback = split_sections(text, 3, f"{pkg}/action/{name}")
    base = f"{pkg}/action/{name}"
    return {
        f"{base}_Goal": goal,
        f"{base}_Result": result,
        f"{base}_Feedback": feedback,
        f"{base}_FeedbackMessage": (
            "unique_identifier_msgs/msg/UUID goal_id\n" f"{base}_Feedback feedback\n"
        ),
        f"{base}_SendGoal_Request": (
            "unique_identifier_msgs/msg/UUID goal_id\n" f"{base}_Goal goal\n"
        ),
        f"{base}_SendGoal_Response": "bool accepted\nbuiltin_interfaces/msg/Time stamp\n",
        f"{base}_GetResult_Request": "unique_identifier_msgs/msg/UUID goal_id\n",
        f"{base}_GetResult_Response": f"int8 status\n{base}_Result result\n",
    }


def build_message_dir(root: Path, extra_actions: Optional[Dict[Tuple[str, str], str]] = None) -> Path:
    """Populate ``root`` with the SDK registry layout; return it."""
    root.mkdir(parents=True, exist_ok=True)
    for pkg in STD_PACKAGES:
        shutil.copytree(STD_INTERFACES / pkg, root / pkg, dirs_exist_ok=True)
    for pkg_dir in sorted(OVERRIDES.iterdir()):
        for kind in ("msg", "srv", "action"):
            if (pkg_dir / kind).is_dir():
                shutil.copytree(pkg_dir / kind, root / pkg_dir.name / kind, dirs_exist_ok=True)
    ours = root / PACKAGE
    for kind in ("msg", "srv", "action"):
        src = REPO / kind
        if src.is_dir():
            shutil.copytree(src, ours / kind, dirs_exist_ok=True)
    actions = {(PACKAGE, p.stem): p.read_text() for p in sorted((REPO / "action").glob("*.action"))}
    actions.update(extra_actions or {})
    for (pkg, name), text in actions.items():
        for full, definition in action_part_definitions(pkg, name, text).items():
            _, _, leaf = full.split("/")
            if leaf.endswith(("_Request", "_Response")):
                continue  # service parts are kept in memory, not as .msg files
            dest = root / pkg / "action" / f"{leaf}.msg"
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(definition)
    return root


MESSAGE_DIR = build_message_dir(_SANDBOX / "messages")
REGISTRY = _sdk_registry_mod.get_registry(str(MESSAGE_DIR))
if Path(REGISTRY.messages_dir) != MESSAGE_DIR:  # pragma: no cover - defensive
    raise RuntimeError("zenoh-ros2-sdk registry was created before the interop sandbox")


def our_interfaces() -> Dict[str, list[str]]:
    """Names of our interfaces: {'msg': [...], 'srv': [...], 'action': [...]}."""
    return {
        kind: sorted(p.stem for p in (REPO / kind).glob(f"*.{kind}"))
        for kind in ("msg", "srv", "action")
    }


def read_definition(type_name: str) -> str:
    """Text of a .msg (or generated action part) in the local message dir."""
    pkg, kind, name = type_name.split("/")
    return (MESSAGE_DIR / pkg / kind / f"{name}.msg").read_text()


def read_service(srv_type: str) -> Tuple[str, str]:
    pkg, kind, name = srv_type.split("/")
    text = (MESSAGE_DIR / pkg / kind / f"{name}.srv").read_text()
    req, resp = split_sections(text, 2, srv_type)
    return req, resp


def service_parts(srv_type: str) -> Tuple[str, str]:
    """(request, response) definitions of a .srv type or an action service part."""
    pkg, kind, name = srv_type.split("/")
    if kind == "srv":
        return read_service(srv_type)
    for action in our_interfaces()["action"] if pkg == PACKAGE else []:
        text = (MESSAGE_DIR / pkg / "action" / f"{action}.action").read_text()
        parts = action_part_definitions(pkg, action, text)
        if f"{srv_type}_Request" in parts:
            return parts[f"{srv_type}_Request"], parts[f"{srv_type}_Response"]
    raise KeyError(srv_type)


# --------------------------------------------------------------------------
# Type registration for (de)serialisation (rosbags store used by the SDK)
# --------------------------------------------------------------------------
_PRIMITIVES = {
    "bool", "byte", "char", "int8", "uint8", "int16", "uint16", "int32", "uint32",
    "int64", "uint64", "float32", "float64", "string", "wstring",
}


def qualify(definition: str, owner_pkg: str) -> str:
    """Rewrite short nested type names to ``pkg/msg/Type``.

    rosbags resolves a short name inside a ``pkg/srv/X_Request`` definition to
    ``pkg/srv/msg/Type`` (wrong); ROS resolves it to ``pkg/msg/Type``.  This only
    affects the local (de)serialiser, never a hash.
    """
    out = []
    for line in definition.splitlines():
        code = _strip_comment(line)
        if not code:
            out.append(line)
            continue
        words = code.split()
        if len(words) >= 2 and "=" not in code:
            typ = words[0]
            base = re.split(r"[\[<]", typ, 1)[0]
            rest = typ[len(base):]
            if base not in _PRIMITIVES:
                parts = base.split("/")
                if len(parts) == 1:
                    base = f"{owner_pkg}/msg/{base}"
                elif len(parts) == 2:
                    base = f"{parts[0]}/msg/{parts[1]}"
                code = " ".join([base + rest] + words[1:])
        out.append(code)
    return "\n".join(out) + "\n"


def session() -> ZenohSession:
    if ZenohSession._instance is None:
        raise RuntimeError("open_session() first")
    return ZenohSession._instance


def register_type(type_name: str, definition: Optional[str] = None) -> str:
    """Register ``type_name`` (and its nested types) in the SDK's type store."""
    sess = session()
    if type_name in sess._registered_types:
        return sess._registered_types[type_name]
    if definition is None:
        definition = read_definition(type_name)
    pkg = type_name.split("/")[0]
    for dep in REGISTRY._extract_dependencies(qualify(definition, pkg), type_name):
        register_type(dep)
    sess.register_message_type(qualify(definition, pkg), type_name)
    return sess._registered_types[type_name]


def message_class(type_name: str):
    key = register_type(type_name)
    return session().store.types[key]


# --------------------------------------------------------------------------
# Zenoh session
# --------------------------------------------------------------------------
def parse_endpoint(endpoint: str) -> Tuple[str, int]:
    m = re.fullmatch(r"tcp/(\[[^\]]+\]|[^:/]+):(\d+)", endpoint)
    if not m:
        raise SystemExit(f"--router must look like tcp/HOST:PORT, got {endpoint!r}")
    return m.group(1), int(m.group(2))


def zenoh_overrides(endpoint: str) -> str:
    return ";".join(
        [
            'mode="client"',
            f'connect/endpoints=["{endpoint}"]',
            "listen/endpoints=[]",
            "scouting/multicast/enabled=false",
            "scouting/gossip/enabled=false",
        ]
    )


def open_session(endpoint: str) -> ZenohSession:
    """Open the SDK's shared session as a Zenoh client of ``endpoint`` only."""
    host, port = parse_endpoint(endpoint)
    os.environ["ZENOH_CONFIG_OVERRIDE"] = zenoh_overrides(endpoint)
    try:
        return ZenohSession.get_instance(host, port)
    except Exception as exc:  # zenoh raises ZError
        raise SystemExit(f"error: cannot connect to router {endpoint}: {exc}") from exc


def raw_config(endpoint: str) -> "zenoh.Config":
    """A zenoh.Config with the same client-only settings (for raw API use)."""
    conf = zenoh.Config()
    for item in zenoh_overrides(endpoint).split(";"):
        key, value = item.split("=", 1)
        conf.insert_json5(key, value)
    return conf


# --------------------------------------------------------------------------
# Golden hashes
# --------------------------------------------------------------------------
GOLDEN_FILE = HERE / "golden_type_hashes.json"


def golden() -> Dict[str, str]:
    return json.loads(GOLDEN_FILE.read_text())


def dds_type(type_name: str) -> str:
    return sdk_utils.ros2_to_dds_type(type_name)


# --------------------------------------------------------------------------
# Discovery (liveliness tokens, via the SDK's parser)
# --------------------------------------------------------------------------
def discover(kind: str, name: str, timeout: float = 1.0) -> list[dict]:
    """Liveliness tokens of ``kind`` (SS, SC, MP, MS) for ``name``, parsed by the SDK."""
    from zenoh_ros2_sdk import discovery

    out = []
    for parsed in discovery._query_liveliness(session(), DOMAIN_ID, kind, timeout):
        q = parsed["qualified_name"]
        if (q if q.startswith("/") else "/" + q) == name:
            out.append(parsed)
    return out


def wait_for_endpoint(kind: str, name: str, type_name: str, type_hash: str, timeout: float) -> Optional[str]:
    """Wait until a matching liveliness token shows up.

    Returns None when found with the expected type and hash, otherwise a
    human-readable description of what was (or was not) found.
    """
    want_type = dds_type(type_name)
    deadline = time.monotonic() + timeout
    seen: list[dict] = []
    while True:
        seen = discover(kind, name, timeout=min(1.0, max(0.2, deadline - time.monotonic())))
        for ep in seen:
            if ep["dds_type"] == want_type and ep["type_hash"] == type_hash:
                return None
        if time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    if not seen:
        return f"no {kind} liveliness token for {name} within {timeout:.1f}s"
    got = ", ".join(f"{ep['dds_type']}/{ep['type_hash']} (node {ep['namespace']}/{ep['node_name']})" for ep in seen)
    return f"{kind} {name}: expected {want_type}/{type_hash}, advertised {got}"


# --------------------------------------------------------------------------
# Misc helpers
# --------------------------------------------------------------------------
def to_jsonable(obj):
    """rosbags message objects -> plain JSON values."""
    if hasattr(obj, "__dataclass_fields__"):
        return {k: to_jsonable(getattr(obj, k)) for k in obj.__dataclass_fields__ if k != "__msgtype__"}
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, (bytes, bytearray)):
        return obj.hex()
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(x) for x in obj]
    if isinstance(obj, float):
        return round(obj, 6)
    return obj


def emit(obj) -> None:
    print(json.dumps(obj, sort_keys=True), flush=True)


def fail(msg: str, code: int = 1):
    print(f"error: {msg}", file=sys.stderr, flush=True)
    raise SystemExit(code)


class Waiter:
    """A tiny thread-safe mailbox with timeouts."""

    def __init__(self):
        self._cv = threading.Condition()
        self._items: list = []

    def put(self, item) -> None:
        with self._cv:
            self._items.append(item)
            self._cv.notify_all()

    def get(self, timeout: float):
        deadline = time.monotonic() + timeout
        with self._cv:
            while not self._items:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                self._cv.wait(remaining)
            return self._items.pop(0)


# --------------------------------------------------------------------------
# SDK entities with explicit definitions and golden hashes
# --------------------------------------------------------------------------
CLIENT_NODE = "iron_interop"


def service_client(service_name: str, srv_type: str, timeout: float, router: str):
    """A zenoh-ros2-sdk ROS2ServiceClient for ``srv_type`` at ``service_name``.

    Definitions are passed explicitly (qualified for rosbags) and the type hash
    is the golden one (computed by the SDK's hasher), because the SDK cannot
    load services with an empty request nor action service parts by itself.
    """
    from zenoh_ros2_sdk import ROS2ServiceClient

    host, port = parse_endpoint(router)
    pkg = srv_type.split("/")[0]
    req, resp = (qualify(d, pkg) for d in service_parts(srv_type))
    for text, part in ((req, "_Request"), (resp, "_Response")):
        for dep in REGISTRY._extract_dependencies(text, srv_type + part):
            register_type(dep)
    return ROS2ServiceClient(
        service_name=service_name,
        srv_type=srv_type,
        request_definition=req,
        response_definition=resp,
        node_name=CLIENT_NODE,
        namespace="/",
        domain_id=DOMAIN_ID,
        router_ip=host,
        router_port=port,
        type_hash=golden()[srv_type],
        timeout=timeout,
    )


class CallError(Exception):
    pass


def call(client, timeout: float, **fields):
    """Call ``client`` and wait; raise CallError on timeout or an error reply."""
    box = Waiter()
    client.call_async(box.put, **fields)
    try:
        reply = box.get(timeout)
    except TimeoutError:
        raise CallError(f"no reply from {client.service_name} within {timeout:.1f}s "
                        f"(key expression {client.keyexpr})") from None
    if reply is None:
        raise CallError(f"{client.service_name} answered with an error reply or an undecodable payload")
    return reply


def request_class(client):
    return client.request_msg_class


def empty_request_fields(client) -> dict:
    """Field values for a request type that has no fields (rosidl pads it)."""
    names = [f for f in client.request_msg_class.__dataclass_fields__ if f != "__msgtype__"]
    return {name: 0 for name in names}


def shutdown(code: int):
    """Flush, close the Zenoh session (bounded), remove the sandbox, and exit."""
    sys.stdout.flush()
    sys.stderr.flush()
    inst = ZenohSession._instance
    if inst is not None:
        t = threading.Thread(target=inst.close, daemon=True)
        t.start()
        t.join(2.0)
    shutil.rmtree(_SANDBOX, ignore_errors=True)
    os._exit(code)
