"""Stand-in for launch_ros (see ../README.md)."""
