"""Defence in depth behind the gateway: preprocessing refuses sampling values FT
would take unchecked (NaN, inf, zero temperature, top_k beyond the vocabulary)
and oversized prompts before tokenizing them. Each refusal is a per-request
INVALID_ARG error; the rest of the batch is served."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
import triton_python_backend_utils as pb_utils
from test_models import MAX_INPUT, MAX_OUTPUT, outputs, pre_request

from conftest import make_model, preprocessing_config
from tritonft.params import PROMPT_BYTES_PER_TOKEN

VOCAB = 512
DTYPES = {
    "top_k": np.uint32,
    "top_p": np.float32,
    "temperature": np.float32,
    "repetition_penalty": np.float32,
    "random_seed": np.uint64,
}


@pytest.fixture(scope="module")
def pre(tokenizer_info: dict[str, Any]) -> Any:
    config = preprocessing_config(tokenizer_info, MAX_INPUT, MAX_OUTPUT)
    config["parameters"]["vocab_size"] = {"string_value": str(VOCAB)}
    return make_model("preprocessing", config)


def with_sampling(request: Any, **values: float) -> Any:
    extra = [pb_utils.Tensor(name, np.array([[v]], dtype=DTYPES[name])) for name, v in values.items()]
    return pb_utils.InferenceRequest(
        inputs=list(request.inputs()) + extra, request_id="", correlation_id=0, requested_output_names=[]
    )


REFUSED = [
    ("top_k", VOCAB + 1),
    ("top_k", 4294967295),
    ("top_p", 0.0),
    ("top_p", 1.5),
    ("top_p", float("nan")),
    ("top_p", float("inf")),
    ("temperature", 0.0),
    ("temperature", -1.0),
    ("temperature", float("nan")),
    ("temperature", float("inf")),
    ("temperature", 2.5),
    ("repetition_penalty", 0.0),
    ("repetition_penalty", -0.5),
    ("repetition_penalty", float("nan")),
    ("repetition_penalty", float("-inf")),
    ("repetition_penalty", 11.0),
]


@pytest.mark.parametrize("name,value", REFUSED, ids=[f"{n}={v}" for n, v in REFUSED])
def test_out_of_range_sampling_value_is_refused_alone(pre: Any, name: str, value: float) -> None:
    responses = pre.execute(
        [pre_request(["Hello"], [4]), with_sampling(pre_request(["Hello"], [4]), **{name: value}), pre_request(["Hi"], [2])]
    )
    assert not responses[0].has_error() and not responses[2].has_error()
    assert responses[1].has_error(), f"{name}={value} was accepted"
    assert responses[1].error().code() == pb_utils.TritonError.INVALID_ARG
    assert f"{name}[0]" in responses[1].error().message()


ACCEPTED = [
    {"top_k": 0},
    {"top_k": VOCAB},
    {"top_p": 1.0},
    {"top_p": 0.01},
    {"temperature": 2.0},
    {"temperature": 0.01},
    {"repetition_penalty": 1.0},
    {"repetition_penalty": 10.0},
    {"random_seed": 2**64 - 1},
]


@pytest.mark.parametrize("values", ACCEPTED, ids=[str(v) for v in ACCEPTED])
def test_boundary_sampling_values_are_accepted(pre: Any, values: dict[str, float]) -> None:
    outputs(pre.execute([with_sampling(pre_request(["Hello"], [4]), **values)])[0])


def test_vocab_bound_defaults_to_the_tokenizers_size(tokenizer_info: dict[str, Any]) -> None:
    model = make_model("preprocessing", preprocessing_config(tokenizer_info, MAX_INPUT, MAX_OUTPUT))
    size = model.tokenizer.vocab_size()
    assert size == tokenizer_info["vocab_size"]
    ok, refused = model.execute(
        [with_sampling(pre_request(["Hello"], [4]), top_k=size), with_sampling(pre_request(["Hello"], [4]), top_k=size + 1)]
    )
    assert not ok.has_error()
    assert refused.has_error()


def test_huge_prompt_is_refused_before_tokenizing(pre: Any) -> None:
    cap = MAX_INPUT * PROMPT_BYTES_PER_TOKEN
    huge = "word " * 1_000_000  # 5 MB: seconds to tokenize
    started = time.perf_counter()
    response = pre.execute([pre_request([huge], [4])])[0]
    elapsed = time.perf_counter() - started
    assert response.has_error()
    assert f"max_prompt_bytes={cap}" in response.error().message()
    # Tokenizing 5 MB takes seconds (17.9 s measured); 1 s leaves room for a loaded CI machine.
    assert elapsed < 1.0, f"the refusal took {elapsed:.2f}s: the prompt was tokenized"


def test_prompt_at_the_byte_cap_reaches_the_token_check(pre: Any) -> None:
    cap = MAX_INPUT * PROMPT_BYTES_PER_TOKEN
    response = pre.execute([pre_request(["a" * cap], [4])])[0]
    assert response.has_error()
    assert "tokens" in response.error().message() and "max_input_len" in response.error().message()
