#!/usr/bin/env bash
# Step 6 — bake: builds the server image FROM triton_with_ft@digest with the
# converted weights, gemm_config.in, model repository, Python models and
# tokenizer inside, and pushes it to ECR.
#
# usage: bake.sh <step-config-file>
#
# Step config (bash file of KEY='value' lines and arrays, rendered by the Pulumi program):
#   WORK_ROOT              string  Work root.                                  default '/opt/triton-ft'
#   AWS_REGION             string  Region of the ECR repositories.             e.g. 'us-east-1'
#   BASE_IMAGE             string  triton_with_ft, digest-pinned.              e.g. '123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-dev/triton_with_ft@sha256:ab..'
#   ECR_REPOSITORY_URL     string  Server image repository (no tag).           e.g. '123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-dev/server'
#   DOCKERFILE_DIR         string  Absolute host path of images/server.        e.g. '/opt/triton-ft/images/server'
#   WEIGHTS_DIR            string  Host folder of the converted weights (<N>-gpu). e.g. '/opt/triton-ft/work/gpt-j-6b/ft/2-gpu'
#   EXPECTED_WEIGHTS_JSON  string  Expected weight-set JSON (VERIFY_ARGV's list; an input of the hash).
#   VERIFY_ARGV            array   The weight-set verifier on WEIGHTS_DIR, as convert's last phase runs it; {{SCRIPTS}}
#                                  is the shipped scripts root. e.g. (python3 '{{SCRIPTS}}/convert/verify_weights.py' --expected '/opt/triton-ft/plan/expected-weights.json' '/opt/triton-ft/work/gpt2/ft/1-gpu')
#   CHECKPOINT_PATH        string  Absolute weights path in the image (= model_checkpoint_path). e.g. '/opt/triton-ft/weights/2-gpu'
#   GEMM_CONFIG            string  Host path of gemm_config.in (gemm step output).
#   SERVER_WORKDIR         string  Optional; WORKDIR of tritonserver in the image. default '/workspace'
#   MODEL_REPOSITORY_DIR   string  Host folder with the rendered model repository (ensemble/, preprocessing/, fastertransformer/, postprocessing/).
#   MODEL_REPOSITORY_PATH  string  Absolute model repository path in the image. e.g. '/opt/triton-ft/model-repository'
#   PYTHON_PACKAGE_DIR     string  Host path of images/server/python (-> /opt/triton-ft/python).
#   PYTHON_MODELS_DIR      string  Host folder laid out like the repository, holding preprocessing/1/model.py and postprocessing/1/model.py.
#   TOKENIZER_SOURCE_DIR   string  Host folder holding the tokenizer files.    e.g. '/opt/triton-ft/work/gpt2/source'
#   TOKENIZER_FILES        array   Files to copy from it; each must exist.     e.g. ('config.json' 'tokenizer.json')
#   TOKENIZER_OPTIONAL_FILES array Optional; files copied when present.       e.g. ('tokenizer_config.json' 'special_tokens_map.json')
#   TOKENIZER_PATH         string  Absolute tokenizer folder in the image (= tokenizer_path parameter). e.g. '/opt/triton-ft/tokenizer'
#   LAUNCH_ARGV            array   Server command.                            e.g. (mpirun -n 1 /opt/tritonserver/bin/tritonserver --model-repository=/opt/triton-ft/model-repository)
#   LAUNCH_CUDA_VISIBLE_DEVICES string GPUs the model uses.                   e.g. '0,1'
#   REQUIRED_FREE_GIB      int     Optional; free disk needed before baking.   default '0'
#   RESULT_FILE            string  Optional; where `image=<ref>` is written.   default "$WORK_ROOT/results/server-image.env"
#
# The tag is "bake-<hash>", hash = sha256 over the base image reference and
# every file of the build context (weights included). An existing tag in ECR
# is reused without building. Baking is refused when the weight verifier
# fails or a model of the ensemble contract is missing.
#
# Prints: RESULT image=<ECR_REPOSITORY_URL>@sha256:<digest>, RESULT tag=<tag>
set -euo pipefail

# shellcheck source=scripts/remote/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"

step_init bake "${1:-}"
require_vars AWS_REGION BASE_IMAGE ECR_REPOSITORY_URL DOCKERFILE_DIR WEIGHTS_DIR EXPECTED_WEIGHTS_JSON \
  CHECKPOINT_PATH GEMM_CONFIG MODEL_REPOSITORY_DIR MODEL_REPOSITORY_PATH PYTHON_PACKAGE_DIR \
  PYTHON_MODELS_DIR TOKENIZER_SOURCE_DIR TOKENIZER_PATH LAUNCH_CUDA_VISIBLE_DEVICES
