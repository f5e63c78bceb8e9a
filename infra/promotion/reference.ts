/**
 * Promotion: the images another stack built, read through a StackReference
 * (its `models` output: each model's `serverImage`, `modelPlan` and
 * `modelPlanFingerprint`; its `tritonWithFtImage` and `gatewayImage`), checked
 * before anything deploys them. Refused, at preview, all at once: an image
 * that is not pinned by digest; a model this stack serves that the building
 * stack does not, or the reverse; a model whose image was built for another
 * model plan (plan/fingerprint.ts) than this stack's config gives it, since it
 * would then serve other weights, tokenizer, limits or GPU code than the config says.
 */
import * as pulumi from "@pulumi/pulumi";
import { isDigestRef } from "../imageRef";
import { modelPlanDifferences, modelPlanFingerprint, type ModelPlan } from "./modelPlan";

/** The referenced stack's stack-wide image outputs a promoted stack serves (and exports again). */
export const PROMOTED_IMAGE_OUTPUTS = ["tritonWithFtImage", "gatewayImage"] as const;
/** Every output of the referenced stack that promotion reads. */
export const PROMOTION_OUTPUTS = [...PROMOTED_IMAGE_OUTPUTS, "models"] as const;

/** A model of the promoted stack: its id and the model plan its config gives it. */
export interface PlannedModel {
  id: string;
  plan: ModelPlan;
}

/** What promotion takes from the building stack, once checked. */
export interface PromotedImages {
  tritonWithFtImage: string;
  gatewayImage: string;
  /** Each model's server image, by model id. */
  serverImages: Record<string, string>;
}

const KEY = "triton-ft:build.promoteFrom";

function show(value: unknown): string {
  return value === undefined ? "(not exported)" : JSON.stringify(value);
}

