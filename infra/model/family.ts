/**
 * How FasterTransformer serves each model family: the FT model_type, the
 * config.ini section and the weight layout the conversion produces. Facts about
 * the families, shared by the plans and the model-repository renderer.
 */
import { isFtFamily, type Family, type FtFamily } from "./types";

/** How FT serves each family: model_type, the config.ini section, and the weight layout. */
export interface FamilyServing {
  modelType: "GPT" | "GPT-J" | "GPT-NeoX";
  section: "gpt" | "gptj" | "gptneox";
  /** Family whose FT weight layout the conversion produces. */
  layout: "gpt" | "gptj" | "gptneox";
  /**
   * Whether the backend accepts `dynamic_batching` for this model type. The
   * backend's scheduler checks do not depend on model_type; the family-specific
   * scheduler is sequence (interactive) batching, GPT only and with
   * max_batch_size 1, which this project never renders.
   */
  dynamicBatching: boolean;
}

export const FAMILY_SERVING: Record<FtFamily, FamilyServing> = {
  gpt: { modelType: "GPT", section: "gpt", layout: "gpt", dynamicBatching: true },
  gptj: { modelType: "GPT-J", section: "gptj", layout: "gptj", dynamicBatching: true },
  gptneox: { modelType: "GPT-NeoX", section: "gptneox", layout: "gptneox", dynamicBatching: true },
  // CodeGen is re-laid out as GPT-J before conversion and served by FT's GPT-J.
  codegen: { modelType: "GPT-J", section: "gptj", layout: "gptj", dynamicBatching: true },
};

/**
 * How FT serves `family`. Only FT models reach the FT paths (conversion, weights,
 * the FT model repository): resolve refuses a family FT does not serve
 * (resolve/engine.ts), so reaching here with one is a bug, not a config mistake.
 */
export function ftServing(family: Family): FamilyServing {
  if (!isFtFamily(family)) throw new Error(`family ${family} is not served by FasterTransformer`);
  return FAMILY_SERVING[family];
}
