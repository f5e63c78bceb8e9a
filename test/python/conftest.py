"""Shared pytest setup for test/python.

Puts the server's Python package (images/server/python, as PYTHONPATH does in
the image) and the test-only Triton stand-in on sys.path, and builds the test
tokenizer locally once per session.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SERVER_PYTHON = REPO / "images" / "server" / "python"
MODEL_REPOSITORY = REPO / "images" / "server" / "model_repository"
CONVERT_SCRIPTS = REPO / "scripts" / "convert"

for path in (HERE / "stubs", SERVER_PYTHON, HERE / "fixtures", CONVERT_SCRIPTS):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from make_tokenizer import make_tokenizer  # noqa: E402


def load_module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def tokenizer_info(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return make_tokenizer(tmp_path_factory.mktemp("tokenizer"))


@pytest.fixture(scope="session")
def raw_tokenizer_info(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return make_tokenizer(tmp_path_factory.mktemp("tokenizer-raw"), raw=True)


def _io(name: str, data_type: str, dims: list[int], optional: bool = False) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "data_type": data_type, "dims": dims}
    if optional:
        entry["optional"] = True
    return entry


def preprocessing_config(tokenizer: dict[str, Any], max_input_len: int = 32, max_output_len: int = 16) -> dict[str, Any]:
    """The JSON form Triton passes as args['model_config'] for the contract's preprocessing model."""
    return {
        "name": "preprocessing",
        "backend": "python",
        "max_batch_size": 8,
        "input": [
            _io("text_input", "TYPE_STRING", [1]),
            _io("max_tokens", "TYPE_UINT32", [1]),
            _io("bad_words", "TYPE_STRING", [-1], optional=True),
            _io("stop_words", "TYPE_STRING", [-1], optional=True),
        ],
        "output": [
            _io("input_ids", "TYPE_UINT32", [-1]),
            _io("input_lengths", "TYPE_UINT32", [1]),
            _io("request_output_len", "TYPE_UINT32", [-1]),
            _io("bad_words_list", "TYPE_INT32", [2, -1]),
            _io("stop_words_list", "TYPE_INT32", [2, -1]),
            _io("start_id", "TYPE_UINT32", [1]),
            _io("end_id", "TYPE_UINT32", [1]),
            _io("is_return_log_probs", "TYPE_BOOL", [1]),
        ],
        "parameters": {
            "tokenizer_path": {"string_value": tokenizer["path"]},
            "start_id": {"string_value": str(tokenizer["start_id"])},
            "end_id": {"string_value": str(tokenizer["end_id"])},
            "pad_id": {"string_value": str(tokenizer["pad_id"])},
            "max_input_len": {"string_value": str(max_input_len)},
            "max_output_len": {"string_value": str(max_output_len)},
        },
    }


def postprocessing_config(tokenizer: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "postprocessing",
        "backend": "python",
        "max_batch_size": 8,
        "input": [
            _io("output_ids", "TYPE_UINT32", [-1, -1]),
            _io("sequence_length", "TYPE_UINT32", [-1]),
            _io("input_lengths", "TYPE_UINT32", [1]),
            _io("request_output_len", "TYPE_UINT32", [-1]),
        ],
        "output": [
            _io("text_output", "TYPE_STRING", [1]),
            _io("input_token_count", "TYPE_UINT32", [1]),
            _io("output_token_count", "TYPE_UINT32", [1]),
            _io("output_log_probs", "TYPE_FP32", [-1]),
            _io("cum_log_probs", "TYPE_FP32", [1]),
            _io("output_tokens", "TYPE_STRING", [-1]),
        ],
        "parameters": {
            "tokenizer_path": {"string_value": tokenizer["path"]},
            "end_id": {"string_value": str(tokenizer["end_id"])},
            "pad_id": {"string_value": str(tokenizer["pad_id"])},
        },
    }


def make_model(kind: str, model_config: dict[str, Any]) -> Any:
    module = load_module(f"{kind}_model", MODEL_REPOSITORY / kind / "1" / "model.py")
    model = module.TritonPythonModel()
    model.initialize(
        {
            "model_config": json.dumps(model_config),
            "model_instance_kind": "CPU",
            "model_instance_name": f"{kind}_0",
            "model_instance_device_id": "0",
            "model_repository": str(MODEL_REPOSITORY / kind),
            "model_version": "1",
            "model_name": kind,
        }
    )
    return model