function parsed(json: unknown): Record<string, unknown> | undefined {
  if (typeof json !== "string") return undefined;
  try {
    const v: unknown = JSON.parse(json);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

const NOT_PINNED =
  "is not an image pinned by digest (<registry>/<repository>@sha256:<64 hex>), so what runs could change under the same name";

/** One model's problems: its image and its model plan against this stack's. */
function modelProblems(ref: string, id: string, entry: Record<string, unknown>, planned: ModelPlan): string[] {
  const problems: string[] = [];
  const at = (name: string) => `output models.${id}.${name} of stack ${ref} = ${show(entry[name])}`;
  const image = entry.serverImage;
  if (typeof image !== "string" || !isDigestRef(image))
    problems.push(
      `${at("serverImage")}: ${NOT_PINNED}; fix: promote from a stack that built its images (pulumi up there exports them by digest), or fix ${ref}'s models output`,
    );
  const fingerprint = entry.modelPlanFingerprint;
  const own = modelPlanFingerprint(planned);
  if (fingerprint === undefined) {
    problems.push(
      `${at("modelPlanFingerprint")}: the stack exports no model plan for ${id}, so nothing shows its image was built for this stack's model; ` +
        `fix: pulumi up ${ref} with this version of the program first (every stack exports each model's modelPlan and modelPlanFingerprint)`,
    );
  } else if (fingerprint !== own) {
    const built = parsed(entry.modelPlan);
    const diffs = built ? modelPlanDifferences(built, planned) : [];
    const detail =
      diffs.length > 0
        ? diffs.map((d) => `${d.field} built ${show(d.built)}, planned here ${show(d.planned)} (${d.key})`).join("; ")
        : `this stack's plan is ${own}`;
    problems.push(
      `${at("modelPlanFingerprint")}: ${id}'s image was built for another model plan than this stack's: ${detail}; ` +
        `fix: set ${diffs.length > 0 ? [...new Set(diffs.map((d) => d.key))].join(", ") : "the model and serving keys"} as ${ref} has them, ` +
        `or build the change in ${ref} first and promote that build`,
    );
  }
  return problems;
}

/**
 * Problems with a referenced stack's outputs, one line each, naming the
 * output, its value and the fix. Pure: the component below and the tests call it.
 */
export function promotionProblems(
  ref: string,
  outputs: Record<string, unknown>,
  planned: readonly PlannedModel[],
): string[] {
  const problems: string[] = [];
  for (const name of PROMOTED_IMAGE_OUTPUTS) {
    const value = outputs[name];
    if (typeof value !== "string" || !isDigestRef(value))
      problems.push(
        `output ${name} of stack ${ref} = ${show(value)}: ${NOT_PINNED}; ` +
          `fix: promote from a stack that built its images (pulumi up there exports them by digest), or fix ${ref}'s ${name}`,
      );
  }
  const built = record(outputs.models);
  const ids = planned.map((m) => m.id);
  for (const m of planned) {
    const entry = built[m.id];
    if (entry === undefined) {
      problems.push(
        `model ${m.id}: stack ${ref} serves no such model (its models: ${Object.keys(built).sort().join(", ") || "none exported"}); ` +
          `fix: add ${m.id} to ${ref} and pulumi up there first, or remove it from this stack's triton-ft:models`,
      );
      continue;
    }
    problems.push(...modelProblems(ref, m.id, record(entry), m.plan));
  }
  for (const id of Object.keys(built).filter((x) => !ids.includes(x)))
    problems.push(
      `model ${id}: stack ${ref} serves it and this stack does not, so the promotion would not be of the stack ${ref} tested; ` +
        `fix: add ${id} to this stack's triton-ft:models as ${ref} has it, or remove it from ${ref}`,
    );
  return problems;
}

export interface PromotionArgs {
  /** `<org>/<project>/<stack>` of the stack that built the images (build.promoteFrom.stackReference). */
  readonly stackReference: string;
  /** Every model of this stack with the model plan its config gives it, which the building stack's must equal. */
  readonly planned: readonly PlannedModel[];
}

/** The images of another stack, checked: reading any of them fails the preview when a check fails. */
export class Promotion extends pulumi.ComponentResource {
  readonly tritonWithFtImage: pulumi.Output<string>;
  readonly gatewayImage: pulumi.Output<string>;
  /** Each model's server image, by model id. */
  readonly serverImages: Record<string, pulumi.Output<string>>;

  constructor(name: string, args: PromotionArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:promotion:Promotion", name, {}, opts);
    const ref = new pulumi.StackReference(`${name}-ref`, { name: args.stackReference }, { parent: this });
    const checked = pulumi.all(PROMOTION_OUTPUTS.map((n) => ref.getOutput(n))).apply((values): PromotedImages => {
      const outputs = Object.fromEntries(PROMOTION_OUTPUTS.map((n, i) => [n, values[i]]));
      const problems = promotionProblems(args.stackReference, outputs, args.planned);
      if (problems.length > 0)
        throw new pulumi.ResourceError(
          `${KEY}: cannot promote from ${args.stackReference}:\n${problems.map((p, i) => `  ${i + 1}. ${p}`).join("\n")}`,
          this,
        );
      const models = record(outputs.models);
      return {
        tritonWithFtImage: String(outputs.tritonWithFtImage),
        gatewayImage: String(outputs.gatewayImage),
        serverImages: Object.fromEntries(args.planned.map((m) => [m.id, String(record(models[m.id]).serverImage)])),
      };
    });
    this.tritonWithFtImage = checked.apply((o) => o.tritonWithFtImage);
    this.gatewayImage = checked.apply((o) => o.gatewayImage);
    this.serverImages = Object.fromEntries(
      args.planned.map((m) => [m.id, checked.apply((o) => o.serverImages[m.id] ?? "")]),
    );
    this.registerOutputs({
      tritonWithFtImage: this.tritonWithFtImage,
      gatewayImage: this.gatewayImage,
      serverImages: this.serverImages,
    });
  }
}
