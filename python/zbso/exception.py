"""zbso.exception: the base of every exception zbso raises of its own (Zeus's
zeus.exception)."""


class ZeusBaseError(Exception):
    """Base of zbso's exceptions: `message` is the text, and str() gives it."""

    def __init__(self, message):
        self.message = message
        super().__init__(message)

    def __str__(self):
        return self.message


__all__ = ["ZeusBaseError"]
