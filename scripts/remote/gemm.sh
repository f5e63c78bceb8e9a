#!/usr/bin/env bash
# Step 5 — gemm: tunes FT's GEMM algorithms with the image's own gpt_gemm on
# the builder GPU (same GPU model as serving) and keeps gemm_config.in.
#
# usage: gemm.sh <step-config-file>
#
# Step config (bash file of KEY='value' lines and arrays, rendered by the Pulumi program):
#   WORK_ROOT     string  Work root; mounted at the same path in the container. default '/opt/triton-ft'
#   IMAGE         string  triton_with_ft image, digest-pinned.           e.g. '123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-dev/triton_with_ft@sha256:ab..'
#   AWS_REGION    string  Region for the ECR login before pulling.       e.g. 'us-east-1'
#   GEMM_ARGV     array   gpt_gemm arguments: batch beam max_input_len head_num size_per_head inter_size vocab dtype tp [append].
#                         e.g. ('8' '1' '32' '16' '256' '16384' '64512' '1' '1')
#   GEMM_OUTPUT   string  Absolute host path for the kept gemm_config.in. e.g. '/opt/triton-ft/work/gpt2/gemm/gemm_config.in'
#   GEMM_BINARY   string  Optional; gpt_gemm inside the image.           default '/workspace/build/fastertransformer_backend/build/bin/gpt_gemm'
#   DOCKER_GPUS   string  Optional; docker run --gpus (one GPU is enough). default 'device=0'
#
# gpt_gemm writes gemm_config.in into its working directory, so it runs in
# an empty scratch folder; the file is moved to GEMM_OUTPUT atomically.
#
# Prints: RESULT gemm_config=<GEMM_OUTPUT>, RESULT sha256=<of gemm_config.in>
set -euo pipefail

# shellcheck source=scripts/remote/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"

step_init gemm "${1:-}"
require_vars IMAGE AWS_REGION GEMM_OUTPUT
require_abs_path GEMM_OUTPUT
require_digest_ref IMAGE
GEMM_BINARY=${GEMM_BINARY:-/workspace/build/fastertransformer_backend/build/bin/gpt_gemm}
DOCKER_GPUS=${DOCKER_GPUS:-device=0}
default_array GEMM_ARGV
((${#GEMM_ARGV[@]} == 9 || ${#GEMM_ARGV[@]} == 10)) \
  || die "GEMM_ARGV must hold 9 or 10 gpt_gemm arguments, got ${#GEMM_ARGV[@]}: ${GEMM_ARGV[*]}"
for a in "${GEMM_ARGV[@]}"; do
  [[ $a =~ ^[0-9]+$ ]] || die "GEMM_ARGV must be integers, got '$a'"
done
# head_num (4th) must split evenly over tp (9th); gpt_gemm would abort later.
((GEMM_ARGV[3] % GEMM_ARGV[8] == 0)) || die "gpt_gemm head_num ${GEMM_ARGV[3]} is not divisible by tp ${GEMM_ARGV[8]}"
((GEMM_ARGV[7] <= 2)) || die "gpt_gemm dtype must be 0 (fp32), 1 (fp16) or 2 (bf16), got ${GEMM_ARGV[7]}"

# shellcheck disable=SC2119 # no input files beyond the config and scripts
step_input_hash
step_skip_if_done
host_lock gpu

phase prepare
scratch=$TMP_ROOT/gemm-${STEP_INPUT_HASH:0:16}
# gpt_gemm appends to an existing gemm_config.in when asked to, so a
# leftover from an interrupted run must not leak into this one.
rm -rf "$scratch"
mkdir -p "$scratch"
pull_image "$AWS_REGION" "$IMAGE"

phase gpt_gemm
log "running: $GEMM_BINARY ${GEMM_ARGV[*]}"
docker run --rm --gpus "$DOCKER_GPUS" --user "$(id -u):$(id -g)" \
  -v "$WORK_ROOT:$WORK_ROOT" -w "$scratch" -e HOME=/tmp \
  "$IMAGE" "$GEMM_BINARY" "${GEMM_ARGV[@]}" >&2 \
  || die "gpt_gemm failed (arguments: ${GEMM_ARGV[*]})"
[[ -s $scratch/gemm_config.in ]] \
  || die "gpt_gemm exited without producing $scratch/gemm_config.in"

phase install
ensure_dir "$(dirname "$GEMM_OUTPUT")"
cp "$scratch/gemm_config.in" "$GEMM_OUTPUT.tmp"
mv -f "$GEMM_OUTPUT.tmp" "$GEMM_OUTPUT"
rm -rf "$scratch"
log "kept $(wc -l <"$GEMM_OUTPUT") tuned GEMM entries in $GEMM_OUTPUT"

result gemm_config "$GEMM_OUTPUT"
result sha256 "$(sha256sum <"$GEMM_OUTPUT" | cut -d' ' -f1)"
step_done
