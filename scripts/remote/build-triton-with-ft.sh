#!/usr/bin/env bash
# Step 2 — triton_with_ft: builds Triton + the FasterTransformer backend from
# pinned commits for the serving GPU's architecture, and pushes it to ECR.
#
# usage: build-triton-with-ft.sh <step-config-file>
#
# Step config (bash file of KEY='value' lines, rendered by the Pulumi program):
#   WORK_ROOT             string  Work root.                                       default '/opt/triton-ft'
#   AWS_REGION            string  Region of the ECR repository.                    e.g. 'us-east-1'
#   ECR_REPOSITORY_URL    string  Repository to push to (no tag).                  e.g. '123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-dev/triton_with_ft'
#   TRITON_VERSION        string  NGC tritonserver release (YY.MM).                e.g. '23.05'
#   FT_BACKEND_REPO_URL   string  fastertransformer_backend git URL.               default 'https://github.com/triton-inference-server/fastertransformer_backend.git'
#   FT_BACKEND_COMMIT     string  40-hex commit of fastertransformer_backend.      e.g. 'e4f9e2b0...' (branches/tags refused)
#   FT_REPO_URL           string  FasterTransformer git URL.                       default 'https://github.com/NVIDIA/FasterTransformer.git'
#   FT_COMMIT             string  40-hex commit of FasterTransformer.              e.g. 'f8e42aac...'
#   SM_LIST               string  Comma-separated CUDA archs for -DSM.             e.g. '86' (A10G), '89' (L4/L40S), '90' (H100/H200)
#   DOCKERFILE_DIR        string  Absolute path of images/triton_with_ft on the host (the build recipe). e.g. '/opt/triton-ft/images/triton_with_ft'
#   BUILD_JOBS            int     Optional; parallel compile jobs.                 default: number of CPUs
#   REQUIRED_FREE_GIB     int     Optional; free disk needed before building.      default '60'
#   RESULT_FILE           string  Optional; where `image=<ref>` is written.        default "$WORK_ROOT/results/triton-with-ft.env"
#
# The image tag is "twf-<TRITON_VERSION>-<hash>", hash = sha256 over the Triton
# version, both commits, the SM list and every file of DOCKERFILE_DIR. When
# that tag already exists in ECR the build is skipped.
#
# Prints: RESULT image=<ECR_REPOSITORY_URL>@sha256:<digest>, RESULT tag=<tag>
set -euo pipefail

# shellcheck source=scripts/remote/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"

