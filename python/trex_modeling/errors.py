"""The error the emulated libraries raise (gurobipy.GurobiError, coptpy.CoptError)."""


class ModelingError(Exception):
    def __init__(self, errno, message=None):
        if message is None:
            errno, message = 10005, errno
        super().__init__(message)
        self.errno = errno
        self.message = message


class AttrError(ModelingError, AttributeError):
    """An attribute with no value yet (ObjVal before a solve). gurobipy raises AttributeError
    ("Unable to retrieve attribute 'ObjVal'") from attribute access, so hasattr() is False;
    being a ModelingError too, `except GurobiError` still catches it."""


class UnsupportedCall(ModelingError):
    """A call outside the emulated surface; the runner classes it apart from the program's
    own errors (exit status 68)."""
