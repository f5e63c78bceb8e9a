#!/usr/bin/env bash
# Multi-call stand-in for the host tools the remote steps drive (docker, git,
# aws, nvidia-smi, cloud-init, huggingface-cli, curl, df, sleep, sudo,
# apt-get, python). The tests symlink it under each tool's name on PATH.
#
# Every call appends one line "<tool> <argv, %q-quoted>" to $STUB_LOG so
# tests can assert on what ran. Behaviour is steered by STUB_* variables
# (see helpers.bash); state that must outlive one call lives in $STUB_STATE.
#
# STUB_FAIL_ONCE='<tool>:<substring>' makes the first matching call fail
# (exit 1) and later ones behave normally: the "interrupted mid-step" case.
set -euo pipefail

tool=$(basename "$0")
: "${STUB_LOG:?STUB_LOG must be set}"
: "${STUB_STATE:?STUB_STATE must be set}"
mkdir -p "$STUB_STATE"

# Build the line first and append it with one write: concurrent stubs in a
# pipeline (aws ... | docker login) would otherwise interleave their pieces.
line=$tool
if (($#)); then line+=$(printf ' %q' "$@"); fi
printf '%s\n' "$line" >>"$STUB_LOG"

joined="$tool $*"
maybe_fail() {
  local spec=$1 kind=$2 t pat key
  [[ -n $spec ]] || return 0
  t=${spec%%:*}
  pat=${spec#*:}
  [[ $t == "$tool" && $joined == *"$pat"* ]] || return 0
  if [[ $kind == once ]]; then
    key=$STUB_STATE/failed-once-$(printf '%s' "$spec" | sha256sum | cut -c1-16)
    [[ -e $key ]] && return 0
    touch "$key"
  fi
  echo "stub $tool: simulated failure ($kind: $pat)" >&2
  exit 1
}
maybe_fail "${STUB_FAIL_ONCE:-}" once
maybe_fail "${STUB_FAIL_ALWAYS:-}" always

# STUB_DELAY='<tool>:<substring>' with STUB_DELAY_SECONDS=<n>: every matching
# call takes n seconds of wall-clock time first (the real sleep: `sleep` on
# PATH may be this stub), so a timed step takes at least that long.
if [[ -n ${STUB_DELAY:-} && ${STUB_DELAY%%:*} == "$tool" && $joined == *"${STUB_DELAY#*:}"* ]]; then
  command -p sleep "${STUB_DELAY_SECONDS:-1}"
fi

# STUB_KILL_ONCE / STUB_KILL_ONCE_AFTER='<tool>:<substring>': the first
# matching call SIGKILLs the step's whole process group, as a crash, a lost
# builder or the end of its SSH session would: no trap runs, nothing is
# cleaned up. _ONCE kills before the call does anything, _ONCE_AFTER once its
# work is done (its output exists; nobody learns it succeeded). Only for a
# step started with run_session (helpers.bash), in its own process group.
kill_matches() {
  local spec=$1 key
  [[ -n $spec && ${spec%%:*} == "$tool" && $joined == *"${spec#*:}"* ]] || return 1
  key=$STUB_STATE/killed-once-$(printf '%s' "$spec" | sha256sum | cut -c1-16)
  [[ ! -e $key ]] || return 1
  touch "$key"
}
kill_step() {
  local pgid
  pgid=$(ps -o pgid= -p $$ | tr -d ' ')
  if [[ -z $pgid || $pgid == "${STUB_BATS_PGID:-}" ]]; then
    echo "stub $tool: STUB_KILL_* needs the step started with run_session (its own process group)" >&2
    exit 2
  fi
  echo "stub $tool: SIGKILL to the step's process group $pgid (simulated crash)" >&2
  # Also on record: the caller may have sent this stub's stderr to /dev/null.
  printf '%s\n' "$joined" >>"$STUB_STATE/killed"
  kill -KILL -- "-$pgid"
}
if kill_matches "${STUB_KILL_ONCE:-}"; then kill_step; fi
if kill_matches "${STUB_KILL_ONCE_AFTER:-}"; then trap kill_step EXIT; fi

# opt_value <flag> <args...> : the value following flag, or nothing.
opt_value() {
  local flag=$1
  shift
  while (($#)); do
    if [[ $1 == "$flag" ]]; then
      printf '%s' "${2:-}"
      return 0
    fi
    shift
  done
  return 0
}

case $tool in
  nvidia-smi)
    [[ ${STUB_GPUS:-} == none ]] && { echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2; exit 9; }
    printf '%b\n' "${STUB_GPUS:-NVIDIA A10G}"
    ;;
  cloud-init) exit "${STUB_CLOUD_INIT_RC:-0}" ;;
  df)
    printf 'Filesystem 1024-blocks Used Available Capacity Mounted on\n'
    printf '/dev/root 2147483648 1 %s 1%% /\n' "${STUB_DF_AVAIL_KIB:-1073741824}"
    ;;
  sleep) ;;
  sudo)
    [[ ${1:-} == -n ]] && shift
    [[ ${1:-} == true ]] && exit 0
    exec "$@"
    ;;
  apt-get | dnf | yum)
    if [[ $* == *install* && $* == *git-lfs* ]]; then touch "$STUB_STATE/git-lfs-installed"; fi
    ;;
  python | fake-python) exit "${STUB_CHECK_RC:-0}" ;;
  curl)
    out=$(opt_value -o "$@")
    cp "${STUB_ARCHIVE:?STUB_ARCHIVE must name the archive to serve}" "$out"
    ;;
  huggingface-cli)
    [[ ${1:-} == download ]] || exit 2
    dest=$(opt_value --local-dir "$@")
    mkdir -p "$dest"
    if [[ -n ${HF_TOKEN:-} ]]; then echo yes >>"$STUB_STATE/hf-token-in-env"; else echo no >>"$STUB_STATE/hf-token-in-env"; fi
    for f in ${STUB_HF_FILES:-config.json pytorch_model.bin tokenizer.json}; do
      printf 'content of %s\n' "$f" >"$dest/$f"
    done
    echo "$dest"
    ;;
  git)
    dir=.
    while [[ ${1:-} == -C || ${1:-} == -c ]]; do
      [[ $1 == -C ]] && dir=$2
      shift 2
    done
    sub=${1:-}
    shift || true
    case $sub in
      lfs)
        case ${1:-} in
          version)
            if [[ ${STUB_GIT_LFS:-present} == missing && ! -e $STUB_STATE/git-lfs-installed ]]; then
              echo "git: 'lfs' is not a git command." >&2
              exit 1
            fi
            echo "git-lfs/3.4.1 (stub)"
            ;;
        esac
        ;;
      init) mkdir -p "$dir/.git" ;;
      remote | submodule) ;;
      fetch)
        if [[ ${STUB_GIT_NO_SHA_FETCH:-} == 1 && $* == *--depth* ]]; then exit 128; fi
        ;;
      checkout)
        sha=${*: -1}
        printf '%s\n' "$sha" >"$dir/.git/HEAD_SHA"
        printf 'source at %s\n' "$sha" >"$dir/README"
        ;;
      rev-parse)
        if [[ -n ${STUB_GIT_HEAD_OVERRIDE:-} ]]; then echo "$STUB_GIT_HEAD_OVERRIDE"; exit 0; fi
        cat "$dir/.git/HEAD_SHA"
        ;;
      config) exit 1 ;; # no .gitmodules in the stub checkouts
      for-each-ref)
        # Upstream branches containing the checked-out commit; STUB_GIT_UNREACHABLE
        # names commits that are on none (a pull request's test merge).
        sha=$(cat "$dir/.git/HEAD_SHA")
        [[ -n ${STUB_GIT_UNREACHABLE:-} && $STUB_GIT_UNREACHABLE == *"$sha"* ]] || echo "origin/main"
        ;;
      *) echo "stub git: unsupported subcommand $sub" >&2; exit 2 ;;
    esac
    ;;
  aws)
    case "${1:-} ${2:-}" in
      "ecr get-login-password") echo "stub-ecr-password" ;;
      "ecr describe-images")
        repo=$(opt_value --repository-name "$@")
        ids=$(opt_value --image-ids "$@")
        tag=${ids#imageTag=}
        if [[ -f $STUB_STATE/ecr/$repo/$tag ]]; then
          cat "$STUB_STATE/ecr/$repo/$tag"
        else
          echo "An error occurred (ImageNotFoundException) when calling the DescribeImages operation: The image with imageId {imageTag:'$tag'} does not exist" >&2
          exit 254
        fi
        ;;
      "ecr batch-get-image")
        ids=$(opt_value --image-ids "$@")
        query=$(opt_value --query "$@")
        if [[ $query == *MediaType* ]]; then
          echo "application/vnd.docker.distribution.manifest.v2+json"
        else
          echo "manifest:${ids#imageDigest=}"
        fi
        ;;
      "ecr put-image")
        repo=$(opt_value --repository-name "$@")
        tag=$(opt_value --image-tag "$@")
        manifest=$(opt_value --image-manifest "$@")
        mkdir -p "$STUB_STATE/ecr/$repo"
        printf '%s\n' "${manifest#manifest:}" >"$STUB_STATE/ecr/$repo/$tag"
        ;;
      *) echo "stub aws: unsupported $*" >&2; exit 2 ;;
    esac
    ;;
  docker)
    sub=${1:-}
    shift || true
    case $sub in
      info)
        if [[ ${1:-} == --format ]]; then
          default_runtimes='{"io.containerd.runc.v2":{},"nvidia":{"path":"nvidia-container-runtime"},"runc":{}}'
          printf '%s\n' "${STUB_DOCKER_RUNTIMES:-$default_runtimes}"
        else
          exit "${STUB_DOCKER_INFO_RC:-0}"
        fi
        ;;
      login)
        pw=$(cat)
        [[ $pw == stub-ecr-password ]] || { echo "stub docker login: bad password on stdin" >&2; exit 1; }
        echo "Login Succeeded"
        ;;
      pull)
        # Pulled references: `image inspect` finds them afterwards.
        printf '%s\n' "${*: -1}" >>"$STUB_STATE/pulled"
        ;;
      image)
        [[ ${1:-} == inspect ]] || { echo "stub docker: unsupported image ${1:-}" >&2; exit 2; }
        grep -qxF -- "${*: -1}" "$STUB_STATE/pulled" 2>/dev/null || { echo "Error: No such image: ${*: -1}" >&2; exit 1; }
        ;;
      build)
        ctx=${*: -1}
        ref=$(opt_value -t "$@")
        (cd "$ctx" && find . -type f | LC_ALL=C sort) >"$STUB_STATE/last-build-context"
        if [[ -f $ctx/Dockerfile ]]; then cp "$ctx/Dockerfile" "$STUB_STATE/last-build-dockerfile"; fi
        if [[ -f $ctx/serve ]]; then cp "$ctx/serve" "$STUB_STATE/last-serve"; fi
        printf '%s\n' "$ref" >>"$STUB_STATE/built"
        ;;
      push)
        ref=$1
        repo=${ref%:*}
        tag=${ref##*:}
        name=${repo#*/}
        mkdir -p "$STUB_STATE/ecr/$name"
        printf 'sha256:%s\n' "$(printf '%s' "$ref" | sha256sum | cut -d' ' -f1)" >"$STUB_STATE/ecr/$name/$tag"
        ;;
      run)
        workdir=""
        while (($#)); do
          case $1 in
            --rm) shift ;;
            --gpus | --shm-size | --user | -v | -e | --name) shift 2 ;;
            -w) workdir=$2; shift 2 ;;
            -*) shift ;;
            *) break ;;
          esac
        done
        image=$1
        shift
        printf '%s\n' "$image" >>"$STUB_STATE/run-images"
        cmd="$*"
        case $cmd in
          *gpt_gemm*)
            [[ ${STUB_GEMM_NO_OUTPUT:-} == 1 ]] || printf '# stub gemm_config.in for %s\n1 2 3\n' "$cmd" >"$workdir/gemm_config.in"
            ;;
          *verify_weights.py*) exit "${STUB_VERIFY_RC:-0}" ;;
          *to_fp16.py*)
            # to_fp16.py <folder> [--expected <json>]: the folder follows the script.
            folder=""
            prev=""
            for a in "$@"; do
              if [[ $prev == *to_fp16.py ]]; then folder=$a; fi
              prev=$a
            done
            # Like scripts/convert/to_fp16.py: a folder without its config.ini is
            # refused, and the rewrite sets weight_data_type = fp16 in the plan's
            # section (the expected list's "section"; else the file's first),
            # adding the key when absent. So a config.ini installed after the
            # rewrite would lose it.
            ini=$folder/config.ini
            [[ -f $ini ]] || { echo "to_fp16 (stub): $folder has no config.ini" >&2; exit 1; }
            expected=$(opt_value --expected "$@")
            section=""
            if [[ -n $expected ]]; then
              section=$(sed -n 's/.*"section": *"\([^"]*\)".*/\1/p' "$expected" | head -n1)
            fi
            [[ -n $section ]] || section=$(sed -n 's/^[[:space:]]*\[\([^]]*\)\][[:space:]]*$/\1/p' "$ini" | head -n1)
            awk -v want="$section" '
              /^[[:space:]]*\[[^]]*\][[:space:]]*$/ {
                if (insec && !done) { print "weight_data_type = fp16"; done = 1 }
                name = $0; gsub(/^[[:space:]]*\[|\][[:space:]]*$/, "", name)
                insec = (name == want); print; next
              }
              insec && /^[[:space:]]*weight_data_type[[:space:]]*[=:]/ { print "weight_data_type = fp16"; done = 1; next }
              { print }
              END {
                if (insec && !done) { print "weight_data_type = fp16"; done = 1 }
                if (!done) { print "to_fp16 (stub): config.ini has no [" want "] section" > "/dev/stderr"; exit 1 }
              }
            ' "$ini" >"$ini.stub-tmp"
            mv "$ini.stub-tmp" "$ini"
            touch "$folder/.fp16"
            ;;
          *)
            # GPT-NeoX/GPT converters: -o/-i_g; GPT-J converters: --output-dir/--n-inference-gpus.
            out=$(opt_value -o "$@")
            [[ -n $out ]] || out=$(opt_value --output-dir "$@")
            gpus=$(opt_value -i_g "$@")
            [[ -n $gpus ]] || gpus=$(opt_value --n-inference-gpus "$@")
            if [[ -n $out && -n $gpus ]]; then
              # Like the FT converters: refuse an existing output folder.
              if [[ -e $out/$gpus-gpu ]]; then echo "stub converter: $out/$gpus-gpu exists" >&2; exit 1; fi
              mkdir -p "$out/$gpus-gpu"
              # Each FT converter writes its family's section; the GPT-J JAX
              # converter writes GPT-J 6B's hard-coded one, which the planned
              # CONFIG_INI replaces.
              section=""
              case $cmd in
                *huggingface_gptj_ckpt_convert.py*) section=gptj ;;
                *huggingface_gptneox_convert.py*) section=gptneox ;;
                *huggingface_gpt_convert.py*) section=gpt ;;
                *gptj_ckpt_convert.py*) section=gptj ;;
                *) section=gptneox ;;
              esac
              if [[ -n $section ]]; then
                printf '[%s]\nhead_num = 32\nweight_data_type = fp32\n' "$section" >"$out/$gpus-gpu/config.ini"
              fi
              printf 'w' >"$out/$gpus-gpu/model.wte.bin"
            fi
            other=$(opt_value --output "$@")
            if [[ -n $other ]]; then
              [[ ! -e $other ]] || { echo "stub helper: $other exists" >&2; exit 1; }
              mkdir -p "$other"
              touch "$other/done"
            fi
            ;;
        esac
        ;;
      *) echo "stub docker: unsupported $sub" >&2; exit 2 ;;
    esac
    ;;
  *) echo "stub: no behaviour for $tool" >&2; exit 2 ;;
esac
