#!/usr/bin/env bash
# tag-deployed.sh <aws-region> <image> : marks <image>, a digest-pinned ECR
# reference <registry>/<repository>@sha256:<hex>, as deployed: its
# repository's `deployed` tag moves to it and the image `deployed` named
# before becomes `deployed-previous`. The lifecycle policy never expires
# either tag (infra/cloud/ecr.ts), so the running image and its rollback
# target stay pullable however many builds follow.
#
# Run on the builder by BuildPipeline.markDeployed after the workload's
# Deployment rolled out (its await succeeded), not by a build step: a build
# whose rollout fails never becomes `deployed`. Idempotent: re-running it for
# the image `deployed` already names changes nothing.
set -euo pipefail
STEP_NAME="tag-deployed"
# shellcheck source=scripts/remote/lib.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

[[ $# -eq 2 ]] || die "usage: tag-deployed.sh <aws-region> <registry>/<repository>@sha256:<digest>"
region=$1 image=$2
[[ $image =~ $DIGEST_REF_RE ]] || die "image '$image' is not a digest-pinned reference <registry>/<repository>@sha256:<64 hex>"
require_cmd aws
ecr_split "${image%@*}"
ecr_mark_deployed "$region" "$ECR_REPO_NAME" "${image#*@}"
result deployed "$image"