SERVER_WORKDIR=${SERVER_WORKDIR:-/workspace}
REQUIRED_FREE_GIB=${REQUIRED_FREE_GIB:-0}
RESULT_FILE=${RESULT_FILE:-$WORK_ROOT/results/server-image.env}
require_int REQUIRED_FREE_GIB
for v in DOCKERFILE_DIR WEIGHTS_DIR EXPECTED_WEIGHTS_JSON CHECKPOINT_PATH GEMM_CONFIG MODEL_REPOSITORY_DIR \
  MODEL_REPOSITORY_PATH PYTHON_PACKAGE_DIR PYTHON_MODELS_DIR TOKENIZER_SOURCE_DIR TOKENIZER_PATH SERVER_WORKDIR; do
  require_abs_path "$v"
done
require_digest_ref BASE_IMAGE
[[ $LAUNCH_CUDA_VISIBLE_DEVICES =~ ^[0-9]+(,[0-9]+)*$ ]] \
  || die "LAUNCH_CUDA_VISIBLE_DEVICES must be a GPU index list like '0' or '0,1', got '$LAUNCH_CUDA_VISIBLE_DEVICES'"
default_array TOKENIZER_FILES TOKENIZER_OPTIONAL_FILES LAUNCH_ARGV
((${#TOKENIZER_FILES[@]})) || die "TOKENIZER_FILES is empty; the pre/post-processing models need tokenizer files"
((${#LAUNCH_ARGV[@]})) || die "LAUNCH_ARGV is empty; the plan must give the server command"
[[ -f $DOCKERFILE_DIR/Dockerfile ]] || die "no Dockerfile in DOCKERFILE_DIR=$DOCKERFILE_DIR"
[[ -d $WEIGHTS_DIR ]] || die "WEIGHTS_DIR $WEIGHTS_DIR does not exist; run the convert step first"
[[ -f $WEIGHTS_DIR/config.ini ]] || die "WEIGHTS_DIR $WEIGHTS_DIR has no config.ini; refusing to bake"
[[ -s $GEMM_CONFIG ]] || die "GEMM_CONFIG $GEMM_CONFIG is missing or empty; run the gemm step first"
[[ -f $EXPECTED_WEIGHTS_JSON ]] || die "EXPECTED_WEIGHTS_JSON not found: $EXPECTED_WEIGHTS_JSON"
for m in ensemble preprocessing fastertransformer postprocessing; do
  [[ -f $MODEL_REPOSITORY_DIR/$m/config.pbtxt ]] || die "model repository lacks $m/config.pbtxt ($MODEL_REPOSITORY_DIR)"
done
for m in preprocessing postprocessing; do
  [[ -f $PYTHON_MODELS_DIR/$m/1/model.py || -f $MODEL_REPOSITORY_DIR/$m/1/model.py ]] \
    || die "no Python model for $m (expected $PYTHON_MODELS_DIR/$m/1/model.py)"
done
[[ -d $PYTHON_PACKAGE_DIR ]] || die "PYTHON_PACKAGE_DIR $PYTHON_PACKAGE_DIR does not exist"
tokenizer_inputs=()
for f in "${TOKENIZER_FILES[@]}" "${TOKENIZER_OPTIONAL_FILES[@]}"; do
  [[ $f != */* && $f != .* ]] || die "tokenizer file entries are plain file names, got '$f'"
done
for f in "${TOKENIZER_FILES[@]}"; do
  [[ -f $TOKENIZER_SOURCE_DIR/$f ]] || die "tokenizer file missing: $TOKENIZER_SOURCE_DIR/$f"
  tokenizer_inputs+=("$TOKENIZER_SOURCE_DIR/$f")
done
# Repos differ in which auxiliary tokenizer files they ship: take what is there.
for f in "${TOKENIZER_OPTIONAL_FILES[@]}"; do
  if [[ -f $TOKENIZER_SOURCE_DIR/$f ]]; then tokenizer_inputs+=("$TOKENIZER_SOURCE_DIR/$f"); fi
done
have_vocab=false
for f in "${tokenizer_inputs[@]}"; do
  case ${f##*/} in tokenizer.json | vocab.json) have_vocab=true ;; esac
done
$have_vocab || die "no tokenizer.json or vocab.json among the tokenizer files in $TOKENIZER_SOURCE_DIR; the Python models could not load a tokenizer"
default_array VERIFY_ARGV
((${#VERIFY_ARGV[@]})) || die "VERIFY_ARGV is empty; the plan must give the weight-set verifier command"
substitute_placeholders VERIFY_ARGV "SCRIPTS=$TRITON_FT_SCRIPTS_ROOT"
ecr_split "$ECR_REPOSITORY_URL"

# The weights enter the input hash through the convert stamp (hashing tens of
# GB on every run would be slow); the image tag below hashes the real bytes.
hash_extra=("$DOCKERFILE_DIR" "$EXPECTED_WEIGHTS_JSON" "$GEMM_CONFIG" "$MODEL_REPOSITORY_DIR" \
  "$PYTHON_PACKAGE_DIR" "$PYTHON_MODELS_DIR" "${tokenizer_inputs[@]}")
convert_stamp=$(dirname "$WEIGHTS_DIR")/.triton-ft-convert
if [[ -f $convert_stamp ]]; then
  hash_extra+=("$convert_stamp")
else
  hash_extra+=("$WEIGHTS_DIR")
fi
step_input_hash "${hash_extra[@]}"
step_skip_if_done
host_lock bake

phase disk
check_free_disk "$WORK_ROOT" "$REQUIRED_FREE_GIB"
image_step_login
phase pull-base
pull_image "$AWS_REGION" "$BASE_IMAGE" "$ECR_REGISTRY"

phase verify-weights
# Same check as the end of convert: the bake must never ship a partial set.
docker run --rm --user "$(id -u):$(id -g)" -e HOME=/tmp -e PYTHONDONTWRITEBYTECODE=1 \
  -v "$WEIGHTS_DIR:$WEIGHTS_DIR:ro" -v "$TRITON_FT_SCRIPTS_ROOT:$TRITON_FT_SCRIPTS_ROOT:ro" \
  -v "$(dirname "$EXPECTED_WEIGHTS_JSON"):$(dirname "$EXPECTED_WEIGHTS_JSON"):ro" \
  "$BASE_IMAGE" "${VERIFY_ARGV[@]}" >&2 \
  || die "weight verifier failed for $WEIGHTS_DIR; refusing to bake"

phase context
ctx=$TMP_ROOT/bake-context
rm -rf "$ctx"
mkdir -p "$ctx/tokenizer"
cp "$DOCKERFILE_DIR/Dockerfile" "$ctx/Dockerfile"
if [[ -f $DOCKERFILE_DIR/.dockerignore ]]; then cp "$DOCKERFILE_DIR/.dockerignore" "$ctx/.dockerignore"; fi
# Hard links avoid copying tens of GB when the context is on the same disk.
cp -al "$WEIGHTS_DIR" "$ctx/weights" 2>/dev/null || cp -a "$WEIGHTS_DIR" "$ctx/weights"
cp "$GEMM_CONFIG" "$ctx/gemm_config.in"
cp -a "$MODEL_REPOSITORY_DIR" "$ctx/model-repository"
cp -a "$PYTHON_PACKAGE_DIR" "$ctx/python"
cp -a "$PYTHON_MODELS_DIR" "$ctx/python-models"
for f in "${tokenizer_inputs[@]}"; do cp "$f" "$ctx/tokenizer/"; done
{
  printf '#!/usr/bin/env bash\n'
  printf '# Rendered by bake.sh from the plan'"'"'s launch command.\n'
  printf 'set -euo pipefail\n'
  printf '# gemm_config.in is read from the working directory.\n'
  printf 'cd %q\n' "$SERVER_WORKDIR"
  # shellcheck disable=SC2016 # expanded by the launcher, not here
  printf 'export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-%q}\n' "$LAUNCH_CUDA_VISIBLE_DEVICES"
  printf 'exec'
  printf ' %q' "${LAUNCH_ARGV[@]}"
  printf ' "$@"\n'
} >"$ctx/serve"
chmod 0755 "$ctx/serve"
bash -n "$ctx/serve" || die "rendered launcher is not valid bash"

phase tag
content_hash=$(printf 'base=%s\ncontext=%s\nargs=%s|%s|%s|%s|%s\n' "$BASE_IMAGE" "$(hash_files "$ctx")" \
  "$CHECKPOINT_PATH" "$SERVER_WORKDIR" "$MODEL_REPOSITORY_PATH" "$TOKENIZER_PATH" "$LAUNCH_CUDA_VISIBLE_DEVICES" \
  | sha256sum | cut -c1-24)
tag="bake-$content_hash"
log "image tag $tag"

registry_digest "$tag"
if [[ -z $IMAGE_DIGEST ]]; then
  build_and_push "$ctx" "$tag" \
    --build-arg "BASE_IMAGE=$BASE_IMAGE" \
    --build-arg "CHECKPOINT_PATH=$CHECKPOINT_PATH" \
    --build-arg "SERVER_WORKDIR=$SERVER_WORKDIR" \
    --build-arg "MODEL_REPOSITORY_PATH=$MODEL_REPOSITORY_PATH" \
    --build-arg "TOKENIZER_PATH=$TOKENIZER_PATH" \
    --build-arg "CUDA_VISIBLE_DEVICES=$LAUNCH_CUDA_VISIBLE_DEVICES" \
    --label "triton-ft.base-image=$BASE_IMAGE" \
    --label "triton-ft.content-hash=$content_hash"
fi
rm -rf "$ctx"

finish_image_step "$IMAGE_DIGEST" "$tag"
