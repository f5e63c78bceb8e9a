"""Helpers for the torch suite (run only from the requirements-torch.lock venv).

Torch is imported at module level on purpose: in this suite a missing torch is
a collection error, never a silent skip.
"""

from __future__ import annotations

import subprocess
import sys

import torch

from conftest import CONVERT_SCRIPTS


def run_script(name: str, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CONVERT_SCRIPTS / name), *map(str, args)], capture_output=True, text=True, timeout=600
    )


def randomise(model: torch.nn.Module, seed: int) -> None:
    """Random values in every parameter, layer norms included, so no mixed-up tensor goes unnoticed."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.randn(param.shape, generator=generator) * 0.2)
