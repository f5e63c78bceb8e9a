"""Synthetic converted FT folders for the weight-verifier and fp16 tests.

Builds the GPT-J file set the plan expects (infra/plan/weights.ts, asked
through test/lib/expected-weights.ts) for small dimensions, filled with random
fp32, plus that expected-weights JSON exactly as the plan ships it. The tests
still check the count against upstream's converter independently.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def planned_weights(family: str, tp: int, layers: int, hidden: int, heads: int, ffn: int, vocab: int, rotary: int) -> str:
    """The plan's expected weight set (infra/plan/weights.ts, without weight_data_type as the fp16 rewrite gets it), as JSON."""
    arch = {"layers": layers, "hidden": hidden, "heads": heads, "ffn": ffn, "vocab": vocab, "rotaryDims": rotary, "maxPositions": 2048, "startId": 0, "endId": 0}
    request = json.dumps({"family": family, "tp": tp, "arch": arch, "anyType": True})
    out = subprocess.run(
        ["npx", "--no-install", "tsx", str(REPO / "test" / "lib" / "expected-weights.ts"), request],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=True,
    )
    return out.stdout


def make_gptj_folder(root: Path, tp: int = 2, layers: int = 2, hidden: int = 16, heads: int = 4, ffn: int = 64, vocab: int = 40, seed: int = 0) -> tuple[Path, Path, dict[str, Any]]:
    """Write root/<tp>-gpu (fp32, as the converter leaves it) and root/expected.json."""
    folder = root / f"{tp}-gpu"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    # The file list and config.ini values are the plan's, not a copy of its formulas.
    expected: dict[str, Any] = json.loads(planned_weights("gptj", tp, layers, hidden, heads, ffn, vocab, 2))
    for entry in expected["files"]:
        rng.standard_normal(entry["elements"]).astype("<f4").tofile(folder / entry["name"])
    config = expected["config"]
    ini = "[gptj]\nmodel_name = tiny\n" + "".join(f"{k} = {v}\n" for k, v in config.items()) + "weight_data_type = fp32\n\n"
    (folder / "config.ini").write_text(ini)
    expected_path = root / "expected.json"
    expected_path.write_text(json.dumps(expected, indent=1))
    return folder, expected_path, expected
