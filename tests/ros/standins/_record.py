"""The one base of every stand-in: keeps positional and keyword arguments."""


class Recorded:
    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs

    def __repr__(self):
        return f"{type(self).__name__}({self.args!r}, {self.kwargs!r})"
