#!/usr/bin/env bash
# Step 4 — convert: runs the conversion plan's phases inside the triton_with_ft
# image, the weight-set verifier last. Every command it executes is a phase
# argv from the plan (infra/plan/conversion.ts); staging, resume and the swap
# are the script's own.
#
# usage: convert.sh <step-config-file>
#
# Step config (bash file of KEY='value' lines and arrays, rendered by the Pulumi program):
#   WORK_ROOT              string  Work root; mounted at the same path in the container. default '/opt/triton-ft'
#   IMAGE                  string  triton_with_ft image, digest-pinned.       e.g. '123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-dev/triton_with_ft@sha256:ab..'
#   AWS_REGION             string  Region for the ECR login before pulling.   e.g. 'us-east-1'
#   SOURCE_DIR             string  Fetched model folder (under WORK_ROOT).    e.g. '/opt/triton-ft/work/gpt2/source'
#   OUTPUT_DIR             string  Final converted root (under WORK_ROOT); the weights end up in OUTPUT_DIR/<TP>-gpu. e.g. '/opt/triton-ft/work/gpt2/ft'
#   TP                     int     Tensor-parallel size (the N of <N>-gpu).   e.g. '2'
#   CONSOLIDATE_ARGV       array   Optional; consolidate sharded/safetensors checkpoints. e.g. (python3 '{{SCRIPTS}}/convert/consolidate_checkpoint.py' --in '{{SRC}}' --out '{{CONSOLIDATE_OUT}}')
#   RELAYOUT_ARGV          array   Optional; CodeGen -> GPT-J re-layout.      e.g. (python3 '{{SCRIPTS}}/convert/codegen_to_gptj.py' '{{CONSOLIDATE_OUT}}' '{{RELAYOUT_OUT}}')
#   CONVERT_ARGV           array   The FT converter command.                 e.g. (python3 /workspace/FasterTransformer/examples/pytorch/gptneox/utils/huggingface_gptneox_convert.py -i '{{SRC}}' -o '{{OUT}}' -i_g 2 -m_n gptneox -weight_data_type fp16)
#   FP16_ARGV              array   Optional; fp16 rewrite of the converter output. e.g. (python3 '{{SCRIPTS}}/convert/to_fp16.py' '{{OUT}}/2-gpu')
#   VERIFY_ARGV            array   The weight-set verifier; the result is installed only when it passes.
#                                  e.g. (python3 '{{SCRIPTS}}/convert/verify_weights.py' --expected '/opt/triton-ft/plan/expected-weights.json' '{{OUT}}/2-gpu')
#   EXPECTED_WEIGHTS_JSON  string  Absolute path of the expected weight-set JSON (VERIFY_ARGV's list; an input of the hash).
#   CONVERT_HELPERS        array   The project's Python helpers this conversion runs, with every helper they
#                                  import, as repo paths: exactly the files the Pulumi side hashes for this
#                                  step. e.g. (scripts/convert/consolidate_checkpoint.py scripts/convert/hf_checkpoint.py)
#   CONFIG_INI             string  Optional; a planned config.ini installed into <TP>-gpu right after the
#                                  converter, replacing one with hard-coded numbers (GPT-J JAX slim). e.g. '/opt/triton-ft/plan/config.ini'
#   DOCKER_GPUS            string  Optional; value of docker run --gpus.      default 'all'
#   SHM_SIZE               string  Optional; docker run --shm-size.           default '8g'
#   REQUIRED_FREE_GIB      int     Optional; free disk needed before converting. default '0'
#
# Placeholders replaced in every *_ARGV element at run time:
#   {{SRC}} SOURCE_DIR · {{OUT}} staging output root (the converter's -o) ·
#   {{CONSOLIDATE_OUT}} / {{RELAYOUT_OUT}} staging folders of those phases ·
#   {{SCRIPTS}} the shipped scripts root (mounted read-only in the container).
# Staging folders are emptied before their phase runs, because the FT
# converters refuse an existing output folder.
#
# Resume: work happens in $WORK_ROOT/tmp/convert-<hash>; each finished phase
# leaves a sub-marker there, so a re-run with the same inputs continues after
# the last finished phase. The converter and the fp16 rewrite form one phase
# (the rewrite changes the converter's files in place). OUTPUT_DIR is swapped
# in only after the verifier passed.
#
# Prints: RESULT weights_dir=<OUTPUT_DIR>/<TP>-gpu, RESULT input_hash=<hash>
set -euo pipefail

