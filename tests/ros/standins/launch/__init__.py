"""Stand-in for launch (see ../README.md)."""
from _record import Recorded


class LaunchDescription(Recorded):
    @property
    def entities(self):
        return list(self.args[0]) if self.args else []
