"""Synthetic converted FT folders for the weight-verifier and fp16 tests.

Builds the GPT-J file set the FT converter writes (names and per-rank `.<r>`
splits as in upstream-facts.md) for small dimensions, filled with random fp32,
plus the matching expected-weights JSON in the format the TS plan writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np


def gptj_files(layers: int, hidden: int, ffn: int, vocab: int, tp: int) -> list[dict[str, Any]]:
    files = [{"name": "model.wte.bin", "elements": vocab * hidden}]
    for layer in range(layers):
        base = f"model.layers.{layer}."
        files += [
            {"name": base + "input_layernorm.bias.bin", "elements": hidden},
            {"name": base + "input_layernorm.weight.bin", "elements": hidden},
            {"name": base + "mlp.dense_4h_to_h.bias.bin", "elements": hidden},
        ]
        for rank in range(tp):
            files += [
                {"name": base + f"attention.dense.weight.{rank}.bin", "elements": hidden // tp * hidden},
                {"name": base + f"attention.query_key_value.weight.{rank}.bin", "elements": hidden * 3 * hidden // tp},
                {"name": base + f"mlp.dense_h_to_4h.bias.{rank}.bin", "elements": ffn // tp},
                {"name": base + f"mlp.dense_h_to_4h.weight.{rank}.bin", "elements": hidden * ffn // tp},
                {"name": base + f"mlp.dense_4h_to_h.weight.{rank}.bin", "elements": ffn // tp * hidden},
            ]
    files += [
        {"name": "model.final_layernorm.bias.bin", "elements": hidden},
        {"name": "model.final_layernorm.weight.bin", "elements": hidden},
        {"name": "model.lm_head.bias.bin", "elements": vocab},
        {"name": "model.lm_head.weight.bin", "elements": vocab * hidden},
    ]
    return files


def make_gptj_folder(root: Path, tp: int = 2, layers: int = 2, hidden: int = 16, heads: int = 4, ffn: int = 64, vocab: int = 40, seed: int = 0) -> tuple[Path, Path, dict[str, Any]]:
    """Write root/<tp>-gpu (fp32, as the converter leaves it) and root/expected.json."""
    folder = root / f"{tp}-gpu"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    files = gptj_files(layers, hidden, ffn, vocab, tp)
    for entry in files:
        rng.standard_normal(entry["elements"]).astype("<f4").tofile(folder / entry["name"])
    config = {
        "head_num": str(heads),
        "size_per_head": str(hidden // heads),
        "inter_size": str(ffn),
        "num_layer": str(layers),
        "rotary_embedding": "2",
        "vocab_size": str(vocab),
        "start_id": "0",
        "end_id": "0",
    }
    ini = "[gptj]\nmodel_name = tiny\n" + "".join(f"{k} = {v}\n" for k, v in config.items()) + "weight_data_type = fp32\n\n"
    (folder / "config.ini").write_text(ini)
    expected = {"family": "gptj", "tensorParallel": tp, "section": "gptj", "config": config, "files": files}
    expected_path = root / "expected.json"
    expected_path.write_text(json.dumps(expected, indent=1))
    return folder, expected_path, expected
