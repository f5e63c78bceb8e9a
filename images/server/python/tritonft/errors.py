"""Error types shared by the models."""

import sys
from collections.abc import Callable
from typing import Any


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


def request_error(pb_utils: Any, message: str) -> Any:
    """A Triton error for a refused request: a client error, not a server fault.

    Python backends that know error codes (newer than the 23.05 base) map
    INVALID_ARG to HTTP 400 / gRPC INVALID_ARGUMENT; older ones take only the
    message and Triton reports it as an internal error (HTTP 500), with the
    same text.
    """
    code = getattr(pb_utils.TritonError, "INVALID_ARG", None)
    return pb_utils.TritonError(message) if code is None else pb_utils.TritonError(message, code)


def respond_each(pb_utils: Any, model: str, requests: list[Any], process: Callable[[Any], list[Any]]) -> list[Any]:
    """One response per request, in order: a refused or failing request gets its
    own error response and never takes the rest of the batch down with it."""
    responses = []
    for request in requests:
        try:
            responses.append(pb_utils.InferenceResponse(output_tensors=process(request)))
        except RequestError as err:
            responses.append(pb_utils.InferenceResponse(output_tensors=[], error=request_error(pb_utils, str(err))))
        except Exception as err:  # a bug fails this request only; the log keeps the details
            print(f"{model}: unexpected {type(err).__name__}: {err}", file=sys.stderr)
            failure = pb_utils.TritonError(f"{model} failed: {type(err).__name__}: {err}")
            responses.append(pb_utils.InferenceResponse(output_tensors=[], error=failure))
    return responses
