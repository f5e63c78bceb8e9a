/**
 * build.tritonWithFtFrom: triton_with_ft taken by digest from another stack
 * instead of compiled here. The building stack exports what each of its
 * triton_with_ft images was built from (`tritonWithFtBuilds`: pins, SM list,
 * recipe, image; plan/tritonWithFt.ts); this stack plans the same for each of
 * its builders and takes an image only when everything is equal. Refused at
 * preview, all at once, naming each differing field, both values and the key
 * that sets it: an image built from other pins or for other SMs would load
 * other code, or none, on this stack's GPUs.
 */
import * as pulumi from "@pulumi/pulumi";
import { isDigestRef } from "../imageRef";
import { BUILD_FIELD_KEYS, type TritonWithFtBuild } from "../plan/tritonWithFt";

/** The output a building stack exports and a taking stack reads. */
export const TRITON_WITH_FT_BUILDS_OUTPUT = "tritonWithFtBuilds";

/** One exported build: the builder it was compiled for, what it was built from, and the image. */
export interface ExportedTritonWithFt extends TritonWithFtBuild {
  builder: string;
  image: string;
}

/** What this stack needs: one image per builder, for the build it plans there. */
export interface WantedTritonWithFt {
  builder: string;
  build: TritonWithFtBuild;
}

const KEY = "triton-ft:build.tritonWithFtFrom";
const FIELDS = Object.keys(BUILD_FIELD_KEYS) as Array<keyof TritonWithFtBuild>;

const show = (v: unknown) => (v === undefined ? "(not exported)" : JSON.stringify(v));
const record = (v: unknown): Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** The fields in which an exported build differs from the wanted one. */
function differences(built: Record<string, unknown>, wanted: TritonWithFtBuild): Array<keyof TritonWithFtBuild> {
  return FIELDS.filter((f) => JSON.stringify(built[f]) !== JSON.stringify(wanted[f]));
}

/**
 * Per wanted build: the image, or the problems (one line each, naming the
 * output, the field, both values and the fix). Pure.
 */
export function takenTritonWithFt(
  ref: string,
  exported: unknown,
  wanted: readonly WantedTritonWithFt[],
): { images: Record<string, string>; problems: string[] } {
  const problems: string[] = [];
  const images: Record<string, string> = {};
  if (!Array.isArray(exported) || exported.length === 0) {
    problems.push(
      `output ${TRITON_WITH_FT_BUILDS_OUTPUT} of stack ${ref} = ${show(exported)}: the stack exports no triton_with_ft build to take; ` +
        `fix: pulumi up ${ref} with this version of the program first (a stack that compiles exports what it built), or remove build.tritonWithFtFrom to compile here`,
    );
    return { images, problems };
  }
  const builds = exported.map(record);
  for (const w of wanted) {
    // The build for the same SMs if there is one, else the closest: the one with fewest differing fields.
    const ranked = builds
      .map((b) => ({ b, diffs: differences(b, w.build) }))
      .sort((x, y) => x.diffs.length - y.diffs.length);
    const best = ranked[0];
    if (!best) continue;
    if (best.diffs.length > 0) {
      const detail = best.diffs
        .map(
          (f) => `${f}: ${ref} built ${show(best.b[f])}, this stack plans ${show(w.build[f])} (${BUILD_FIELD_KEYS[f]})`,
        )
        .join("; ");
      problems.push(
        `builder ${w.builder}: stack ${ref} built no triton_with_ft from the same pins, recipe and SMs (closest: its builder ${show(best.b.builder)}): ${detail}; ` +
          `fix: set ${[...new Set(best.diffs.map((f) => BUILD_FIELD_KEYS[f]))].join(", ")} as ${ref} has them, or remove build.tritonWithFtFrom to compile here`,
      );
      continue;
    }
    const image = best.b.image;
    if (typeof image !== "string" || !isDigestRef(image)) {
      problems.push(
        `output ${TRITON_WITH_FT_BUILDS_OUTPUT}[builder ${show(best.b.builder)}].image of stack ${ref} = ${show(image)}: is not an image pinned by digest (<registry>/<repository>@sha256:<64 hex>); ` +
          `fix: pulumi up ${ref} so it exports the image it pushed, or remove build.tritonWithFtFrom`,
      );
      continue;
    }
    images[w.builder] = image;
  }
  return { images, problems };
}

/**
 * The ECR repository ARN of a digest-pinned ECR image, for the builder's pull
 * permission: `<account>.dkr.ecr.<region>.amazonaws.com/<name>@sha256:…`.
 */
export function ecrRepositoryArn(image: string): string {
  const m = /^(\d{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?\/([^@]+)@sha256:[0-9a-f]{64}$/.exec(image);
  if (!m) throw new Error(`${image} is not an ECR image pinned by digest`);
  const [, account, region, name] = m;
  return `arn:aws:ecr:${region}:${account}:repository/${name}`;
}

export interface TritonWithFtSourceArgs {
  /** `<org>/<project>/<stack>` (build.tritonWithFtFrom.stackReference). */
  readonly stackReference: string;
  /** Per builder of this stack, the build it plans. */
  readonly wanted: readonly WantedTritonWithFt[];
}

/** Another stack's triton_with_ft images, checked: reading any fails the preview when a check fails. */
export class TritonWithFtSource extends pulumi.ComponentResource {
  /** Per builder name: the image its steps use. */
  readonly images: Record<string, pulumi.Output<string>>;

  constructor(name: string, args: TritonWithFtSourceArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:promotion:TritonWithFtSource", name, {}, opts);
    const ref = new pulumi.StackReference(`${name}-ref`, { name: args.stackReference }, { parent: this });
    const checked = ref.getOutput(TRITON_WITH_FT_BUILDS_OUTPUT).apply((exported: unknown) => {
      const r = takenTritonWithFt(args.stackReference, exported, args.wanted);
      if (r.problems.length > 0)
        throw new pulumi.ResourceError(
          `${KEY}: cannot take triton_with_ft from ${args.stackReference}:\n${r.problems.map((p, i) => `  ${i + 1}. ${p}`).join("\n")}`,
          this,
        );
      return r.images;
    });
    this.images = Object.fromEntries(args.wanted.map((w) => [w.builder, checked.apply((i) => i[w.builder] ?? "")]));
    this.registerOutputs({ images: this.images });
  }
}
