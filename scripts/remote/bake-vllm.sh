#!/usr/bin/env bash
# Step bake of a vLLM model: builds the server image FROM the catalog's pinned
# Triton-with-vLLM image (by digest) with the Hugging Face checkpoint and the
# vLLM model repository inside, and pushes it to ECR. No conversion and no
# gemm: vLLM loads the checkpoint as it is. A CodeGen checkpoint is first re-laid
# out as GPT-J (scripts/convert/codegen_to_gptj.py, run inside the base image,
# which has torch), a resumable phase: its output is swapped in only complete.
# Needs no GPU: Docker and the disk only.
#
# usage: bake-vllm.sh <step-config-file>
#
# Step config (bash file of KEY='value' lines and arrays, rendered by the Pulumi program):
#   WORK_ROOT              string  Work root.                                  default '/opt/triton-ft'
#   AWS_REGION             string  Region of the ECR repository.               e.g. 'us-east-1'
#   BASE_IMAGE             string  Triton with vLLM, digest-pinned.            e.g. 'nvcr.io/nvidia/tritonserver@sha256:31e2..'
#   ECR_REPOSITORY_URL     string  Server image repository (no tag).           e.g. '123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-dev/server/tiny'
#   DOCKERFILE_DIR         string  Absolute host path of images/vllm.          e.g. '/opt/triton-ft/images/vllm'
#   MODEL_DIR              string  Host folder of the fetched checkpoint.      e.g. '/opt/triton-ft/work/tiny/source'
#   MODEL_FILES            array   Files the checkpoint must hold (the tokenizer's and config.json). e.g. ('config.json' 'tokenizer.json')
#   CHECK_ARGV             array   Optional; the config.json check of a family fetch does not check (llama:
#                                  check_llama_config.py, on the host, stdlib only; {{SCRIPTS}} substituted). default ()
#   RELAYOUT_ARGV          array   Optional; the CodeGen re-layout ({{SCRIPTS}}, {{INPUT}}, {{OUTPUT}} substituted). default ()
#   MODEL_PATH             string  Absolute checkpoint folder in the image (= model_path). e.g. '/opt/triton-ft/model'
#   MODEL_REPOSITORY_DIR   string  Host folder with the rendered ensemble/config.pbtxt.
#   MODEL_REPOSITORY_PATH  string  Absolute model repository path in the image. e.g. '/opt/triton-ft/model-repository'
#   SHIPPED                array   '<host path>=<path in the repository>' of the model and its packages.
#                                  e.g. ('/opt/triton-ft/images/vllm/model_repository/ensemble/1/model.py=ensemble/1/model.py')
#   LAUNCH_ARGV            array   Server command.                            e.g. (/opt/tritonserver/bin/tritonserver --model-repository=/opt/triton-ft/model-repository)
#   LAUNCH_CUDA_VISIBLE_DEVICES string GPUs the model uses.                   e.g. '0,1'
#   REQUIRED_FREE_GIB      int     Optional; free disk needed before baking.   default '0'
#   RESULT_FILE            string  Optional; where `image=<ref>` is written.   default "$WORK_ROOT/results/server-image.env"
#
# The tag is "bake-<hash>", hash = sha256 over the base image reference and
# every file of the build context (the checkpoint included). An existing tag in
# ECR is reused without building.
#
# Prints: RESULT image=<ECR_REPOSITORY_URL>@sha256:<digest>, RESULT tag=<tag>
set -euo pipefail

# shellcheck source=scripts/remote/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"

step_init bake "${1:-}"
require_vars AWS_REGION BASE_IMAGE ECR_REPOSITORY_URL DOCKERFILE_DIR MODEL_DIR MODEL_PATH MODEL_REPOSITORY_DIR \
  MODEL_REPOSITORY_PATH LAUNCH_CUDA_VISIBLE_DEVICES
