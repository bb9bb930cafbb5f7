from _record import Recorded


class OnStateTransition(Recorded):
    pass
