#!/usr/bin/env bash
# Runs a real tritonserver (the binary bundled in the PyPI package
# nvidia-pytriton) on loopback ports against a model repository, on a CPU-only
# machine. The server is always stopped when this script ends.
#
# usage:
#   test/triton/server.sh --model-repository DIR [options] -- CMD [ARGS...]
#       start, wait for /v2/health/ready, run CMD with TRITON_HTTP_URL,
#       TRITON_GRPC_URL and TRITON_LOG exported, stop the server, exit with
#       CMD's status.
#   test/triton/server.sh --model-repository DIR [options]
#       start, wait for readiness, write the endpoints to --state-file (if
#       given) and keep serving until SIGINT/SIGTERM.
# options:
#   --state-file FILE     JSON {"http": url, "grpc": url, "log": path, "pid": n}
#                         written once the server is ready
#   --log FILE            server log (default: a temp file, kept on failure)
#   --ready-timeout SECS  readiness budget (default 180)
#   --watch-pid PID       (serve mode) stop when process PID is gone, so a
#                         test runner that dies cannot leave a server behind
#   --http-port/--grpc-port/--metrics-port N   fixed ports (default: free ones)
#   --python-venv DIR     the venv whose packages the Python models import
#                         (default: the server's own, test/triton/requirements.lock);
#                         same Python minor version as the server's venv
#
# The Python backend's stub embeds a Python interpreter. It finds the cached
# venv's packages because the venv's bin/ is first on PATH (the embedded
# interpreter locates its prefix through `python3` on PATH, the same trick
# pytriton itself uses). The stub starts that interpreter in isolated mode
# (sys.flags.isolated=1, ignore_environment=1), so PYTHONPATH is ignored:
# shared packages must sit in site-packages or next to model.py, whose folder
# is on sys.path (test/triton/assemble.ts copies `tritonft` there).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

log() { printf '%s [triton-server] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

repo=""
state_file=""
server_log=""
ready_timeout=180
http_port=""
grpc_port=""
metrics_port=""
watch_pid=""
python_venv=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --model-repository) repo=${2:?}; shift 2 ;;
    --state-file) state_file=${2:?}; shift 2 ;;
    --log) server_log=${2:?}; shift 2 ;;
    --ready-timeout) ready_timeout=${2:?}; shift 2 ;;
    --http-port) http_port=${2:?}; shift 2 ;;
    --grpc-port) grpc_port=${2:?}; shift 2 ;;
    --metrics-port) metrics_port=${2:?}; shift 2 ;;
    --watch-pid) watch_pid=${2:?}; shift 2 ;;
    --python-venv) python_venv=${2:?}; shift 2 ;;
    --) shift; break ;;
    *) die "unknown argument: $1 (see the usage at the top of $0)" ;;
  esac
done
[[ -n $repo ]] || die "--model-repository DIR is required"
[[ -d $repo ]] || die "model repository not found: $repo"
repo=$(cd "$repo" && pwd)

log "phase: python environment"
venv=$("$root/test/lib/pyenv.sh" "$here/requirements.lock")
py="$venv/bin/python"
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
pyver=$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
dist="$site/pytriton/tritonserver"
libs="$site/nvidia_pytriton.libs"
binary="$dist/bin/tritonserver"
[[ -x $binary ]] || die "tritonserver binary missing from nvidia-pytriton: $binary"
stub_src="$dist/python_backend_stubs/$pyver/triton_python_backend_stub"
[[ -f $stub_src ]] || die "nvidia-pytriton ships no Python backend stub for Python $pyver ($stub_src)"

