"""Reading a local Hugging Face checkpoint directory, whatever its weight layout.

Shared by consolidate_checkpoint.py and codegen_to_gptj.py. Needs torch (and
safetensors for .safetensors checkpoints); never touches the network.

Layouts understood:
- model.safetensors, or model-0000X-of-0000N.safetensors + model.safetensors.index.json
- pytorch_model.bin, or pytorch_model-0000X-of-0000N.bin + pytorch_model.bin.index.json
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

SAFETENSORS_INDEX = "model.safetensors.index.json"
BIN_INDEX = "pytorch_model.bin.index.json"
_SHARD = re.compile(r"^(model|pytorch_model)-(\d+)-of-(\d+)\.(safetensors|bin)$")
# Files that hold weights (or other frameworks' weights) and so are never copied
# alongside a rewritten checkpoint: a stray *.bin would be globbed by FT's
# GPT-NeoX converter as if it were a shard.
_WEIGHT_SUFFIXES = (".bin", ".safetensors", ".h5", ".msgpack", ".ot", ".pt", ".pth", ".ckpt", ".onnx", ".gguf")
_WEIGHT_INDEXES = (SAFETENSORS_INDEX, BIN_INDEX, "tf_model.h5.index.json", "flax_model.msgpack.index.json")


class CheckpointError(RuntimeError):
    """The directory does not hold a usable checkpoint."""


def _from_index(directory: Path, index_name: str) -> list[Path]:
    index_path = directory / index_name
    try:
        index = json.loads(index_path.read_text())
        weight_map = index["weight_map"]
    except (OSError, ValueError, KeyError) as err:
        raise CheckpointError(f"{index_path}: unreadable shard index ({err})") from None
    names = sorted(set(weight_map.values()))
    missing = [n for n in names if not (directory / n).is_file()]
    if missing:
        raise CheckpointError(f"{index_path} lists shards that are missing: {', '.join(missing)}")
    return [directory / n for n in names]


def _shards(directory: Path, suffix: str) -> list[Path]:
    found = sorted(p for p in directory.iterdir() if (m := _SHARD.match(p.name)) and m.group(4) == suffix)
    if not found:
        return []
    totals = {int(_SHARD.match(p.name).group(3)) for p in found}  # type: ignore[union-attr]
    if len(totals) != 1 or len(found) != totals.pop():
        raise CheckpointError(
            f"{directory}: incomplete or mixed {suffix} shard set: {', '.join(p.name for p in found)}"
        )
    return found


def find_weight_files(directory: Path) -> tuple[str, list[Path]]:
    """Return ("safetensors" | "bin", files). Safetensors wins when both exist:
    it loads without unpickling."""
    if not directory.is_dir():
        raise CheckpointError(f"{directory} is not a directory")
    for kind, single, index in (("safetensors", "model.safetensors", SAFETENSORS_INDEX), ("bin", "pytorch_model.bin", BIN_INDEX)):
        if (directory / index).is_file():
            return kind, _from_index(directory, index)
        if (directory / single).is_file():
            return kind, [directory / single]
        shards = _shards(directory, kind)
        if shards:
            return kind, shards
    raise CheckpointError(
        f"{directory}: no weights found (expected model.safetensors, pytorch_model.bin, or their shards + index)"
    )


def _torch_load(path: Path) -> dict[str, Any]:
    import torch

    state: dict[str, Any]  # torch.load is untyped to mypy (torch is not in the lint venv)
    try:
        # mmap keeps peak RAM near one copy of the model; weights_only refuses pickled code.
        state = torch.load(str(path), map_location="cpu", weights_only=True, mmap=True)
    except TypeError:  # an older torch without these keywords
        state = torch.load(str(path), map_location="cpu")
    except RuntimeError as err:
        # Legacy (pre-zipfile) checkpoints cannot be memory-mapped.
        if "mmap" not in str(err):
            raise
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    return state


def load_state_dict(directory: Path) -> dict[str, Any]:
    """All tensors of the checkpoint in `directory`, on the CPU, merged across shards."""
    kind, files = find_weight_files(directory)
    state: dict[str, Any] = {}
    for file in files:
        if kind == "safetensors":
            from safetensors.torch import load_file

            part = load_file(str(file), device="cpu")
        else:
            part = _torch_load(file)
            if not isinstance(part, dict):
                raise CheckpointError(f"{file}: expected a state dict, got {type(part).__name__}")
        duplicated = state.keys() & part.keys()
        if duplicated:
            raise CheckpointError(f"{file}: tensors also present in another shard: {', '.join(sorted(duplicated)[:5])}")
        state.update(part)
    if not state:
        raise CheckpointError(f"{directory}: the checkpoint holds no tensors")
    return state


def is_weight_file(path: Path) -> bool:
    return path.name in _WEIGHT_INDEXES or path.name.endswith(_WEIGHT_SUFFIXES)


def copy_side_files(src: Path, dst: Path, skip: tuple[str, ...] = ()) -> list[str]:
    """Copy config/tokenizer/readme files (every top-level non-weight file) from src to dst."""
    copied = []
    for path in sorted(src.iterdir()):
        if path.is_file() and not is_weight_file(path) and path.name not in skip:
            shutil.copy2(path, dst / path.name)
            copied.append(path.name)
    return copied


def prepare_output(output: Path, source: Path) -> Path:
    """Validate the output dir and return a fresh temp sibling to write into.

    Writing happens in the temp dir, which is renamed to `output` only when
    complete, so an interrupted run never leaves a plausible-looking checkpoint.
    """
    if output.resolve() == source.resolve():
        raise CheckpointError("--output must differ from --input")
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise CheckpointError(f"{output} already exists and is not an empty directory")
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.parent / f".{output.name}.partial"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    return tmp


def publish(tmp: Path, output: Path) -> None:
    if output.exists():
        output.rmdir()  # prepare_output guaranteed it is empty
    tmp.rename(output)


def discard(tmp: Path | None) -> None:
    """Remove an unfinished temp output after a failure."""
    if tmp is not None and tmp.exists():
        shutil.rmtree(tmp, ignore_errors=True)
