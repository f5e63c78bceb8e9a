#!/usr/bin/env bash
# Step twf-layers-pull: pulls triton_with_ft's recipe layers (build-twf-layers.sh)
# onto the GPU builder while the compile still runs, so that gemm's pull of
# the full image by digest finds them ("Already exists") and moves only the
# compile's own layers.
#
# usage: pull-twf-layers.sh <step-config-file>
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
#
# The tags come from scripts/remote/twf/tags.sh, as build-twf-layers.sh's.
# Skipped when the full image is in ECR (gemm pulls it whole: on a live stack
# it is there, and this takes seconds) or the layers image is already local.
#
# Prints: RESULT layers=<pulled|present|full-image-in-ecr>
set -euo pipefail

# shellcheck source=scripts/remote/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
TWF_TAGS=$(dirname "$(readlink -f "$0")")/twf/tags.sh
# shellcheck source=scripts/remote/twf/tags.sh
source "$TWF_TAGS"

step_init twf-layers-pull "${1:-}"
twf_require_recipe_config
[[ -d $DOCKERFILE_DIR ]] || die "DOCKERFILE_DIR=$DOCKERFILE_DIR is not a folder"
ecr_split "$ECR_REPOSITORY_URL"

step_input_hash "$DOCKERFILE_DIR" "$TWF_TAGS"
step_skip_if_done

phase tag
content_hash=$(twf_content_hash "$TRITON_VERSION" "$FT_BACKEND_COMMIT" "$FT_COMMIT" "$SM_LIST" "$DOCKERFILE_DIR")
full_tag=$(twf_image_tag "$content_hash" "$TRITON_VERSION")
layers_tag=$(twf_layers_tag "$content_hash" "$TRITON_VERSION")

image_step_login
phase check-registry
# Plain assignments, not inside an `if`: a failed lookup must end the step (lib/ecr.sh).
full_digest=$(ecr_tag_digest "$AWS_REGION" "$ECR_REPO_NAME" "$full_tag")
if [[ -n $full_digest ]]; then
  log "the full image $full_tag is in ECR: gemm pulls it whole; nothing to pull ahead"
  outcome=full-image-in-ecr
else
  digest=$(ecr_tag_digest "$AWS_REGION" "$ECR_REPO_NAME" "$layers_tag")
  [[ -n $digest ]] || die "neither $full_tag nor $layers_tag is in $ECR_REPOSITORY_URL: the twf-layers step pushes the latter first"
  ref=$ECR_REPOSITORY_URL@$digest
  if docker image inspect "$ref" >/dev/null 2>&1; then
    log "$ref is already on this host"
    outcome=present
  else
    phase pull
    pull_image "$AWS_REGION" "$ref" "$ECR_REGISTRY"
    log "pulled $ref"
    outcome=pulled
  fi
fi

result layers "$outcome"
step_done
