"""The numpy dtypes of a model's outputs, read from its config.pbtxt."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tritonft.errors import ModelConfigError


def output_dtypes(pb_utils: Any, model_config: Mapping[str, Any], model: str, names: Iterable[str]) -> dict[str, Any]:
    """Each named output's numpy dtype, as config.pbtxt declares it.

    The models build their output tensors with these, so a config that changes
    a type changes what they send; an output missing from the config fails the
    model load (ModelConfigError) rather than the first request.
    `pb_utils` is passed in: this package never imports Triton.
    """
    dtypes: dict[str, Any] = {}
    for name in names:
        output = pb_utils.get_output_config_by_name(model_config, name)
        if output is None:
            raise ModelConfigError(f"{model} config.pbtxt has no output '{name}'")
        dtypes[name] = pb_utils.triton_string_to_numpy(output["data_type"])
    return dtypes
