# shellcheck shell=bash
# Folders and disk: writable folders, free space, the atomic folder swap,
# run-time placeholders in plan argv.
# Sourced by ../lib.sh (never on its own), with the other lib/ files: it
# may use any helper they define.

# ensure_dir <dir> : creates a folder owned by the current user, using
# passwordless sudo only when the parent is not writable (e.g. /opt).
ensure_dir() {
  local d=$1
  [[ -d $d && -w $d ]] && return 0
  if mkdir -p "$d" 2>/dev/null && [[ -w $d ]]; then
    return 0
  fi
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo -n mkdir -p "$d"
    sudo -n chown "$(id -u):$(id -g)" "$d"
    return 0
  fi
  die "cannot create writable folder $d (no permission and no passwordless sudo)"
}

# free_gib <path> : free space (GiB, rounded down) of the filesystem holding path.
free_gib() {
  local kib
  kib=$(df -Pk "$1" | awk 'NR==2 {print $4}')
  [[ $kib =~ ^[0-9]+$ ]] || die "could not read free disk space of $1 from df"
  echo $((kib / 1024 / 1024))
}

# check_free_disk <path> <required-gib>
check_free_disk() {
  local path=$1 need=$2 have
  have=$(free_gib "$path")
  if ((have < need)); then
    die "not enough free disk on the filesystem of $path: ${have} GiB free, ${need} GiB required (grow the root volume or free space)"
  fi
  log "free disk on $path: ${have} GiB (need ${need} GiB)"
}

# replace_dir <staged> <final> : moves a completed staging folder into place.
# The old folder is moved aside first (to <final>.old) and removed after the
# rename, so the final path is never a half-written mix of old and new
# content. An interruption between the two renames (INT, TERM, HUP: the SSH
# session of `pulumi up` going away) puts the old folder back; after a kill
# that no trap sees, the next call removes the leftover first. Either way no
# second copy of multi-GB weights stays behind.
replace_dir() {
  local staged=$1 final=$2 old
  old=$final.old
  ensure_dir "$(dirname "$final")"
  # Leftovers of interrupted runs, including the <final>.old.<pid> copies older versions made.
  rm -rf "$old" "$final".old.[0-9]*
  if [[ -e $final ]]; then
    mv "$final" "$old"
  fi
  trap '_replace_dir_rollback "$old" "$final"; exit 130' INT TERM HUP
  mv "$staged" "$final"
  trap - INT TERM HUP
  rm -rf "$old"
}

_replace_dir_rollback() {
  if [[ ! -e $2 && -e $1 ]]; then mv "$1" "$2"; fi
  log "interrupted while swapping $2 in; the previous content is back in place"
}

# substitute_placeholders <array-name> <KEY=value>... : replaces {{KEY}} in
# every element of the named array (used for plan argv that refers to
# folders only known at run time, e.g. the staging output folder).
substitute_placeholders() {
  local -n _arr=$1
  shift
  local i kv key val
  for i in "${!_arr[@]}"; do
    for kv in "$@"; do
      key=${kv%%=*}
      val=${kv#*=}
      _arr[i]=${_arr[i]//"{{$key}}"/$val}
    done
  done
}
