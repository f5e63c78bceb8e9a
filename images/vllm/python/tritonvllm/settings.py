"""The engine settings of one served model, read from its config.pbtxt parameters.

The plan decides every number (tensor parallel, GPU memory fraction, max model
length, KV-cache size, the request limits); the renderer writes them as
string parameters, and this module turns them into vLLM engine arguments. A
missing or malformed parameter fails the model load with its name, the value
and the rule, never a silent default that differs from the plan.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tritonft.errors import ModelConfigError

DTYPES = ("auto", "float32", "float16", "bfloat16")


def _raw(config: Mapping[str, Any], name: str) -> str | None:
    entry = (config.get("parameters") or {}).get(name)
    if entry is None:
        return None
    value = entry.get("string_value") if isinstance(entry, Mapping) else entry
    if not isinstance(value, str) or value.strip() == "":
        raise ModelConfigError(f"model '{config.get('name', '?')}': parameter '{name}' must be a non-empty string_value")
    return value.strip()


def _required(config: Mapping[str, Any], name: str) -> str:
    value = _raw(config, name)
    if value is None:
        raise ModelConfigError(f"model '{config.get('name', '?')}': missing parameter '{name}' in config.pbtxt")
    return value


def _int(config: Mapping[str, Any], name: str, minimum: int, default: int | None = None) -> int:
    raw = _raw(config, name) if default is not None else _required(config, name)
    if raw is None:
        assert default is not None
        return default
    try:
        value = int(raw, 10)
    except ValueError:
        raise ModelConfigError(f"model '{config.get('name', '?')}': parameter '{name}' must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ModelConfigError(f"model '{config.get('name', '?')}': parameter '{name}' must be >= {minimum}, got {value}")
    return value


def _fraction(config: Mapping[str, Any], name: str) -> float:
    raw = _required(config, name)
    try:
        value = float(raw)
    except ValueError:
        raise ModelConfigError(f"model '{config.get('name', '?')}': parameter '{name}' must be a number, got {raw!r}") from None
    if not 0.0 < value <= 1.0:
        raise ModelConfigError(f"model '{config.get('name', '?')}': parameter '{name}' must be > 0 and <= 1, got {raw}")
    return value


@dataclass(frozen=True)
class EngineSettings:
    """What model.py needs, all from config.pbtxt (docs/vllm.md lists the parameters)."""

    model_path: str
    tensor_parallel_size: int
    gpu_memory_utilization: float
    max_model_len: int
    # KV cache size in GiB: vLLM's CPU backend reads it from VLLM_CPU_KVCACHE_SPACE;
    # on a GPU it becomes kv_cache_memory_bytes, which takes precedence over the fraction.
    kv_cache_gib: float
    max_num_seqs: int
    max_input_len: int
    max_output_len: int
    max_prompt_bytes: int
    # The most alternatives a request may ask for per token (OpenAI allows 20).
    max_logprobs: int
    dtype: str
    device: str
    # True: no CUDA graphs / compilation (faster start, slower decode); the CPU tests use it.
    enforce_eager: bool = False

    @classmethod
    def from_model_config(cls, config: Mapping[str, Any]) -> EngineSettings:
        name = config.get("name", "?")
        model_path = _required(config, "model_path")
        # A relative path would resolve against tritonserver's working directory.
        if not os.path.isabs(model_path):
            raise ModelConfigError(f"model '{name}': model_path must be absolute, got {model_path!r}")
        raw_kv = _required(config, "kv_cache_gib")
        try:
            kv_cache_gib = float(raw_kv)
        except ValueError:
            raise ModelConfigError(f"model '{name}': parameter 'kv_cache_gib' must be a number, got {raw_kv!r}") from None
        if not kv_cache_gib > 0:
            raise ModelConfigError(f"model '{name}': parameter 'kv_cache_gib' must be > 0, got {raw_kv}")
        dtype = _raw(config, "dtype") or "auto"
        if dtype not in DTYPES:
            raise ModelConfigError(f"model '{name}': parameter 'dtype' must be one of {', '.join(DTYPES)}, got {dtype!r}")
        device = _raw(config, "device") or "cuda"
        if device not in ("cuda", "cpu"):
            raise ModelConfigError(f"model '{name}': parameter 'device' must be cuda or cpu, got {device!r}")
        eager = _raw(config, "enforce_eager") or "false"
        if eager not in ("true", "false"):
            raise ModelConfigError(f"model '{name}': parameter 'enforce_eager' must be true or false, got {eager!r}")
        settings = cls(
            model_path=model_path,
            tensor_parallel_size=_int(config, "tensor_parallel_size", 1),
            gpu_memory_utilization=_fraction(config, "gpu_memory_utilization"),
            max_model_len=_int(config, "max_model_len", 2),
            kv_cache_gib=kv_cache_gib,
            max_num_seqs=_int(config, "max_num_seqs", 1),
            max_input_len=_int(config, "max_input_len", 1),
            max_output_len=_int(config, "max_output_len", 1),
            max_prompt_bytes=_int(config, "max_prompt_bytes", 1),
            max_logprobs=_int(config, "max_logprobs", 0, default=20),
            dtype=dtype,
            device=device,
            enforce_eager=eager == "true",
        )
        if settings.max_input_len + settings.max_output_len > settings.max_model_len:
            raise ModelConfigError(
                f"model '{name}': max_input_len {settings.max_input_len} + max_output_len {settings.max_output_len}"
                f" exceeds max_model_len {settings.max_model_len}"
            )
        return settings

    def engine_args(self) -> dict[str, Any]:
        """Keyword arguments of vLLM's AsyncEngineArgs."""
        args: dict[str, Any] = {
            "model": self.model_path,
            "tokenizer": self.model_path,
            "tensor_parallel_size": self.tensor_parallel_size,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "max_model_len": self.max_model_len,
            "max_num_seqs": self.max_num_seqs,
            "max_logprobs": self.max_logprobs,
            "dtype": self.dtype,
            "enforce_eager": self.enforce_eager,
            # Weights and tokenizer come from the image; never the Hub.
            "trust_remote_code": False,
            "disable_log_stats": False,
        }
        if self.device == "cuda":
            args["kv_cache_memory_bytes"] = int(self.kv_cache_gib * 1024**3)
        return args

    def environment(self) -> dict[str, str]:
        """Variables vLLM reads at engine start (set before it is imported)."""
        env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        if self.device == "cpu":
            # GiB, may be fractional only in whole numbers on some versions: round up to at least 1.
            env["VLLM_CPU_KVCACHE_SPACE"] = str(max(1, round(self.kv_cache_gib)))
        return env
