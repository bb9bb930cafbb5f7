"""Stand-in for lifecycle_msgs (see ../README.md)."""
