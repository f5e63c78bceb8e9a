# shellcheck shell=bash
# Shared helpers for the remote build steps (sourced, never executed).
#
# Every step script follows the same shape:
#   1. source this file, call `step_init <step-name> <config-file>`;
#   2. compute its input hash with `step_input_hash <extra files...>`;
#   3. `step_skip_if_done` (prints the stored RESULT lines and exits 0 when a
#      finished run with the same inputs left its marker);
#   4. do the work in phases (`phase <name>`), staging output in a temp
#      location that is renamed into place only when complete;
#   5. `step_done` writes the marker LAST, so an interrupted run never looks
#      finished.
#
# Markers live in $WORK_ROOT/state/<step>.done and hold `input_hash=<hex>`
# followed by the step's `RESULT key=value` lines.

# Guard against double sourcing: tests source lib.sh directly too.
if [[ -n ${TRITON_FT_LIB_LOADED:-} ]]; then
  return 0
fi
TRITON_FT_LIB_LOADED=1

TRITON_FT_LIB_PATH=$(readlink -f "${BASH_SOURCE[0]}")
# Root of the shipped scripts tree (the folder holding remote/ and convert/).
# shellcheck disable=SC2034 # used by the step scripts
TRITON_FT_SCRIPTS_ROOT=$(dirname "$(dirname "$TRITON_FT_LIB_PATH")")

STEP_NAME=${STEP_NAME:-unknown}
STEP_PHASE=init
STEP_CONFIG=""
STEP_INPUT_HASH=""
STEP_RESULTS=()

# Digest-pinned image reference <registry>/<repository>@sha256:<64 hex>: the
# same pattern as DIGEST_REF in infra/imageRef.ts (test/unit/scriptHeaders.test.ts
# keeps the two equal).
DIGEST_REF_RE='^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+@sha256:[0-9a-f]{64}$'

# The helpers, by topic, under lib/: shipped in the same tree, and hashed with
# this file into every step's input hash (here: step_input_hash; on the Pulumi
# side: infra/plan/stepGraph.ts). Sourcing them only defines functions and
# constants, so their order does not matter.
TRITON_FT_LIB_DIR=$(dirname "$TRITON_FT_LIB_PATH")/lib
# shellcheck source=scripts/remote/lib/log.sh
source "$TRITON_FT_LIB_DIR/log.sh"
# shellcheck source=scripts/remote/lib/checks.sh
source "$TRITON_FT_LIB_DIR/checks.sh"
# shellcheck source=scripts/remote/lib/files.sh
source "$TRITON_FT_LIB_DIR/files.sh"
# shellcheck source=scripts/remote/lib/hash.sh
source "$TRITON_FT_LIB_DIR/hash.sh"
# shellcheck source=scripts/remote/lib/state.sh
source "$TRITON_FT_LIB_DIR/state.sh"
# shellcheck source=scripts/remote/lib/ecr.sh
source "$TRITON_FT_LIB_DIR/ecr.sh"
