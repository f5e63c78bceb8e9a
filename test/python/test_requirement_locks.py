"""The test venvs run the converters on the versions the triton_with_ft image installs.

images/triton_with_ft/lock.sh writes three locks: the image's, and the light and
torch test venvs' (test/python), the latter constrained by the image's. These
tests hold that together when someone edits a lock by hand or regenerates only
one of them: a package both the image and a test venv install has one version,
every entry is pinned with hashes, and the image lock still matches its .in.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
IMAGE = REPO / "images" / "triton_with_ft"
IMAGE_LOCK = IMAGE / "requirements.lock"
TEST_LOCKS = [REPO / "test" / "python" / "requirements.lock", REPO / "test" / "python" / "requirements-torch.lock"]

# What the convert helpers and the Python models import: each lock that should
# hold it must, so agreement cannot pass by a package vanishing from one side.
SHARED = {
    "requirements.lock": {"transformers", "tokenizers", "numpy", "huggingface-hub", "safetensors"},
    "requirements-torch.lock": {"torch", "transformers", "tokenizers", "numpy", "huggingface-hub", "safetensors"},
}

ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}\b")


def canonical(name: str) -> str:
    """PEP 503 name: the lock says huggingface-hub, the .in huggingface_hub."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_lock(path: Path) -> dict[str, tuple[str, int]]:
    """{name: (version, number of hashes)} of a pip-compile style lock."""
    entries: dict[str, tuple[str, int]] = {}
    current: str | None = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if m := ENTRY.match(line):
            current = canonical(m.group(1))
            assert current not in entries, f"{path.name}: {current} listed twice"
            entries[current] = (m.group(2), 0)
        elif line.startswith("--hash="):
            assert current is not None, f"{path.name}: a hash before any package: {line}"
            assert HASH.match(line), f"{path.name}: {current}: not a sha256 hash: {line}"
            version, hashes = entries[current]
            entries[current] = (version, hashes + 1)
        else:
            pytest.fail(f"{path.name}: not a pinned entry or hash: {raw!r}")
    return entries


def parse_in(path: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            m = ENTRY.match(line)
            assert m, f"{path.name}: top-level requirements are pinned with ==: {raw!r}"
            pins[canonical(m.group(1))] = m.group(2)
    return pins


def versions(path: Path) -> dict[str, str]:
    return {name: version for name, (version, _) in parse_lock(path).items()}


@pytest.mark.parametrize("lock", [IMAGE_LOCK, *TEST_LOCKS], ids=lambda p: str(p.relative_to(REPO)))
def test_every_entry_is_pinned_with_hashes(lock: Path) -> None:
    entries = parse_lock(lock)
    assert len(entries) > 10
    assert [name for name, (_, hashes) in entries.items() if hashes == 0] == []


def test_image_lock_pins_the_top_level_packages_at_their_in_versions() -> None:
    locked = versions(IMAGE_LOCK)
    wanted = parse_in(IMAGE / "requirements.in")
    assert {name: locked.get(name) for name in wanted} == wanted


@pytest.mark.parametrize("lock", TEST_LOCKS, ids=lambda p: p.name)
def test_test_venv_and_image_agree_on_shared_packages(lock: Path) -> None:
    image, test = versions(IMAGE_LOCK), versions(lock)
    missing = {name for name in SHARED[lock.name] if name not in image or name not in test}
    assert missing == set(), f"expected in both {lock.name} and the image lock"
    differ = {name: (test[name], image[name]) for name in test.keys() & image.keys() if test[name] != image[name]}
    assert differ == {}, f"{lock.name} vs images/triton_with_ft/requirements.lock (test, image); rerun images/triton_with_ft/lock.sh"


def test_this_venv_has_the_image_versions() -> None:
    # The venv running this suite was built from one of the test locks; what it
    # actually imports must be the image's version too.
    image = versions(IMAGE_LOCK)
    installed = {canonical(d.metadata["Name"]): d.version for d in metadata.distributions()}
    shared = sorted(image.keys() & installed.keys())
    assert "transformers" in shared
    assert {n: installed[n] for n in shared} == {n: image[n] for n in shared}
