"""Every config.pbtxt synth renders, checked against Triton's real schema.

test/triton/render-presets.ts renders, through synth, every catalog preset on
each serving shape the stack validation accepts, plus the Python stand-in
variant the real-server suite serves. Each file is parsed with
`tritonclient.grpc.model_config_pb2.ModelConfig` and
`google.protobuf.text_format.Parse`, which rejects unknown fields, bad enum
values and wrongly typed values. The ensemble wiring is then checked the way
Triton checks it at load, for every variant, without a server.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("ensemble", "preprocessing", "fastertransformer", "postprocessing")


@pytest.fixture(scope="session")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Output of render-presets. A preset synth fails on is reported by
    test_synth_renders_every_preset; the other tests check what did render."""
    out = tmp_path_factory.mktemp("rendered")
    tsx = ROOT / "node_modules" / "tsx" / "dist" / "cli.mjs"
    result = subprocess.run(
        ["node", str(tsx), str(ROOT / "test/triton/render-presets.ts"), str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert (out / "variants.json").is_file(), f"render-presets crashed:\n{result.stdout}\n{result.stderr}"
    assert variants(out), f"render-presets rendered nothing:\n{result.stderr}"
    return out


def variants(root: Path) -> list[Path]:
    """The FasterTransformer variants: four models each."""
    return sorted(p for p in root.iterdir() if (p / "model-repository" / "fastertransformer").is_dir())


def vllm_variants(root: Path) -> list[Path]:
    """The vLLM variants (issue 37): one decoupled Python model, `ensemble`."""
    return sorted(
        p
        for p in root.iterdir()
        if (p / "model-repository" / "ensemble").is_dir() and not (p / "model-repository" / "fastertransformer").exists()
    )


def parse(path: Path) -> mc.ModelConfig:
    config = mc.ModelConfig()
    text_format.Parse(path.read_text(), config)
    return config


def load(variant: Path) -> dict[str, mc.ModelConfig]:
    return {m: parse(variant / "model-repository" / m / "config.pbtxt") for m in MODELS}


def test_synth_renders_every_preset(rendered: Path) -> None:
    index = json.loads((rendered / "variants.json").read_text())
    assert index["presets"], "the catalog is empty"
    failures = index["failures"]
    assert not failures, "synth failed for:\n" + "\n".join(f"  {k}: {v}" for k, v in sorted(failures.items()))
    covered = set(index["variants"].values()) | set(index["vllmVariants"].values())
    missing = [p for p in index["presets"] if p not in covered]
    assert not missing, f"presets without a rendered variant: {missing}"
    assert sorted(index["variants"]) + ["standin-python-backend"] == sorted(v.name for v in variants(rendered))
    assert sorted(index["vllmVariants"]) == sorted(v.name for v in vllm_variants(rendered))
    # A family only vLLM serves (llama) renders there; every Hugging Face preset renders on vLLM too.
    assert "tinyllama-1.1b" in index["vllmVariants"].values()


def test_every_config_parses_with_tritons_schema(rendered: Path) -> None:
    files = sorted(rendered.glob("*/model-repository/*/config.pbtxt"))
    assert len(files) == 4 * len(variants(rendered)) + len(vllm_variants(rendered))
    failures = []
    for path in files:
        try:
            config = parse(path)
        except text_format.ParseError as err:
            failures.append(f"{path.relative_to(rendered)}: {err}")
            continue
        if config.name != path.parent.name:
            failures.append(f"{path.relative_to(rendered)}: name {config.name!r} != folder {path.parent.name!r}")
    assert not failures, "\n".join(failures)


def test_models_agree_on_batching_and_backends(rendered: Path) -> None:
    for variant in variants(rendered):
        configs = load(variant)
        sizes = {m: c.max_batch_size for m, c in configs.items()}
        assert len(set(sizes.values())) == 1 and sizes["ensemble"] > 0, f"{variant.name}: {sizes}"
        ensemble = configs["ensemble"]
        if ensemble.platform != "ensemble":
            # Streaming (serving.streaming): FT decoupled, and `ensemble` a decoupled Python model running the steps.
            assert ensemble.backend == "python", variant.name
            assert ensemble.model_transaction_policy.decoupled, variant.name
            assert configs["fastertransformer"].model_transaction_policy.decoupled, variant.name
            assert [g.count for g in ensemble.instance_group] == [ensemble.max_batch_size], variant.name
        else:
            assert not configs["fastertransformer"].model_transaction_policy.decoupled, variant.name
        assert configs["preprocessing"].backend == "python"
        assert configs["postprocessing"].backend == "python"
        ft = configs["fastertransformer"]
        expected_backend = "python" if variant.name.startswith("standin") else "fastertransformer"
        assert ft.backend == expected_backend, variant.name
        assert [(g.kind, g.count) for g in ft.instance_group] == [(mc.ModelInstanceGroup.KIND_CPU, 1)], variant.name
        params = {k: v.string_value for k, v in ft.parameters.items()}
        tp = int(params["tensor_para_size"])
        assert params["enable_custom_all_reduce"] == ("1" if tp == 8 and "p4d" in variant.name else "0"), variant.name
        for name in ("preprocessing", "postprocessing"):
            path = configs[name].parameters["tokenizer_path"].string_value
            assert path.startswith("/"), f"{variant.name}/{name}: tokenizer_path {path!r} is relative"


def test_vllm_configs_as_the_model_expects(rendered: Path) -> None:
    """The vLLM ensemble: decoupled Python, one model-wide instance, the FT ensemble's
    tensors in order plus the top alternatives, and its numbers consistent."""
    assert vllm_variants(rendered), "no vLLM variant rendered"
    ft = load(variants(rendered)[0])["ensemble"]
    failures = []
    for variant in vllm_variants(rendered):
        config = parse(variant / "model-repository" / "ensemble" / "config.pbtxt")
        params = {k: v.string_value for k, v in config.parameters.items()}
        checks = {
            "python backend": config.backend == "python",
            "decoupled": config.model_transaction_policy.decoupled,
            "one KIND_MODEL instance": [(g.kind, g.count) for g in config.instance_group]
            == [(mc.ModelInstanceGroup.KIND_MODEL, 1)],
            "max_batch_size = max_num_seqs": config.max_batch_size == int(params["max_num_seqs"]),
            "max_model_len >= input + output": int(params["max_model_len"])
            >= int(params["max_input_len"]) + int(params["max_output_len"]),
            "the FT ensemble's inputs first, in order": [t.name for t in config.input][: len(ft.input)]
            == [t.name for t in ft.input],
            "top_logprobs in": "top_logprobs" in {t.name for t in config.input},
            "the top alternatives out": {"output_top_tokens", "output_top_log_probs"} <= {t.name for t in config.output},
            "absolute model_path": params["model_path"].startswith("/"),
        }
        failures += [f"{variant.name}: {what}" for what, ok in checks.items() if not ok]
    assert not failures, "\n".join(failures)


def tensor_types(configs: dict[str, mc.ModelConfig]) -> dict[str, dict[str, dict[str, int]]]:
    out: dict[str, dict[str, dict[str, int]]] = {}
    for name, config in configs.items():
        out[name] = {
            "input": {t.name: t.data_type for t in config.input},
            "output": {t.name: t.data_type for t in config.output},
            "required": {t.name: t.data_type for t in config.input if not t.optional},
        }
    return out


def ensemble_steps(ensemble: mc.ModelConfig) -> list[mc.ModelEnsembling.Step]:
    """The ensemble's steps: its scheduling, or for the streaming (Python) ensemble
    the same step list the renderer passes as the `steps` parameter."""
    if ensemble.platform == "ensemble":
        return list(ensemble.ensemble_scheduling.step)
    steps = []
    for raw in json.loads(ensemble.parameters["steps"].string_value):
        step = mc.ModelEnsembling.Step(model_name=raw["model"], model_version=-1)
        step.input_map.update(raw["inputMap"])
        step.output_map.update(raw["outputMap"])
        steps.append(step)
    return steps


def ensemble_wiring_problems(configs: dict[str, mc.ModelConfig]) -> list[str]:
    """What Triton would refuse when loading the ensemble, checked statically."""
    types = tensor_types(configs)
    ensemble = configs["ensemble"]
    available: dict[str, int] = dict(types["ensemble"]["input"])
    consumed: set[str] = set()
    problems: list[str] = []
    for step in ensemble_steps(ensemble):
        model = types.get(step.model_name)
        if model is None:
            problems.append(f"step {step.model_name}: no such model in the repository")
            continue
        for key, tensor in step.input_map.items():
            if key not in model["input"]:
                problems.append(f"step {step.model_name}: input_map key {key!r} is not an input of the model")
            elif tensor not in available:
                problems.append(f"step {step.model_name}: {key!r} reads {tensor!r}, which no earlier step produces")
            elif available[tensor] != model["input"][key]:
                problems.append(
                    f"step {step.model_name}: {key!r} is {mc.DataType.Name(model['input'][key])} "
                    f"but {tensor!r} is {mc.DataType.Name(available[tensor])}"
                )
            consumed.add(tensor)
        for required in model["required"]:
            if required not in step.input_map:
                problems.append(f"step {step.model_name}: required input {required!r} is not mapped")
        for key, tensor in step.output_map.items():
            if key not in model["output"]:
                problems.append(f"step {step.model_name}: output_map key {key!r} is not an output of the model")
                continue
            if tensor in available and tensor not in types["ensemble"]["input"]:
                problems.append(f"step {step.model_name}: tensor {tensor!r} is produced twice")
            available[tensor] = model["output"][key]
    for name, dtype in types["ensemble"]["output"].items():
        if name not in available:
            problems.append(f"ensemble output {name!r} is produced by no step")
        elif available[name] != dtype:
            problems.append(f"ensemble output {name!r}: declared {mc.DataType.Name(dtype)}, produced {mc.DataType.Name(available[name])}")
    for name in types["ensemble"]["input"]:
        if name not in consumed:
            problems.append(f"ensemble input {name!r} is consumed by no step")
    return problems


def test_ensemble_wiring_is_consistent_for_every_variant(rendered: Path) -> None:
    failures: dict[str, list[str]] = defaultdict(list)
    for variant in variants(rendered):
        for problem in ensemble_wiring_problems(load(variant)):
            failures[variant.name].append(problem)
    assert not failures, "\n".join(f"{v}: {p}" for v, ps in failures.items() for p in ps)


def test_wiring_check_catches_a_renamed_tensor(rendered: Path) -> None:
    configs = load(variants(rendered)[0])
    ensemble = configs["ensemble"]
    if ensemble.platform == "ensemble":
        step = ensemble.ensemble_scheduling.step[1]
        step.input_map["runtime_topk"] = step.input_map.pop("runtime_top_k")
    else:
        steps = json.loads(ensemble.parameters["steps"].string_value)
        steps[1]["inputMap"]["runtime_topk"] = steps[1]["inputMap"].pop("runtime_top_k")
        ensemble.parameters["steps"].string_value = json.dumps(steps)
    problems = ensemble_wiring_problems(configs)
    assert any("'runtime_topk' is not an input" in p for p in problems), problems


# The parse must be able to fail: mutate one real rendered file in each way.
@pytest.mark.parametrize(
    ("description", "mutate", "message"),
    [
        ("unknown field", lambda s: s.replace("max_batch_size:", "max_batch_sise:", 1), "max_batch_sise"),
        ("bad enum value", lambda s: s.replace("TYPE_UINT32", "TYPE_UINT33", 1), "TYPE_UINT33"),
        ("wrong type", lambda s: re.sub(r"max_batch_size: \d+", 'max_batch_size: "eight"', s, count=1), "max_batch_size"),
        ("unknown enum for kind", lambda s: s.replace("KIND_CPU", "KIND_TPU", 1), "KIND_TPU"),
        ("repeated scalar field", lambda s: s.replace("max_batch_size:", "name: \"again\"\nmax_batch_size:", 1), "name"),
    ],
)
def test_schema_rejects_broken_configs(rendered: Path, description: str, mutate, message: str) -> None:
    original = (variants(rendered)[0] / "model-repository/fastertransformer/config.pbtxt").read_text()
    broken = mutate(original)
    assert broken != original, f"mutation '{description}' did not apply"
    with pytest.raises(text_format.ParseError, match=message):
        text_format.Parse(broken, mc.ModelConfig())
