# shellcheck shell=bash
# triton_with_ft's tags and its recipe layers, for the steps that move those
# layers ahead of the compile (build-twf-layers.sh, pull-twf-layers.sh).
# Sourced after ../lib.sh (its die, require_* and hash_files).
#
# Why not in ../lib/: lib.sh and lib/ are inputs of every step's hash
# (infra/plan/stepGraph.ts, lib/hash.sh), so a helper there would re-run every
# step of every live stack. build-triton-with-ft.sh keeps its own copy of the
# content-hash formula for the same reason (editing it would rebuild every
# live stack's image); test/scripts/twf-layers.bats proves both give one tag.

# twf_require_recipe_config : the step config both layer steps read, checked
# as build-triton-with-ft.sh checks its own (the same keys make one tag).
twf_require_recipe_config() {
  require_vars AWS_REGION ECR_REPOSITORY_URL TRITON_VERSION SM_LIST DOCKERFILE_DIR
  require_commit_pin FT_BACKEND_COMMIT
  require_commit_pin FT_COMMIT
  require_abs_path DOCKERFILE_DIR
  [[ $TRITON_VERSION =~ ^[0-9]{2}\.[0-9]{2}$ ]] || die "TRITON_VERSION must look like YY.MM (e.g. 23.05), got '$TRITON_VERSION'"
  [[ $SM_LIST =~ ^[0-9]{2,3}(,[0-9]{2,3})*$ ]] || die "SM_LIST must be comma-separated CUDA archs like '86' or '80,86', got '$SM_LIST'"
}

# The layers image's tag prefix: not `twf-`, which the repository's lifecycle
# policy counts (keep the newest N, infra/cloud/ecr.ts): a layers image must
# never push a deployed image out of that count. It has its own rule
# (LAYERS_TAG_PREFIX there; test/unit/ecrRetention.test.ts keeps them equal).
TWF_LAYERS_TAG_PREFIX=twflayers-

# twf_content_hash <triton-version> <backend-commit> <ft-commit> <sm-list> <dockerfile-dir> :
# the 24-hex content hash of the triton_with_ft image, exactly as
# build-triton-with-ft.sh computes it (commits lower-cased as there).
twf_content_hash() {
  local recipe_hash
  recipe_hash=$(hash_files "$5")
  printf 'triton=%s\nbackend=%s\nft=%s\nsm=%s\nrecipe=%s\n' "$1" "${2,,}" "${3,,}" "$4" "$recipe_hash" \
    | sha256sum | cut -c1-24
}

# twf_image_tag <content-hash> <triton-version> : the full image's tag.
twf_image_tag() { printf 'twf-%s-%s\n' "$2" "$1"; }

# twf_layers_tag <content-hash> <triton-version> : the recipe layers' tag. The
# same content hash: the layers are a prefix of that image's recipe, built with
# its build args, so one hash names both.
twf_layers_tag() { printf '%s%s-%s\n' "$TWF_LAYERS_TAG_PREFIX" "$2" "$1"; }

# The first Dockerfile line that needs the FT checkouts: everything before it
# (the NGC base, the apt layer, the pip layer) builds without them.
TWF_FIRST_CHECKOUT_LINE_RE='^COPY[[:space:]]+FasterTransformer[[:space:]]'

# twf_recipe_dockerfile <dockerfile> <out> : writes the Dockerfile truncated
# before its first line that needs the FT checkouts; fails when there is none
# (a recipe that changed shape must not silently build the whole image).
twf_recipe_dockerfile() {
  local src=$1 out=$2 n
  n=$(grep -nE -m1 "$TWF_FIRST_CHECKOUT_LINE_RE" "$src" | cut -d: -f1) || true
  [[ -n $n ]] || die "$src has no line matching '$TWF_FIRST_CHECKOUT_LINE_RE': cannot tell its recipe layers from the compile's; update scripts/remote/twf/tags.sh with the recipe"
  head -n "$((n - 1))" "$src" >"$out"
}
