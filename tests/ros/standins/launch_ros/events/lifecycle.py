from _record import Recorded


class ChangeState(Recorded):
    pass
