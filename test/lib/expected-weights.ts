/**
 * `npx tsx test/lib/expected-weights.ts '<json>'`: prints the plan's expected
 * weight set (infra/plan/weights.ts) for a family, architecture and TP size,
 * so the Python tests of the verifier and the fp16 rewrite check against the
 * list the plan ships, not a copy. Input JSON: {family, tp, arch, anyType?};
 * `anyType` drops weight_data_type, as the fp16 rewrite's list does.
 */
import { anyTypeExpectedWeights } from "../../infra/plan/conversion";
import { expectedWeights } from "../../infra/plan/weights";
import type { Family, ModelArch } from "../../infra/model/types";

interface Request {
  family: Family;
  tp: number;
  arch: ModelArch;
  anyType?: boolean;
}

const req = JSON.parse(process.argv[2] ?? "{}") as Request;
const planned = expectedWeights(req.family, req.arch, req.tp);
process.stdout.write(JSON.stringify(req.anyType ? anyTypeExpectedWeights(planned) : planned) + "\n");
