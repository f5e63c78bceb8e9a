/**
 * The seed runbooks' deployments as stack configs, for the golden plan tests.
 * Revisions of repos other than the fixtures' are arbitrary 40-hex values: the
 * tests are offline and only need pinned-looking commits.
 */
import { BACKEND_COMMIT, FT_COMMIT, GPTJ_REVISION, gpt2Config, type RawConfig } from "../lib/fixtures";

const build = (builderInstanceType: string) => ({
  backendCommit: BACKEND_COMMIT,
  ftCommit: FT_COMMIT,
  builderInstanceType,
  sshAllowedCidrs: ["198.51.100.7/32"],
});

const hf = (repo: string, revision: string) => ({ huggingface: { repo, revision } });

export const H2OGPT_REVISION = "2f5e6a1c3b4d5e6f708192a3b4c5d6e7f8091a2b";
export const KOGPT_REVISION = "7c1e4b2a9d8f6e5c4b3a29180f7e6d5c4b3a2918";
export const CODEGEN_REVISION = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567";
export const JAX_SHA256 = "c4a9b8e7d6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9";

export interface SeedCase {
  id: string;
  title: string;
  config: RawConfig;
}

export const SEED_CASES: readonly SeedCase[] = [
  {
    id: "h2ogpt-tp1-g5.2xlarge",
    title: "h2oGPT 6.9B (GPT-NeoX) at TP1 on g5.2xlarge",
    config: {
      model: { preset: "h2ogpt-oig-oasst1-512-6_9b", source: hf("h2oai/h2ogpt-oig-oasst1-512-6_9b", H2OGPT_REVISION) },
      build: build("g5.4xlarge"),
      serving: { instanceType: "g5.2xlarge", tensorParallel: 1 },
    },
  },
  {
    id: "kogpt-tp1-g5.4xlarge",
    title: "KoGPT 6B (GPT-J) at TP1 on g5.4xlarge",
    config: {
      model: { preset: "kogpt-6b", source: hf("kakaobrain/kogpt", KOGPT_REVISION) },
      build: build("g5.4xlarge"),
      serving: { instanceType: "g5.4xlarge", tensorParallel: 1 },
    },
  },
  {
    id: "gptj-jax-tp4-g5.12xlarge",
    title: "GPT-J 6B from the JAX slim checkpoint at TP4 on g5.12xlarge",
    config: {
      model: { preset: "gpt-j-6b-jax", source: { archive: { sha256: JAX_SHA256, tokenizerRevision: GPTJ_REVISION } } },
      build: build("g5.4xlarge"),
      serving: { instanceType: "g5.12xlarge", tensorParallel: 4 },
    },
  },
  { id: "gpt2-tp1-g5.xlarge", title: "GPT-2 at TP1 on g5.xlarge", config: gpt2Config() },
  {
    id: "codegen-2b-mono-tp2-g5.12xlarge",
    title: "CodeGen-2B-mono (as GPT-J) at TP2 on g5.12xlarge",
    config: {
      model: { preset: "codegen-2b-mono", source: hf("Salesforce/codegen-2B-mono", CODEGEN_REVISION) },
      build: build("g5.4xlarge"),
      serving: { instanceType: "g5.12xlarge", tensorParallel: 2 },
    },
  },
  {
    id: "gptj-tp8-p4d.24xlarge",
    title: "GPT-J 6B at TP8 on p4d.24xlarge (custom all-reduce)",
    config: {
      model: { preset: "gpt-j-6b", source: hf("EleutherAI/gpt-j-6b", GPTJ_REVISION) },
      build: build("p4d.24xlarge"),
      serving: { instanceType: "p4d.24xlarge", tensorParallel: 8 },
    },
  },
];
