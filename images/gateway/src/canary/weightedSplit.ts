/**
 * Which build a new request of a model with a canary goes to: a smooth
 * weighted round robin (nginx's, two members), not a coin flip, so each pod
 * sends exactly `weight` of every 100 consecutive requests to the canary and
 * the share cannot drift by chance; spread evenly (weight 10: one in ten, not
 * ten in a row). Across pods the shares add up: each is exact to within one
 * request per hundred.
 */

/** The build that serves a request: the model's stable build or its canary. */
export type Build = "stable" | "canary";

export class WeightedSplit {
  private canaryCredit = 0;
  private stableCredit = 0;

  /** `canaryPercent`: 1..99 (CanarySchema.weight). */
  constructor(readonly canaryPercent: number) {
    if (!Number.isInteger(canaryPercent) || canaryPercent < 1 || canaryPercent > 99) {
      throw new Error(`canary weight ${canaryPercent} is not an integer percent in 1..99`);
    }
  }

  /** The next request's build: each member earns its weight, the richest serves and pays the total. */
  next(): Build {
    this.canaryCredit += this.canaryPercent;
    this.stableCredit += 100 - this.canaryPercent;
    if (this.canaryCredit >= this.stableCredit) {
      this.canaryCredit -= 100;
      return "canary";
    }
    this.stableCredit -= 100;
    return "stable";
  }
}