step_init triton-with-ft "${1:-}"
FT_BACKEND_REPO_URL=${FT_BACKEND_REPO_URL:-https://github.com/triton-inference-server/fastertransformer_backend.git}
FT_REPO_URL=${FT_REPO_URL:-https://github.com/NVIDIA/FasterTransformer.git}
REQUIRED_FREE_GIB=${REQUIRED_FREE_GIB:-60}
RESULT_FILE=${RESULT_FILE:-$WORK_ROOT/results/triton-with-ft.env}
require_vars AWS_REGION ECR_REPOSITORY_URL TRITON_VERSION SM_LIST DOCKERFILE_DIR
require_commit_pin FT_BACKEND_COMMIT
require_commit_pin FT_COMMIT
require_int REQUIRED_FREE_GIB
require_abs_path DOCKERFILE_DIR
[[ $TRITON_VERSION =~ ^[0-9]{2}\.[0-9]{2}$ ]] || die "TRITON_VERSION must look like YY.MM (e.g. 23.05), got '$TRITON_VERSION'"
[[ $SM_LIST =~ ^[0-9]{2,3}(,[0-9]{2,3})*$ ]] || die "SM_LIST must be comma-separated CUDA archs like '86' or '80,86', got '$SM_LIST'"
[[ -f $DOCKERFILE_DIR/Dockerfile ]] || die "no Dockerfile in DOCKERFILE_DIR=$DOCKERFILE_DIR"
BUILD_JOBS=${BUILD_JOBS:-$(nproc)}
require_int BUILD_JOBS
FT_BACKEND_COMMIT=${FT_BACKEND_COMMIT,,}
FT_COMMIT=${FT_COMMIT,,}
ecr_split "$ECR_REPOSITORY_URL"

step_input_hash "$DOCKERFILE_DIR"
step_skip_if_done

phase tag
recipe_hash=$(hash_files "$DOCKERFILE_DIR")
content_hash=$(printf 'triton=%s\nbackend=%s\nft=%s\nsm=%s\nrecipe=%s\n' \
  "$TRITON_VERSION" "$FT_BACKEND_COMMIT" "$FT_COMMIT" "$SM_LIST" "$recipe_hash" | sha256sum | cut -c1-24)
# The twf- prefix is what the repository's lifecycle policy counts (infra/cloud/ecr.ts).
tag="twf-$TRITON_VERSION-$content_hash"
log "image tag $tag"

image_step_login
registry_digest "$tag"
if [[ -z $IMAGE_DIGEST ]]; then
  phase disk
  check_free_disk "$WORK_ROOT" "$REQUIRED_FREE_GIB"

  # checkout <url> <commit> <dest> : an exact commit, reused when the folder
  # already holds it; otherwise fetched into a temp folder and renamed.
  checkout() {
    local url=$1 commit=$2 dest=$3 tmp head
    if [[ -d $dest/.git ]] && head=$(git -C "$dest" rev-parse HEAD 2>/dev/null) && [[ $head == "$commit" ]]; then
      log "$dest already at $commit"
      return 0
    fi
    tmp=$dest.tmp
    rm -rf "$tmp"
    mkdir -p "$tmp"
    git -C "$tmp" init -q
    git -C "$tmp" remote add origin "$url"
    # A shallow fetch of one commit is quick; fall back to a full fetch for
    # servers that refuse fetching by SHA.
    if ! retry 3 10 git -C "$tmp" fetch -q --depth 1 origin "$commit"; then
      warn "shallow fetch of $commit refused; fetching the full history"
      retry 3 10 git -C "$tmp" fetch -q origin
    fi
    git -C "$tmp" -c advice.detachedHead=false checkout -q --force "$commit"
    head=$(git -C "$tmp" rev-parse HEAD)
    [[ $head == "$commit" ]] || die "checkout of $url gave $head, expected $commit"
    verify_upstream "$tmp" "$url" "$commit"
    replace_dir "$tmp" "$dest"
    log "checked out $url at $commit"
  }

  # verify_upstream <repo-dir> <url> <commit> : the commit must be reachable
  # from an upstream branch or tag. GitHub serves any commit by SHA, including
  # a pull request's test merge (refs/pull/N/merge), which is on no branch, can
  # disappear and is not what upstream released: refuse those before an hour
  # of compiling. Branch and tag history comes without file contents
  # (--filter=blob:none), so this costs seconds even for FasterTransformer.
  verify_upstream() {
    local dir=$1 url=$2 commit=$3 refs
    local spec=('+refs/heads/*:refs/remotes/origin/*' '+refs/tags/*:refs/tags/*')
    if ! retry 3 10 git -C "$dir" fetch -q --filter=blob:none origin "${spec[@]}"; then
      warn "partial fetch of the branches and tags of $url refused; fetching them in full"
      retry 3 10 git -C "$dir" fetch -q origin "${spec[@]}"
    fi
    refs=$(git -C "$dir" for-each-ref --contains "$commit" --format='%(refname:short)' refs/remotes/origin refs/tags | head -n 3 | tr '\n' ' ')
    [[ -n $refs ]] || die "pinned commit $commit of $url is on no upstream branch or tag (a pull request's test merge or a deleted branch?); pin a commit of a branch or tag (see docs/operating.md, \"Upstream pins\")"
    log "$commit is reachable from $refs"
  }

  phase clone
  require_cmd git
  src=$WORK_ROOT/src
  ensure_dir "$src"
  checkout "$FT_BACKEND_REPO_URL" "$FT_BACKEND_COMMIT" "$src/fastertransformer_backend"
  checkout "$FT_REPO_URL" "$FT_COMMIT" "$src/FasterTransformer"
  # FT keeps some third-party code (e.g. cutlass in later versions) as
  # submodules under 3rdparty/; the build needs them, the examples' do not.
  # `git config` exits 1 for no .gitmodules or no path in it: no submodules.
  # Read here in the step's shell, not in a process substitution: there the
  # error trap fired on that 1 (a false ERROR line) while a real failure
  # went unseen.
  git_rc=0
  gitmodule_paths=$(git -C "$src/FasterTransformer" config -f .gitmodules --get-regexp '^submodule\..*\.path$' 2>/dev/null) \
    || git_rc=$?
  ((git_rc <= 1)) || die "reading $src/FasterTransformer/.gitmodules failed (git config exit $git_rc)"
  ft_submodules=()
  while read -r _key path; do
    if [[ $path == 3rdparty/* ]]; then ft_submodules+=("$path"); fi
  done <<<"$gitmodule_paths"
  if ((${#ft_submodules[@]})); then
    retry 3 10 git -C "$src/FasterTransformer" submodule update --init --recursive -- "${ft_submodules[@]}"
  fi

  phase context
  # The build context holds the recipe and both checkouts without .git.
  ctx=$TMP_ROOT/triton-with-ft-context
  rm -rf "$ctx"
  mkdir -p "$ctx"
  cp -a "$DOCKERFILE_DIR/." "$ctx/"
  for repo in fastertransformer_backend FasterTransformer; do
    mkdir -p "$ctx/$repo"
    tar -C "$src/$repo" --exclude=.git -cf - . | tar -C "$ctx/$repo" -xf -
  done

  build_and_push "$ctx" "$tag" \
    --build-arg "TRITON_VERSION=$TRITON_VERSION" \
    --build-arg "SM=$SM_LIST" \
    --build-arg "BUILD_JOBS=$BUILD_JOBS" \
    --build-arg "FT_BACKEND_COMMIT=$FT_BACKEND_COMMIT" \
    --build-arg "FT_COMMIT=$FT_COMMIT" \
    --label "org.opencontainers.image.revision=$FT_BACKEND_COMMIT" \
    --label "triton-ft.ft-commit=$FT_COMMIT" \
    --label "triton-ft.sm=$SM_LIST" \
    --label "triton-ft.content-hash=$content_hash"
  rm -rf "$ctx"
fi

finish_image_step "$IMAGE_DIGEST" "$tag"
