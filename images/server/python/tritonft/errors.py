"""Error types shared by the models."""


class RequestError(ValueError):
    """A client sent a request this model refuses.

    The model turns it into a per-request Triton error response, so the message
    is what the client reads: it names the input, the offending item and the
    limit that was broken.
    """


class ModelConfigError(ValueError):
    """The model's config.pbtxt is missing or has a bad parameter.

    Raised from `initialize`, so Triton fails the model load with this message
    instead of serving with a wrong setting.
    """
