#!/usr/bin/env bash
# Step 7 — gateway-image: builds the gateway image (images/gateway: the
# OpenAI-compatible, authenticated front of Triton) and pushes it to ECR.
#
# usage: build-gateway-image.sh <step-config-file>
#
# Step config (bash file of KEY='value' lines, rendered by the Pulumi program):
#   WORK_ROOT           string  Work root.                                  default '/opt/triton-ft'
#   AWS_REGION          string  Region of the ECR repository.               e.g. 'us-east-1'
#   ECR_REPOSITORY_URL  string  Repository to push to (no tag).             e.g. '123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-dev/gateway'
#   DOCKERFILE_DIR      string  Absolute host path of images/gateway.       e.g. '/opt/triton-ft/images/gateway'
#   RESULT_FILE         string  Optional; where `image=<ref>` is written.   default "$WORK_ROOT/results/gateway-image.env"
#
# The build context is the package's sources only (Dockerfile, package.json,
# package-lock.json, tsconfig.json, src/): a node_modules/ or dist/ shipped
# from a developer's checkout never reaches the image or the hash. The tag is
# "gateway-<hash>", hash = sha256 over that context; an existing tag in ECR
# is reused without building.
#
# Prints: RESULT image=<ECR_REPOSITORY_URL>@sha256:<digest>, RESULT tag=<tag>
set -euo pipefail

# shellcheck source=scripts/remote/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"

step_init gateway-image "${1:-}"
RESULT_FILE=${RESULT_FILE:-$WORK_ROOT/results/gateway-image.env}
require_vars AWS_REGION ECR_REPOSITORY_URL DOCKERFILE_DIR
require_abs_path DOCKERFILE_DIR
CONTEXT_FILES=(Dockerfile .dockerignore package.json package-lock.json tsconfig.json src)
for f in "${CONTEXT_FILES[@]}"; do
  [[ -e $DOCKERFILE_DIR/$f ]] || die "DOCKERFILE_DIR=$DOCKERFILE_DIR has no $f: is it images/gateway?"
done
ecr_split "$ECR_REPOSITORY_URL"

phase context
ctx=$TMP_ROOT/gateway-context
rm -rf "$ctx"
mkdir -p "$ctx"
for f in "${CONTEXT_FILES[@]}"; do
  cp -a "$DOCKERFILE_DIR/$f" "$ctx/"
done

step_input_hash "$ctx"
step_skip_if_done

phase tag
content_hash=$(hash_files "$ctx" | sha256sum | cut -c1-24)
tag="gateway-$content_hash"
log "image tag $tag"

image_step_login
registry_digest "$tag"
if [[ -z $IMAGE_DIGEST ]]; then
  build_and_push "$ctx" "$tag" --label "triton-ft.content-hash=$content_hash"
fi
rm -rf "$ctx"

finish_image_step "$IMAGE_DIGEST" "$tag"
