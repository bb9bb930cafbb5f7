#!/usr/bin/env python3
"""Write the standard interface packages `iron` depends on (builtin_interfaces,
unique_identifier_msgs, action_msgs) as colcon packages into OUT, from the ROS 2 Jazzy
definitions bundled in the hiroz-codegen crate (in the cargo registry, or at
IRON_STD_INTERFACES). A ROS 2 distribution ships these packages; Debian does not, so the
colcon check builds them first, with the same rosidl tool chain.

    std_packages.py OUT
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

PACKAGES = {
    "builtin_interfaces": [],
    "unique_identifier_msgs": [],
    "action_msgs": ["builtin_interfaces", "unique_identifier_msgs"],
}

CMAKE = """cmake_minimum_required(VERSION 3.16)
project({name} C CXX)
find_package(ament_cmake REQUIRED)
find_package(rosidl_default_generators QUIET)
if(NOT rosidl_default_generators_FOUND)
  find_package(rosidl_cmake REQUIRED)
  find_package(rosidl_generator_c REQUIRED)
  find_package(rosidl_generator_cpp REQUIRED)
endif()
{finds}
rosidl_generate_interfaces(${{PROJECT_NAME}} {files}{deps})
ament_package()
"""

XML = """<?xml version="1.0"?>
<package format="3">
  <name>{name}</name>
  <version>0.0.0</version>
  <description>ROS 2 Jazzy's {name} definitions (stand-in for the distribution's package).</description>
  <maintainer email="iron@example.invalid">Iron maintainers</maintainer>
  <license>Apache-2.0</license>
  <buildtool_depend>ament_cmake</buildtool_depend>
  <buildtool_depend>rosidl_default_generators</buildtool_depend>
{depends}  <member_of_group>rosidl_interface_packages</member_of_group>
  <export><build_type>ament_cmake</build_type></export>
</package>
"""


def std_dir() -> Path:
    if os.environ.get("IRON_STD_INTERFACES"):
        return Path(os.environ["IRON_STD_INTERFACES"])
    cargo_home = Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo")
    hits = sorted(cargo_home.glob("registry/src/*/hiroz-codegen-0.2.1/assets/jazzy"))
    if not hits:
        sys.exit("hiroz-codegen 0.2.1 is not in the cargo registry (run `cargo fetch`), "
                 "or set IRON_STD_INTERFACES")
    return hits[0]


def main() -> int:
    out = Path(sys.argv[1])
    std = std_dir()
    for name, deps in PACKAGES.items():
        pkg = out / name
        files = []
        for kind in ("msg", "srv"):
            src = std / name / kind
            if src.is_dir():
                shutil.copytree(src, pkg / kind, dirs_exist_ok=True)
                files += [f'"{kind}/{f.name}"' for f in sorted(src.glob(f"*.{kind}"))]
        (pkg / "CMakeLists.txt").write_text(CMAKE.format(
            name=name,
            finds="\n".join(f"find_package({d} REQUIRED)" for d in deps),
            files=" ".join(files),
            deps=(" DEPENDENCIES " + " ".join(deps)) if deps else "",
        ))
        (pkg / "package.xml").write_text(XML.format(
            name=name, depends="".join(f"  <depend>{d}</depend>\n" for d in deps)))
        print(f"{name}: {len(files)} interface(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