REQUIRED_FREE_GIB=${REQUIRED_FREE_GIB:-0}
RESULT_FILE=${RESULT_FILE:-$WORK_ROOT/results/server-image.env}
require_int REQUIRED_FREE_GIB
for v in DOCKERFILE_DIR MODEL_DIR MODEL_PATH MODEL_REPOSITORY_DIR MODEL_REPOSITORY_PATH; do
  require_abs_path "$v"
done
require_digest_ref BASE_IMAGE
[[ $LAUNCH_CUDA_VISIBLE_DEVICES =~ ^[0-9]+(,[0-9]+)*$ ]] \
  || die "LAUNCH_CUDA_VISIBLE_DEVICES must be a GPU index list like '0' or '0,1', got '$LAUNCH_CUDA_VISIBLE_DEVICES'"
default_array MODEL_FILES CHECK_ARGV RELAYOUT_ARGV SHIPPED LAUNCH_ARGV
((${#LAUNCH_ARGV[@]})) || die "LAUNCH_ARGV is empty; the plan must give the server command"
((${#SHIPPED[@]})) || die "SHIPPED is empty; the model repository needs model.py and its packages"
[[ -f $DOCKERFILE_DIR/Dockerfile ]] || die "no Dockerfile in DOCKERFILE_DIR=$DOCKERFILE_DIR"
[[ -d $MODEL_DIR ]] || die "MODEL_DIR $MODEL_DIR does not exist; run the fetch step first"
[[ -f $MODEL_REPOSITORY_DIR/ensemble/config.pbtxt ]] \
  || die "model repository lacks ensemble/config.pbtxt ($MODEL_REPOSITORY_DIR)"
for f in "${MODEL_FILES[@]}"; do
  [[ $f != */* && $f != .* ]] || die "model file entries are plain file names, got '$f'"
  [[ -f $MODEL_DIR/$f ]] || die "checkpoint file missing: $MODEL_DIR/$f"
done
shipped_inputs=()
for entry in "${SHIPPED[@]}"; do
  [[ $entry == /*=* ]] || die "SHIPPED entries are '<absolute host path>=<repository path>', got '$entry'"
  src=${entry%%=*} dest=${entry#*=}
  [[ $dest != /* && $dest != *..* ]] || die "SHIPPED target must stay inside the repository, got '$dest'"
  [[ -e $src ]] || die "SHIPPED source missing: $src"
  shipped_inputs+=("$src")
done

# The checkpoint enters the input hash through the fetch stamp (hashing GBs on every run would be slow);
# the image tag below hashes the real bytes.
hash_extra=("$DOCKERFILE_DIR" "$MODEL_REPOSITORY_DIR" "${shipped_inputs[@]}")
fetch_stamp=$MODEL_DIR/.triton-ft-fetch
if [[ -f $fetch_stamp ]]; then hash_extra+=("$fetch_stamp"); else hash_extra+=("$MODEL_DIR"); fi
step_input_hash "${hash_extra[@]}"
step_skip_if_done
host_lock bake
ecr_split "$ECR_REPOSITORY_URL"

if ((${#CHECK_ARGV[@]})); then
  phase check-config
  substitute_placeholders CHECK_ARGV "SCRIPTS=$TRITON_FT_SCRIPTS_ROOT"
  PYTHONDONTWRITEBYTECODE=1 "${CHECK_ARGV[@]}" >&2 || die "$MODEL_DIR/config.json does not match the plan's architecture"
fi

phase disk
check_free_disk "$WORK_ROOT" "$REQUIRED_FREE_GIB"
image_step_login
phase pull-base
pull_image "$AWS_REGION" "$BASE_IMAGE" "$ECR_REGISTRY"

served_dir=$MODEL_DIR
if ((${#RELAYOUT_ARGV[@]})); then
  phase relayout
  # Resumable: a finished re-layout of this input hash is kept; a partial one is never used
  # (codegen_to_gptj.py writes a temp sibling and renames it when complete).
  relaid=$MODEL_DIR.gptj-$STEP_INPUT_HASH
  if [[ ! -f $relaid/.triton-ft-relayout ]]; then
    rm -rf "$relaid"
    substitute_placeholders RELAYOUT_ARGV "SCRIPTS=$TRITON_FT_SCRIPTS_ROOT" "INPUT=$MODEL_DIR" "OUTPUT=$relaid"
    docker run --rm --user "$(id -u):$(id -g)" -e HOME=/tmp -e PYTHONDONTWRITEBYTECODE=1 \
      -v "$MODEL_DIR:$MODEL_DIR:ro" -v "$(dirname "$MODEL_DIR"):$(dirname "$MODEL_DIR")" \
      -v "$TRITON_FT_SCRIPTS_ROOT:$TRITON_FT_SCRIPTS_ROOT:ro" \
      "$BASE_IMAGE" "${RELAYOUT_ARGV[@]}" >&2 \
      || die "the CodeGen re-layout failed for $MODEL_DIR"
    [[ -d $relaid ]] || die "the CodeGen re-layout wrote no $relaid"
    printf 'input_hash=%s\n' "$STEP_INPUT_HASH" >"$relaid/.triton-ft-relayout"
  else
    log "re-layout of this input hash already done: $relaid"
  fi
  for old in "$MODEL_DIR".gptj-*; do
    [[ $old == "$relaid" || ! -d $old ]] || rm -rf "$old"
  done
  served_dir=$relaid
fi

phase context
ctx=$TMP_ROOT/bake-context
rm -rf "$ctx"
mkdir -p "$ctx"
cp "$DOCKERFILE_DIR/Dockerfile" "$ctx/Dockerfile"
# Hard links avoid copying GBs when the context is on the same disk; the stamp and partial downloads stay out.
cp -al "$served_dir" "$ctx/model" 2>/dev/null || cp -a "$served_dir" "$ctx/model"
rm -rf "$ctx"/model/.triton-ft-* "$ctx/model/.cache"
cp -a "$MODEL_REPOSITORY_DIR" "$ctx/model-repository"
for entry in "${SHIPPED[@]}"; do
  src=${entry%%=*} dest=$ctx/model-repository/${entry#*=}
  mkdir -p "$(dirname "$dest")"
  cp -a "$src" "$dest"
done
find "$ctx/model-repository" -name __pycache__ -prune -exec rm -rf {} +
{
  printf '#!/usr/bin/env bash\n'
  printf '# Rendered by bake-vllm.sh from the plan'"'"'s launch command.\n'
  printf 'set -euo pipefail\n'
  # shellcheck disable=SC2016 # expanded by the launcher, not here
  printf 'export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-%q}\n' "$LAUNCH_CUDA_VISIBLE_DEVICES"
  printf 'exec'
  printf ' %q' "${LAUNCH_ARGV[@]}"
  printf ' "$@"\n'
} >"$ctx/serve"
chmod 0755 "$ctx/serve"
bash -n "$ctx/serve" || die "rendered launcher is not valid bash"

phase tag
content_hash=$(printf 'base=%s\ncontext=%s\nargs=%s|%s|%s\n' "$BASE_IMAGE" "$(hash_files "$ctx")" \
  "$MODEL_PATH" "$MODEL_REPOSITORY_PATH" "$LAUNCH_CUDA_VISIBLE_DEVICES" | sha256sum | cut -c1-24)
tag="bake-$content_hash"
log "image tag $tag"

registry_digest "$tag"
if [[ -z $IMAGE_DIGEST ]]; then
  build_and_push "$ctx" "$tag" \
    --build-arg "BASE_IMAGE=$BASE_IMAGE" \
    --build-arg "MODEL_PATH=$MODEL_PATH" \
    --build-arg "MODEL_REPOSITORY_PATH=$MODEL_REPOSITORY_PATH" \
    --build-arg "CUDA_VISIBLE_DEVICES=$LAUNCH_CUDA_VISIBLE_DEVICES" \
    --label "triton-ft.base-image=$BASE_IMAGE" \
    --label "triton-ft.content-hash=$content_hash"
fi
rm -rf "$ctx"

finish_image_step "$IMAGE_DIGEST" "$tag"
