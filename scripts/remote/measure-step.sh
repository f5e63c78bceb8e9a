#!/usr/bin/env bash
# Runs one build step and records how long it took, beside the step's marker.
#
# usage: measure-step.sh <marker-file> <command...>
#   e.g. measure-step.sh /opt/triton-ft/state/fetch.done bash /opt/triton-ft/scripts/remote/fetch.sh /opt/triton-ft/steps/fetch.conf
#
# The step runs as given: its stdout (the RESULT lines), its stderr and its
# exit status pass through unchanged. When it succeeds:
# - a step that wrote a new marker ran for real: this writes <marker>.measured
#   (`<step>.done.measured`, atomically) with the marker's input hash, the
#   seconds the run took, the bytes the host's network interfaces moved during
#   it (received plus sent, every interface but loopback; steps running at the
#   same time on one host share that count) and the UTC time it finished;
# - a step that skipped (its marker unchanged) leaves the record as it was, so
#   a re-run keeps the time of the run that did the work;
# - then, when the record belongs to the marker's input hash, it prints it as
#   `RESULT step_seconds=<n>`, `RESULT step_net_bytes=<n>` and
#   `RESULT step_measured_at=<UTC time>` (infra/plan/measurements.ts reads them).
# A failed step records nothing.
#
# Why a wrapper rather than lib.sh: lib.sh, its lib/ folder and the step scripts
# are inputs of every step's hash (infra/plan/stepGraph.ts, lib/hash.sh), so
# recording there would re-run every step of every live stack once. This file
# is no step's input: it observes a step, it does not change its output.
#
# env (tests): MEASURE_NET_DEV  the /proc/net/dev to read (default /proc/net/dev).
set -euo pipefail

die() {
  printf '%s [measure-step] ERROR: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2
  exit 2
}

(($# >= 2)) || die "usage: $0 <marker-file> <command...>"
marker=$1
shift
[[ $marker == /*.done ]] || die "the marker must be an absolute path ending in .done, got '$marker'"
record=$marker.measured
net_dev=${MEASURE_NET_DEV:-/proc/net/dev}

# net_bytes : bytes received plus sent by every interface but loopback; 0 when unreadable.
net_bytes() {
  [[ -r $net_dev ]] || {
    echo 0
    return 0
  }
  # Two header lines, then "<iface>: <rx bytes> <7 more rx fields> <tx bytes> ...".
  # %.0f, not %d: some awks print %d through a 32-bit int.
  awk 'NR > 2 {
    i = index($0, ":"); name = substr($0, 1, i - 1); gsub(/[ \t]/, "", name)
    split(substr($0, i + 1), f, " ")
    if (name != "lo") s += f[1] + f[9]
  } END { printf "%.0f\n", s }' "$net_dev"
}

# marker_state : the marker's text, or nothing when there is none.
marker_state() {
  if [[ -f $marker ]]; then cat "$marker"; fi
}

before=$(marker_state)
start=$(date +%s)
bytes_start=$(net_bytes)

rc=0
"$@" || rc=$?
if ((rc != 0)); then exit "$rc"; fi

after=$(marker_state)
hash=$(sed -n 's/^input_hash=//p' <<<"$after" | head -n1)
[[ -n $hash ]] || exit 0 # a command that keeps no marker: nothing to record

if [[ $after != "$before" ]]; then
  seconds=$(($(date +%s) - start))
  moved=$(($(net_bytes) - bytes_start))
  ((moved >= 0)) || moved=0 # a counter reset (an interface re-created) is no negative transfer
  tmp=$record.tmp.$$
  printf 'input_hash=%s\nseconds=%s\nnet_bytes=%s\nmeasured_at=%s\n' \
    "$hash" "$seconds" "$moved" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$tmp"
  mv -f "$tmp" "$record"
fi

[[ -f $record ]] || exit 0
field() { sed -n "s/^$1=//p" "$record" | head -n1; }
if [[ $(field input_hash) == "$hash" ]]; then
  printf 'RESULT step_seconds=%s\nRESULT step_net_bytes=%s\nRESULT step_measured_at=%s\n' \
    "$(field seconds)" "$(field net_bytes)" "$(field measured_at)"
fi
