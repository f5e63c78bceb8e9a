/**
 * Promotion: the images another stack built (its `serverImage`,
 * `tritonWithFtImage` and `gatewayImage` outputs, read through a
 * StackReference), checked before anything deploys them. Refused, at preview:
 * an image that is not pinned by digest, and a building stack whose model plan
 * (`modelPlanFingerprint`, `modelPlan`) differs from this stack's, since the
 * image would then serve another model, TP size, limits or GPU than this
 * stack's config says.
 */
import * as pulumi from "@pulumi/pulumi";
import { isDigestRef } from "../imageRef";
import { modelPlanDifferences, modelPlanFingerprint, type ModelPlan } from "./modelPlan";

/** The referenced stack's image outputs a promoted stack serves (and exports again, so it can be promoted from). */
export const PROMOTED_IMAGE_OUTPUTS = ["serverImage", "tritonWithFtImage", "gatewayImage"] as const;
export type PromotedImages = Record<(typeof PROMOTED_IMAGE_OUTPUTS)[number], string>;
/** Every output of the referenced stack that promotion reads. */
export const PROMOTION_OUTPUTS = [...PROMOTED_IMAGE_OUTPUTS, "modelPlanFingerprint", "modelPlan"] as const;

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

/**
 * Problems with a referenced stack's outputs, one line each, naming the
 * output, its value and the fix. Pure: the component below and the tests call it.
 */
export function promotionProblems(ref: string, outputs: Record<string, unknown>, planned: ModelPlan): string[] {
  const problems: string[] = [];
  const at = (name: string) => `output ${name} of stack ${ref} = ${show(outputs[name])}`;
  for (const name of PROMOTED_IMAGE_OUTPUTS) {
    const value = outputs[name];
    if (typeof value !== "string" || !isDigestRef(value))
      problems.push(
        `${at(name)}: is not an image pinned by digest (<registry>/<repository>@sha256:<64 hex>), so what runs could change under the same name; ` +
          `fix: promote from a stack that built its images (pulumi up there exports them by digest), or fix ${ref}'s ${name}`,
      );
  }
  const fingerprint = outputs.modelPlanFingerprint;
  const own = modelPlanFingerprint(planned);
  if (fingerprint === undefined) {
    problems.push(
      `${at("modelPlanFingerprint")}: the stack exports no model plan, so nothing shows its images were built for this stack's model; ` +
        `fix: pulumi up ${ref} with this version of the program first (every stack exports modelPlan and modelPlanFingerprint)`,
    );
  } else if (fingerprint !== own) {
    const built = parsed(outputs.modelPlan);
    const diffs = built ? modelPlanDifferences(built, planned) : [];
    const detail =
      diffs.length > 0
        ? diffs.map((d) => `${d.field} built ${show(d.built)}, planned here ${show(d.planned)} (${d.key})`).join("; ")
        : `this stack's plan is ${own}`;
    problems.push(
      `${at("modelPlanFingerprint")}: its images were built for another model plan than this stack's: ${detail}; ` +
        `fix: set ${diffs.length > 0 ? [...new Set(diffs.map((d) => d.key))].join(", ") : "the model and serving keys"} as ${ref} has them, ` +
        `or build the change in ${ref} first and promote that build`,
    );
  }
  return problems;
}

export interface PromotionArgs {
  /** `<org>/<project>/<stack>` of the stack that built the images (build.promoteFrom.stackReference). */
  readonly stackReference: string;
  /** This stack's own model plan, which the building stack's must equal. */
  readonly planned: ModelPlan;
}

/** The images of another stack, checked: reading any of them fails the preview when a check fails. */
export class Promotion extends pulumi.ComponentResource {
  readonly serverImage: pulumi.Output<string>;
  readonly tritonWithFtImage: pulumi.Output<string>;
  readonly gatewayImage: pulumi.Output<string>;

  constructor(name: string, args: PromotionArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:promotion:Promotion", name, {}, opts);
    const ref = new pulumi.StackReference(`${name}-ref`, { name: args.stackReference }, { parent: this });
    const checked = pulumi.all(PROMOTION_OUTPUTS.map((n) => ref.getOutput(n))).apply((values) => {
      const outputs = Object.fromEntries(PROMOTION_OUTPUTS.map((n, i) => [n, values[i]]));
      const problems = promotionProblems(args.stackReference, outputs, args.planned);
      if (problems.length > 0)
        throw new pulumi.ResourceError(
          `${KEY}: cannot promote from ${args.stackReference}:\n${problems.map((p, i) => `  ${i + 1}. ${p}`).join("\n")}`,
          this,
        );
      return outputs as PromotedImages;
    });
    this.serverImage = checked.apply((o) => o.serverImage);
    this.tritonWithFtImage = checked.apply((o) => o.tritonWithFtImage);
    this.gatewayImage = checked.apply((o) => o.gatewayImage);
    this.registerOutputs({
      serverImage: this.serverImage,
      tritonWithFtImage: this.tritonWithFtImage,
      gatewayImage: this.gatewayImage,
    });
  }
}
