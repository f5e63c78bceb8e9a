# shellcheck shell=bash
# ECR: login, tag lookups, pushes and pulls, and the shared tail of the image steps.
# Sourced by ../lib.sh (never on its own), with the other lib/ files: it
# may use any helper they define.

# ecr_split <repository-url> : sets ECR_REGISTRY and ECR_REPO_NAME from
# <account>.dkr.ecr.<region>.amazonaws.com/<name>.
ecr_split() {
  local url=$1
  [[ $url == */* ]] || die "ECR repository URL '$url' has no '/<repository-name>' part"
  # shellcheck disable=SC2034 # globals read by the step scripts
  ECR_REGISTRY=${url%%/*}
  # shellcheck disable=SC2034
  ECR_REPO_NAME=${url#*/}
}

# ecr_login <region> <registry> : the password goes through a pipe, never
# through an argument or a log line.
ecr_login() {
  local region=$1 registry=$2
  retry 3 5 _ecr_login_once "$region" "$registry" \
    || die "docker login to $registry failed; check the instance role's ECR permissions"
  log "logged in to $registry"
}

_ecr_login_once() {
  aws ecr get-login-password --region "$1" | docker login --username AWS --password-stdin "$2" >/dev/null
}

# ecr_tag_digest <region> <repository-name> <tag> : prints the digest
# (sha256:...) of the tag, or nothing when the tag does not exist. Any other
# failure (credentials, missing repository) is fatal: treating it as "not
# there" would start an hour-long build that then fails to push.
ecr_tag_digest() {
  local out err
  err=$(mktemp)
  if out=$(aws ecr describe-images --region "$1" --repository-name "$2" \
    --image-ids "imageTag=$3" --query 'imageDetails[0].imageDigest' --output text 2>"$err"); then
    rm -f "$err"
    [[ $out == sha256:* ]] || die "unexpected describe-images answer for $2:$3: '$out'"
    printf '%s\n' "$out"
    return 0
  fi
  if grep -q 'ImageNotFoundException' "$err"; then
    rm -f "$err"
    return 0
  fi
  log "aws ecr describe-images failed: $(tr '\n' ' ' <"$err")"
  rm -f "$err"
  die "cannot query ECR repository $2 in $1"
}

# push_image <region> <repository-name> <local-ref> <tag> : pushes the image
# (with retries) and prints the digest ECR recorded for the tag, so the result
# names exactly what was pushed.
push_image() {
  local digest
  retry 3 30 docker push "$3" >&2
  digest=$(ecr_tag_digest "$1" "$2" "$4")
  [[ -n $digest ]] || die "pushed $3 but ECR does not list tag $4"
  printf '%s\n' "$digest"
}

# pull_image <region> <image> [logged-in-registry] : pulls a digest-pinned
# image (with retries), logging in to its registry first when it is ECR and
# not the one this step already logged in to.
pull_image() {
  local registry=${2%%/*}
  if [[ $registry == *.dkr.ecr.*.amazonaws.com && $registry != "${3:-}" ]]; then
    ecr_login "$1" "$registry"
  fi
  retry 3 30 docker pull -q "$2" >/dev/null
}

# The image steps (build-triton-with-ft.sh, bake.sh, build-gateway-image.sh)
# share one tail: log in to the repository's registry, look the content-hash
# tag up, build and push only when it is missing, protect the image, record the
# results:
#   image_step_login
#   registry_digest "$tag"
#   if [[ -z $IMAGE_DIGEST ]]; then ...; build_and_push "$ctx" "$tag" [args]; fi
#   finish_image_step "$IMAGE_DIGEST" "$tag"
# Each needs ecr_split "$ECR_REPOSITORY_URL" and AWS_REGION.

# image_step_login : logs in to the registry the step pushes to.
image_step_login() {
  phase ecr-login
  require_cmd aws docker
  ecr_login "$AWS_REGION" "$ECR_REGISTRY"
}

# registry_digest <tag> : sets IMAGE_DIGEST to the digest ECR holds for
# $ECR_REPOSITORY_URL:<tag>, or to nothing when the tag is not there yet. Call
# it as a plain statement (not in an `if`), so that a failed lookup still ends
# the step.
registry_digest() {
  phase check-registry
  IMAGE_DIGEST=$(ecr_tag_digest "$AWS_REGION" "$ECR_REPO_NAME" "$1")
  if [[ -n $IMAGE_DIGEST ]]; then
    log "tag $1 already in ECR ($IMAGE_DIGEST); not building"
  fi
}

# build_and_push <context-dir> <tag> [docker build args...] : builds
# $ECR_REPOSITORY_URL:<tag> (retried: Docker's layer cache resumes an
# interrupted build) and pushes it; sets IMAGE_DIGEST to what ECR recorded.
# Needs ecr_split "$ECR_REPOSITORY_URL" and a login to its registry.
build_and_push() {
  local ctx=$1 tag=$2 local_ref
  shift 2
  local_ref="$ECR_REPOSITORY_URL:$tag"
  phase build
  retry 2 30 docker build "$@" -t "$local_ref" "$ctx" >&2
  phase push
  # shellcheck disable=SC2034 # read by the image steps
  IMAGE_DIGEST=$(push_image "$AWS_REGION" "$ECR_REPO_NAME" "$local_ref" "$tag")
}

# finish_image_step <digest> <tag> : protects the image from expiry (tag live),
# then the image steps' results, then the marker.
finish_image_step() {
  phase protect
  ecr_protect "$AWS_REGION" "$ECR_REPO_NAME" "$1"
  result image "$ECR_REPOSITORY_URL@$1"
  result tag "$2"
  step_done
}

# ecr_protect <region> <repository-name> <digest> : tags the image `live`,
# and the image that was `live` before it `previous`. These are mutable tags
# of the repositories, and the lifecycle policy never expires an image that
# carries one (infra/cloud/ecr.ts): the newest build survives even when it
# is the oldest push (a skipped bake keeps its date).
ecr_protect() {
  ecr_rotate_tag "$1" "$2" "$3" live previous
}

# ecr_mark_deployed <region> <repository-name> <digest> : tags the image a
# workload runs `deployed` once its rollout succeeded, and the image that
# was `deployed` before it `deployed-previous` (the rollback target). Run by
# tag-deployed.sh after the Deployment's rollout, never by a build step.
ecr_mark_deployed() {
  ecr_rotate_tag "$1" "$2" "$3" deployed deployed-previous
}

# ecr_rotate_tag <region> <repository-name> <digest> <tag> <previous-tag> :
# moves <tag> to the digest, and <previous-tag> to the digest <tag> named
# before (nothing moves when <tag> already names the digest).
ecr_rotate_tag() {
  local region=$1 repo=$2 digest=$3 tag=$4 previous=$5 current
  current=$(ecr_tag_digest "$region" "$repo" "$tag")
  if [[ $current == "$digest" ]]; then
    # A re-run (or a rollout of the image already tagged): nothing to move, and the
    # previous tag must keep naming the image before it.
    log "tag $tag already names $repo@$digest; skipping"
    return 0
  fi
  if [[ $current == sha256:* ]]; then
    _ecr_move_tag "$region" "$repo" "$current" "$previous"
  fi
  _ecr_move_tag "$region" "$repo" "$digest" "$tag"
  log "protected $repo@$digest from expiry (tag $tag)"
}

# _ecr_move_tag <region> <repository-name> <digest> <tag> : points a mutable tag at a digest.
_ecr_move_tag() {
  local manifest media
  manifest=$(aws ecr batch-get-image --region "$1" --repository-name "$2" --image-ids "imageDigest=$3" \
    --query 'images[0].imageManifest' --output text) || die "cannot read the manifest of $2@$3"
  media=$(aws ecr batch-get-image --region "$1" --repository-name "$2" --image-ids "imageDigest=$3" \
    --query 'images[0].imageManifestMediaType' --output text) || die "cannot read the manifest type of $2@$3"
  aws ecr put-image --region "$1" --repository-name "$2" --image-tag "$4" \
    --image-manifest "$manifest" --image-manifest-media-type "$media" >/dev/null \
    || die "cannot tag $2@$3 as $4 (the repository must allow moving tag $4: IMMUTABLE_WITH_EXCLUSION)"
}
