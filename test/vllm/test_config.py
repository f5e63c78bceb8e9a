"""The vLLM model's config.pbtxt against Triton's own schema, and its settings' checks.

Parsed with `tritonclient.grpc.model_config_pb2.ModelConfig` and
`google.protobuf.text_format.Parse` (as test/triton/test_pbtxt_schema.py does
for the FT repository), which reject unknown fields, bad enum values and
wrongly typed values. The tensors must be the FT ensemble's, in its order,
plus vLLM's extras, so the gateway calls either engine alike.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from repository import REFERENCE, REFERENCE_CONFIG, REPO, cpu_settings, render_config
from tritonft.errors import ModelConfigError
from tritonvllm.settings import EngineSettings

VLLM_INPUTS = ["top_logprobs"]
VLLM_OUTPUTS = ["output_top_tokens", "output_top_log_probs"]


def parse(text: str) -> mc.ModelConfig:
    config = mc.ModelConfig()
    text_format.Parse(text, config)
    return config


def contract_tensors(kind: str) -> list[str]:
    """Tensor names of the FT ensemble, read from the renderer's source (infra/plan/modelRepository.ts)."""
    source = (REPO / "infra/plan/modelRepository.ts").read_text()
    block = re.search(rf"export const ENSEMBLE_{kind}: readonly TensorSpec\[\] = \[(.*?)\n\];", source, re.S)
    assert block, f"ENSEMBLE_{kind} not found in infra/plan/modelRepository.ts"
    return re.findall(r'^\s*t\("([a-z_]+)"', block.group(1), re.M)


def as_json(config: mc.ModelConfig) -> dict[str, Any]:
    """The shape Triton hands model.py (parameters as {"string_value": ...})."""
    return {"name": config.name, "parameters": {k: {"string_value": v.string_value} for k, v in config.parameters.items()}}


def test_committed_config_is_the_renderers_reference() -> None:
    assert REFERENCE_CONFIG.read_text() == render_config(REFERENCE)


@pytest.mark.parametrize("which", ["reference", "cpu-test"])
def test_config_parses_with_tritons_schema(which: str, tmp_path: Path) -> None:
    text = REFERENCE_CONFIG.read_text() if which == "reference" else render_config(cpu_settings(tmp_path), "gpt2")
    config = parse(text)
    assert config.backend == "python"
    assert config.model_transaction_policy.decoupled
    assert [i.name for i in config.input] == contract_tensors("INPUTS") + VLLM_INPUTS
    assert [o.name for o in config.output] == contract_tensors("OUTPUTS") + VLLM_OUTPUTS
    assert [i.name for i in config.input if not i.optional] == ["text_input", "max_tokens"]
    # Every parameter the model reads is there and valid.
    settings = EngineSettings.from_model_config(as_json(config))
    assert settings.max_input_len + settings.max_output_len <= settings.max_model_len


def test_engine_arguments_carry_the_plans_settings() -> None:
    settings = EngineSettings.from_model_config(as_json(parse(REFERENCE_CONFIG.read_text())))
    args = settings.engine_args()
    assert args["tensor_parallel_size"] == 1
    assert args["gpu_memory_utilization"] == 0.9
    assert args["max_model_len"] == 2048
    assert args["kv_cache_memory_bytes"] == 4 * 1024**3
    assert args["max_num_seqs"] == 8


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("model_path", "model", "model_path must be absolute"),
        ("gpu_memory_utilization", "1.5", "'gpu_memory_utilization' must be > 0 and <= 1"),
        ("tensor_parallel_size", "0", "'tensor_parallel_size' must be >= 1"),
        ("kv_cache_gib", "-1", "'kv_cache_gib' must be > 0"),
        ("max_output_len", "2000", "exceeds max_model_len 2048"),
        ("dtype", "int8", "'dtype' must be one of"),
    ],
)
def test_bad_parameter_fails_the_load_with_its_name(key: str, value: str, message: str) -> None:
    config = as_json(parse(REFERENCE_CONFIG.read_text()))
    config["parameters"][key] = {"string_value": value}
    with pytest.raises(ModelConfigError, match=re.escape(message)):
        EngineSettings.from_model_config(config)


def test_missing_parameter_is_named() -> None:
    config = as_json(parse(REFERENCE_CONFIG.read_text()))
    del config["parameters"]["max_model_len"]
    with pytest.raises(ModelConfigError, match="missing parameter 'max_model_len'"):
        EngineSettings.from_model_config(config)
