#!/usr/bin/env python3
"""Parse every interface file of the package with rosidl's own tools (Debian python3-rosidl).

Each msg/, srv/ and action/ file is converted to IDL by rosidl_adapter (what
rosidl_generate_interfaces does first) and the IDL parsed by rosidl_parser; a file hiroz
accepts but rosidl rejects is a defect. Prints one line per file, `ok <file>: <summary>` or
`FAIL <file>: <why>` (among rosidl_adapter's own progress lines), and exits 1 when any
failed.

    check_interfaces.py [PACKAGE_DIR]   # default: the repository
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from rosidl_adapter.action import convert_action_to_idl
from rosidl_adapter.msg import convert_msg_to_idl
from rosidl_adapter.srv import convert_srv_to_idl
from rosidl_parser.definition import Action, IdlLocator, Message, Service
from rosidl_parser.parser import parse_idl_file

CONVERT = {"msg": convert_msg_to_idl, "srv": convert_srv_to_idl, "action": convert_action_to_idl}


def summary(content) -> str:
    parts = []
    for kind, label in ((Message, "message"), (Service, "service"), (Action, "action")):
        for element in content.get_elements_of_type(kind):
            if kind is Message:
                names = [m.name for m in element.structure.members]
                parts.append(f"{label} {element.structure.namespaced_type.name} ({', '.join(names)})")
            else:
                parts.append(f"{label} {element.namespaced_type.name}")
    return "; ".join(parts)


def main() -> int:
    package = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
    failed = 0
    checked = 0
    with tempfile.TemporaryDirectory() as out:
        for kind, convert in CONVERT.items():
            for path in sorted((package / kind).glob(f"*.{kind}")):
                rel = path.relative_to(package)
                checked += 1
                try:
                    idl = Path(convert(package, "iron", rel, Path(out) / kind))
                    content = parse_idl_file(IdlLocator(Path(out), idl.relative_to(out))).content
                    print(f"ok {rel}: {summary(content)}")
                except Exception as e:  # noqa: BLE001 - report every file
                    failed += 1
                    print(f"FAIL {rel}: {type(e).__name__}: {e}")
    print(f"{checked} file(s) checked, {failed} failed")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