# shellcheck source=scripts/remote/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"

step_init convert "${1:-}"
require_vars IMAGE AWS_REGION SOURCE_DIR OUTPUT_DIR TP EXPECTED_WEIGHTS_JSON
require_int TP
((TP > 0)) || die "TP must be at least 1"
require_abs_path SOURCE_DIR
require_abs_path OUTPUT_DIR
require_abs_path EXPECTED_WEIGHTS_JSON
[[ $SOURCE_DIR == "$WORK_ROOT"/* && $OUTPUT_DIR == "$WORK_ROOT"/* ]] \
  || die "SOURCE_DIR and OUTPUT_DIR must be under WORK_ROOT ($WORK_ROOT), which is what the container sees"
[[ -d $SOURCE_DIR ]] || die "SOURCE_DIR $SOURCE_DIR does not exist; run the fetch step first"
[[ -f $EXPECTED_WEIGHTS_JSON ]] || die "EXPECTED_WEIGHTS_JSON not found: $EXPECTED_WEIGHTS_JSON"
require_digest_ref IMAGE
DOCKER_GPUS=${DOCKER_GPUS:-all}
SHM_SIZE=${SHM_SIZE:-8g}
REQUIRED_FREE_GIB=${REQUIRED_FREE_GIB:-0}
require_int REQUIRED_FREE_GIB
default_array CONSOLIDATE_ARGV RELAYOUT_ARGV FP16_ARGV CONVERT_ARGV VERIFY_ARGV
((${#CONVERT_ARGV[@]})) || die "CONVERT_ARGV is empty; the plan must give the FT converter command"
((${#VERIFY_ARGV[@]})) || die "VERIFY_ARGV is empty; the plan must give the weight-set verifier command"

# The model's identity comes from the fetch stamp; the helper scripts and the
# expected weight list change what a conversion produces. The helpers are the
# listed files only (never the folder: running them leaves __pycache__ there).
default_array CONVERT_HELPERS
((${#CONVERT_HELPERS[@]})) || die "CONVERT_HELPERS is empty; the plan must list the helper scripts it runs"
hash_extra=("$EXPECTED_WEIGHTS_JSON")
for helper in "${CONVERT_HELPERS[@]}"; do
  [[ $helper == scripts/convert/*.py ]] || die "CONVERT_HELPERS entry '$helper' is not a scripts/convert/*.py path"
  hash_extra+=("$TRITON_FT_SCRIPTS_ROOT/${helper#scripts/}")
done
if [[ -n ${CONFIG_INI:-} ]]; then
  require_abs_path CONFIG_INI
  [[ -f $CONFIG_INI ]] || die "CONFIG_INI not found: $CONFIG_INI"
  hash_extra+=("$CONFIG_INI")
fi
if [[ -f $SOURCE_DIR/.triton-ft-fetch ]]; then
  hash_extra+=("$SOURCE_DIR/.triton-ft-fetch")
else
  warn "$SOURCE_DIR has no fetch stamp; a changed model in the same folder would not be noticed"
fi
step_input_hash "${hash_extra[@]}"
step_skip_if_done
host_lock convert

attempt=$TMP_ROOT/convert-${STEP_INPUT_HASH:0:16}
out=$attempt/out
weights=$out/$TP-gpu

# A run interrupted between the swap and the marker already finished the work.
if [[ -f $OUTPUT_DIR/.triton-ft-convert ]] && grep -qx "input_hash=$STEP_INPUT_HASH" "$OUTPUT_DIR/.triton-ft-convert"; then
  log "$OUTPUT_DIR already holds this conversion"
else
  phase prepare
  # Attempts for other inputs are stale; they can hold tens of GB.
  for old in "$TMP_ROOT"/convert-*; do
    if [[ -e $old && $old != "$attempt" ]]; then rm -rf "$old"; fi
  done
  ensure_dir "$attempt"
  check_free_disk "$WORK_ROOT" "$REQUIRED_FREE_GIB"
  for a in CONSOLIDATE_ARGV RELAYOUT_ARGV CONVERT_ARGV FP16_ARGV VERIFY_ARGV; do
    substitute_placeholders "$a" "SRC=$SOURCE_DIR" "OUT=$out" \
      "CONSOLIDATE_OUT=$attempt/consolidate" "RELAYOUT_OUT=$attempt/relayout" \
      "SCRIPTS=$TRITON_FT_SCRIPTS_ROOT"
  done

  pull_image "$AWS_REGION" "$IMAGE"

  # The scripts are mounted read-only even when they sit under WORK_ROOT (the
  # later mount wins for that path): nothing a helper does can change the
  # files the step's input hash covers.
  mounts=(-v "$WORK_ROOT:$WORK_ROOT" -v "$TRITON_FT_SCRIPTS_ROOT:$TRITON_FT_SCRIPTS_ROOT:ro")
  expected_dir=$(dirname "$EXPECTED_WEIGHTS_JSON")
  if [[ $expected_dir != "$WORK_ROOT"/* && $expected_dir != "$TRITON_FT_SCRIPTS_ROOT"/* ]]; then
    mounts+=(-v "$expected_dir:$expected_dir:ro")
  fi
  # Runs as the host user so every file it writes can be moved and removed
  # by the later steps; offline, because every input is already on disk.
  in_image() {
    docker run --rm --gpus "$DOCKER_GPUS" --shm-size "$SHM_SIZE" \
      --user "$(id -u):$(id -g)" "${mounts[@]}" -w "$attempt" \
      -e HOME=/tmp -e HF_HUB_OFFLINE=1 -e TRANSFORMERS_OFFLINE=1 -e PYTHONDONTWRITEBYTECODE=1 \
      -e PYTHONPATH=/workspace/FasterTransformer \
      "$IMAGE" "$@" >&2
  }

  # run_unit <name> <staging-dir> <argv...> : skipped when its sub-marker
  # exists; otherwise its staging folder is cleared first.
  run_unit() {
    local name=$1 dir=$2
    shift 2
    phase "$name"
    if [[ -f $attempt/.unit-$name.done ]]; then
      log "phase $name already finished in this attempt; not redoing it"
      return 0
    fi
    rm -rf "$dir"
    log "running: $*"
    "$@"
    touch "$attempt/.unit-$name.done"
  }

  if ((${#CONSOLIDATE_ARGV[@]})); then
    run_unit consolidate "$attempt/consolidate" in_image "${CONSOLIDATE_ARGV[@]}"
  fi
  if ((${#RELAYOUT_ARGV[@]})); then
    run_unit relayout "$attempt/relayout" in_image "${RELAYOUT_ARGV[@]}"
  fi
  convert_and_rewrite() {
    in_image "${CONVERT_ARGV[@]}"
    [[ -d $weights ]] || die "the converter finished but wrote no $weights (check -o / -i_g in CONVERT_ARGV)"
    if [[ -n ${CONFIG_INI:-} ]]; then
      log "installing the planned config.ini: $CONFIG_INI"
      install -m 0644 "$CONFIG_INI" "$weights/config.ini"
    fi
    if ((${#FP16_ARGV[@]})); then
      log "fp16 rewrite: ${FP16_ARGV[*]}"
      in_image "${FP16_ARGV[@]}"
    fi
  }
  run_unit convert "$out" convert_and_rewrite

  phase verify
  log "running: ${VERIFY_ARGV[*]}"
  in_image "${VERIFY_ARGV[@]}" \
    || die "weight set in $weights is incomplete or wrong (verify_weights.py); not installing it"

  phase install
  printf 'input_hash=%s\n' "$STEP_INPUT_HASH" >"$out/.triton-ft-convert"
  replace_dir "$out" "$OUTPUT_DIR"
  rm -rf "$attempt"
fi

result weights_dir "$OUTPUT_DIR/$TP-gpu"
result input_hash "$STEP_INPUT_HASH"
step_done
