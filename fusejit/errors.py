"""Exceptions users see. Every message names the user's source line when one is known."""


class FusejitError(Exception):
    """Base class for errors raised by fusejit itself (not by the user's model)."""


class UnsupportedError(FusejitError):
    """A NumPy call or Python construct that fusejit cannot compile."""


class VerifyError(FusejitError):
    """The IR broke an invariant; names the pass that produced it when known."""


class EagerFallback(FusejitError):
    """Raised inside the tracer when recording must stop and the call must run eagerly."""

    def __init__(self, reason, loc=None):
        super().__init__(reason if loc is None else f"{reason} at {loc}")
        self.reason = reason
        self.loc = loc