# The Python models' packages: the server's venv, or another one of the same
# Python version (test/vllm serves vLLM from its own venv).
models_venv=${python_venv:-$venv}
if [[ -n $python_venv ]]; then
  [[ -x $python_venv/bin/python3 ]] || die "--python-venv $python_venv has no bin/python3"
  models_pyver=$("$python_venv/bin/python3" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
  [[ $models_pyver == "$pyver" ]] || die "--python-venv is Python $models_pyver, the server's stub is for $pyver"
  # The stub links the system's libpython, whose patch release may be older
  # than the venv's standard library (pyenv's 3.11.7 beside Debian's 3.11.2:
  # its _ssl needs symbols the older libpython lacks, and vLLM imports ssl).
  # When the venv's interpreter is a shared build, the stub loads its own
  # libpython instead, so library and standard library match.
  models_libdir=$("$python_venv/bin/python3" -c 'import sysconfig as s; print(s.get_config_var("LIBDIR") if s.get_config_var("Py_ENABLE_SHARED") else "")')
  if [[ -n $models_libdir && -f $models_libdir/libpython$pyver.so.1.0 ]]; then
    libs="$models_libdir:$libs"
  fi
fi

glibc=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
if [[ $(printf '%s\n2.35\n' "$glibc" | sort -V | head -1) != 2.35 ]]; then
  die "the bundled tritonserver needs glibc >= 2.35, this machine has $glibc"
fi

# The Python backend looks for its stub next to libtriton_python.so, and the
# package keeps one stub per Python version elsewhere. Assemble a backend
# directory once per venv (the venv is keyed by lock and interpreter, so the
# stub's Python version cannot drift from it).
backends="$venv/triton-backends"
if [[ ! -f $backends/.complete ]]; then
  log "phase: assembling backend directory $backends (Python $pyver stub)"
  rm -rf "$backends" "$backends.tmp"
  mkdir -p "$backends.tmp/python"
  cp "$dist/backends/python/libtriton_python.so" "$dist/backends/python/triton_python_backend_utils.py" \
    "$backends.tmp/python/"
  cp "$stub_src" "$backends.tmp/python/triton_python_backend_stub"
  chmod +x "$backends.tmp/python/triton_python_backend_stub"
  touch "$backends.tmp/.complete"
  mv "$backends.tmp" "$backends"
fi

# The stub embeds the system's shared libpython of the same minor version
# (Debian: package libpython3.11); say so instead of failing at model load.
missing=$(LD_LIBRARY_PATH="$libs" ldd "$backends/python/triton_python_backend_stub" | awk '/not found/ {print $1}')
[[ -z $missing ]] || die "the Python backend stub cannot load: ${missing//$'\n'/ } (install libpython$pyver, e.g. apt-get install -y libpython$pyver)"

free_port() {
  "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
http_port=${http_port:-$(free_port)}
grpc_port=${grpc_port:-$(free_port)}
metrics_port=${metrics_port:-$(free_port)}

keep_log=0
if [[ -z $server_log ]]; then
  server_log=$(mktemp -t tritonserver.XXXXXX.log)
else
  keep_log=1
  mkdir -p "$(dirname "$server_log")"
  : >"$server_log"
fi

# Triton's errors (E-lines) come long before the shutdown noise at the end of
# the log; show both. The CUDA-driver line is expected on a CPU-only machine.
show_log() {
  log "errors in the server log:"
  grep -E '^E[0-9]{4} ' "$server_log" | grep -v 'CudaDriverHelper has not been initialized' | tail -n 20 | cut -c1-600 >&2 || true
  log "last log lines:"
  tail -n 15 "$server_log" >&2
}

server_pid=""
# shellcheck disable=SC2317  # invoked through the EXIT trap
stop_server() {
  local status=$?
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    log "phase: stopping tritonserver (pid $server_pid)"
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 1 150); do
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$server_pid" 2>/dev/null; then
      log "tritonserver ignored SIGTERM for 15 s; killing it"
      kill -KILL "$server_pid" 2>/dev/null || true
    fi
    wait "$server_pid" 2>/dev/null || true
  fi
  [[ -n $state_file ]] && rm -f "$state_file"
  if [[ $status -ne 0 ]]; then
    log "server log kept at $server_log"
  elif [[ $keep_log -eq 0 ]]; then
    rm -f "$server_log"
  fi
  return "$status"
}
trap stop_server EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "phase: starting tritonserver (http 127.0.0.1:$http_port, grpc 127.0.0.1:$grpc_port) on $repo"
# A unique shm prefix keeps concurrent servers (parallel CI jobs) from
# attaching to each other's Python-backend shared memory regions.
env \
  PATH="$models_venv/bin:$PATH" \
  LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  PYTHONDONTWRITEBYTECODE=1 \
  "$binary" \
  --model-repository="$repo" \
  --backend-directory="$backends" \
  --backend-config="python,shm-region-prefix-name=tritonft$$_" \
  --backend-config="python,shm-default-byte-size=4194304" \
  --disable-auto-complete-config \
  --strict-readiness=true \
  --exit-on-error=true \
  --exit-timeout-secs=10 \
  --http-address=127.0.0.1 --http-port="$http_port" \
  --grpc-address=127.0.0.1 --grpc-port="$grpc_port" \
  --metrics-address=127.0.0.1 --metrics-port="$metrics_port" \
  --allow-gpu-metrics=false \
  >"$server_log" 2>&1 &
server_pid=$!

http_url="http://127.0.0.1:$http_port"
grpc_url="127.0.0.1:$grpc_port"
log "phase: waiting up to ${ready_timeout}s for $http_url/v2/health/ready"
deadline=$((SECONDS + ready_timeout))
until curl -fsS -o /dev/null "$http_url/v2/health/ready" 2>/dev/null; do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    wait "$server_pid" && rc=0 || rc=$?
    server_pid=""
    log "tritonserver exited with status $rc before it became ready"
    show_log
    exit 1
  fi
  if ((SECONDS >= deadline)); then
    log "tritonserver not ready after ${ready_timeout}s"
    show_log
    exit 1
  fi
  sleep 0.5
done
log "phase: ready ($http_url, grpc $grpc_url)"

if [[ -n $state_file ]]; then
  mkdir -p "$(dirname "$state_file")"
  printf '{"http":"%s","grpc":"%s","metrics":"%s","log":"%s","pid":%d}\n' \
    "$http_url" "$grpc_url" "http://127.0.0.1:$metrics_port/metrics" "$server_log" "$server_pid" >"$state_file.tmp"
  mv "$state_file.tmp" "$state_file"
fi

if [[ $# -gt 0 ]]; then
  log "phase: running $*"
  rc=0
  TRITON_HTTP_URL=$http_url TRITON_GRPC_URL=$grpc_url TRITON_LOG=$server_log "$@" || rc=$?
  if ! kill -0 "$server_pid" 2>/dev/null; then
    log "tritonserver died while the command ran"
    show_log
    [[ $rc -ne 0 ]] || rc=1
  fi
  log "phase: command finished with status $rc"
  exit "$rc"
fi

# Serve until told to stop (a trapped signal interrupts `wait`/`sleep` and
# runs the EXIT trap) or until the watched process is gone.
if [[ -n $watch_pid ]]; then
  while kill -0 "$server_pid" 2>/dev/null; do
    if ! kill -0 "$watch_pid" 2>/dev/null; then
      log "watched process $watch_pid is gone; shutting down"
      exit 0
    fi
    sleep 1 &
    wait $! || true
  done
fi
rc=0
wait "$server_pid" || rc=$?
server_pid=""
log "tritonserver exited on its own with status $rc"
show_log
exit 1
