/**
 * Which model the stack serves: the preset or the family and architecture
 * given by hand, and its weights' source pinned to a commit or a checksum.
 */
import { MODEL_PRESETS, findPreset, type ModelPreset } from "../model/catalog";
import type { Family, ModelSource } from "../model/types";
import type { StackConfig } from "../config/schema";
import type { ResolvedModel } from "../config/stack";

import type { Add } from "../config/schema";
const COMMIT = /^[0-9a-f]{40}$/;
const SHA256 = /^[0-9a-f]{64}$/;

/** The model the config names (preset or family + arch), or undefined after reporting why not. */
export function resolveModel(config: StackConfig, add: Add): ResolvedModel | undefined {
  const m = config.model;
  let preset: ModelPreset | undefined;
  if (m.preset !== undefined) {
    preset = findPreset(m.preset);
    if (!preset) {
      add(
        "model.preset",
        m.preset,
        "is not in the model catalog",
        `use one of: ${MODEL_PRESETS.map((p) => p.name).join(", ")}, or set model.family and model.arch`,
      );
      return undefined;
    }
    if (m.arch)
      add(
        "model.arch",
        m.arch,
        "is set together with model.preset",
        "remove model.arch (the preset supplies it) or remove model.preset",
      );
  } else if (!m.arch) {
    add(
      "model.arch",
      m.arch,
      "is required without model.preset",
      "set all of layers, hidden, heads, ffn, vocab, rotaryDims, maxPositions, startId, endId from the model's config.json, or choose a model.preset",
    );
  }
  const family = m.family ?? preset?.family;
  if (!family)
    add("model.family", m.family, "is required without model.preset", "set one of gptneox, gptj, gpt, codegen");
  if (preset && m.family && m.family !== preset.family) {
    add(
      "model.family",
      m.family,
      `contradicts preset ${preset.name}, which is ${preset.family}`,
      `remove model.family or set it to ${preset.family}`,
    );
  }

  const source = resolveSource(m.source, preset, family, add);
  const arch = m.arch ?? preset?.arch;
  if (!family || !source || !arch) return undefined;
  const repoName = source.kind === "huggingface" ? (source.repo.split("/").pop() ?? "") : "model";
  // Defaults must satisfy model.name's own rule (it names AWS and Kubernetes resources):
  // preset names such as h2ogpt-oig-oasst1-512-6_9b carry an underscore.
  const name =
    m.name ??
    (preset?.name ?? repoName)
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, "-")
      .replace(/^-+/, "")
      .slice(0, 39);
  const tokenizerSource =
    m.source && "archive" in m.source && preset
      ? { repo: preset.repo, revision: m.source.archive.tokenizerRevision }
      : undefined;
  return { name, preset: preset?.name, family, source, tokenizerSource, arch };
}

function resolveSource(
  src: StackConfig["model"]["source"],
  preset: ModelPreset | undefined,
  family: Family | undefined,
  add: Add,
): ModelSource | undefined {
  if (src === undefined) {
    const hint = preset?.branchHint ? ` (the seeds used branch ${preset.branchHint})` : "";
    add(
      "model.source",
      src,
      "is required: the model must be pinned to a commit",
      preset?.archive
        ? "set {archive: {sha256, tokenizerRevision}} for this archive preset"
        : `set {huggingface: {repo: ${preset?.repo ?? "<org/name>"}, revision: <40-hex commit>}}${hint}`,
    );
    return undefined;
  }
  if ("huggingface" in src) {
    const { repo, revision } = src.huggingface;
    if (preset?.archive) {
      add(
        "model.source",
        src,
        `is a Hugging Face source but preset ${preset.name} is an archive checkpoint`,
        "use {archive: {sha256, tokenizerRevision}}",
      );
    }
    if (!COMMIT.test(revision)) {
      const hint = preset?.branchHint ? `; the seeds used branch ${preset.branchHint}` : "";
      add(
        "model.source.huggingface.revision",
        revision,
        "looks like a branch or tag where a pinned commit is required",
        `use the full 40-hex commit SHA (git ls-remote https://huggingface.co/${repo} <branch>${hint})`,
      );
    }
    return { kind: "huggingface", repo, revision };
  }
  const a = src.archive;
  if (!preset?.archive) {
    add(
      "model.source.archive",
      a,
      "needs an archive preset (gpt-j-6b-jax): only the GPT-J JAX slim checkpoint has a converter",
      "set model.preset to gpt-j-6b-jax, or use a huggingface source",
    );
    return undefined;
  }
  if (family && family !== "gptj")
    add(
      "model.family",
      family,
      "cannot use an archive source",
      "archive sources are GPT-J JAX slim checkpoints: family gptj",
    );
  if (!SHA256.test(a.sha256))
    add("model.source.archive.sha256", a.sha256, "is not a 64-hex SHA-256", "set the archive's sha256sum");
  if (!COMMIT.test(a.tokenizerRevision)) {
    add(
      "model.source.archive.tokenizerRevision",
      a.tokenizerRevision,
      "looks like a branch or tag where a pinned commit is required",
      `use the 40-hex commit of ${preset.repo} to take the tokenizer from`,
    );
  }
  return { kind: "archive", url: a.url ?? preset.archive.url, sha256: a.sha256, format: preset.archive.format };
}
