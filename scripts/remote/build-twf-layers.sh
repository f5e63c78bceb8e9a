#!/usr/bin/env bash
# Step twf-layers: builds triton_with_ft's recipe layers (the NGC base, the apt
# layer, the pip layer of requirements.lock: every layer before the compile)
# and pushes them to ECR under a tag of their own, while the compile runs.
#
# usage: build-twf-layers.sh <step-config-file>
#
# Step config (bash file of KEY='value' lines, rendered by the Pulumi program):
#   WORK_ROOT             string  Work root.                                       default '/opt/triton-ft'
#   AWS_REGION            string  Region of the ECR repository.                    e.g. 'us-east-1'
#   ECR_REPOSITORY_URL    string  triton_with_ft's repository (no tag).            e.g. '123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-dev/triton_with_ft'
#   TRITON_VERSION        string  NGC tritonserver release (YY.MM).                e.g. '23.05'
#   FT_BACKEND_COMMIT     string  40-hex commit of fastertransformer_backend.      e.g. 'e4f9e2b0...'
#   FT_COMMIT             string  40-hex commit of FasterTransformer.              e.g. 'f8e42aac...'
#   SM_LIST               string  Comma-separated CUDA archs for -DSM.             e.g. '86'
#   DOCKERFILE_DIR        string  Absolute path of images/triton_with_ft on the host (the build recipe). e.g. '/opt/triton-ft/images/triton_with_ft'
#   BUILD_JOBS            int     Optional; as build-triton-with-ft.sh passes it.  default: number of CPUs
#   REQUIRED_FREE_GIB     int     Optional; free disk needed before building.      default '60'
#
# It runs on the compile host beside build-triton-with-ft.sh, with the same
# Docker daemon: the Dockerfile truncated before its first line that needs the
# FT checkouts (scripts/remote/twf/tags.sh), from a context of DOCKERFILE_DIR
# only, with exactly the main build's --build-args (an ARG declared before a
# RUN is in that RUN's cache key). BuildKit shares its cache and merges the
# identical vertices the two builds run at once, so these are the very layers
# the full image gets, and its push finds them in the repository ("Layer
# already exists"); the GPU builder pulls them early (pull-twf-layers.sh), so
# gemm's pull of the full image moves only the compile's layers.
#
# Skipped when the full image's tag (twf-<ver>-<hash>, the formula of
# build-triton-with-ft.sh) or the layers tag (twflayers-<ver>-<hash>) is
# already in ECR: on a live stack the full image is, and this takes seconds.
# The layers image is never tagged `live`: the repository's lifecycle policy
# expires old ones by their own prefix (infra/cloud/ecr.ts).
#
# Prints: RESULT layers_tag=<tag>, RESULT layers=<pushed|in-ecr|full-image-in-ecr>
set -euo pipefail

# shellcheck source=scripts/remote/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
TWF_TAGS=$(dirname "$(readlink -f "$0")")/twf/tags.sh
# shellcheck source=scripts/remote/twf/tags.sh
source "$TWF_TAGS"

step_init twf-layers "${1:-}"
REQUIRED_FREE_GIB=${REQUIRED_FREE_GIB:-60}
twf_require_recipe_config
require_int REQUIRED_FREE_GIB
[[ -f $DOCKERFILE_DIR/Dockerfile ]] || die "no Dockerfile in DOCKERFILE_DIR=$DOCKERFILE_DIR"
BUILD_JOBS=${BUILD_JOBS:-$(nproc)}
require_int BUILD_JOBS
FT_BACKEND_COMMIT=${FT_BACKEND_COMMIT,,}
FT_COMMIT=${FT_COMMIT,,}
ecr_split "$ECR_REPOSITORY_URL"

step_input_hash "$DOCKERFILE_DIR" "$TWF_TAGS"
step_skip_if_done

phase tag
content_hash=$(twf_content_hash "$TRITON_VERSION" "$FT_BACKEND_COMMIT" "$FT_COMMIT" "$SM_LIST" "$DOCKERFILE_DIR")
full_tag=$(twf_image_tag "$content_hash" "$TRITON_VERSION")
layers_tag=$(twf_layers_tag "$content_hash" "$TRITON_VERSION")
log "layers tag $layers_tag (the full image's: $full_tag)"

image_step_login
phase check-registry
# Plain assignments, not inside an `if`: a failed lookup must end the step (lib/ecr.sh).
full_digest=$(ecr_tag_digest "$AWS_REGION" "$ECR_REPO_NAME" "$full_tag")
layers_digest=""
if [[ -z $full_digest ]]; then layers_digest=$(ecr_tag_digest "$AWS_REGION" "$ECR_REPO_NAME" "$layers_tag"); fi
if [[ -n $full_digest ]]; then
  log "the full image $full_tag is in ECR, its layers with it; not building"
  outcome=full-image-in-ecr
elif [[ -n $layers_digest ]]; then
  log "tag $layers_tag already in ECR; not building"
  outcome=in-ecr
else
  phase disk
  check_free_disk "$WORK_ROOT" "$REQUIRED_FREE_GIB"
  phase context
  ctx=$TMP_ROOT/twf-layers-context
  rm -rf "$ctx"
  mkdir -p "$ctx"
  cp -a "$DOCKERFILE_DIR/." "$ctx/"
  twf_recipe_dockerfile "$DOCKERFILE_DIR/Dockerfile" "$ctx/Dockerfile"
  # The main build's arguments, in its order (build-triton-with-ft.sh).
  build_and_push "$ctx" "$layers_tag" \
    --build-arg "TRITON_VERSION=$TRITON_VERSION" \
    --build-arg "SM=$SM_LIST" \
    --build-arg "BUILD_JOBS=$BUILD_JOBS" \
    --build-arg "FT_BACKEND_COMMIT=$FT_BACKEND_COMMIT" \
    --build-arg "FT_COMMIT=$FT_COMMIT"
  rm -rf "$ctx"
  log "pushed $ECR_REPOSITORY_URL:$layers_tag ($IMAGE_DIGEST)"
  outcome=pushed
fi

result layers_tag "$layers_tag"
result layers "$outcome"
step_done
