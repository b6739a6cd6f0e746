# shellcheck shell=bash
# fetch_debian_sources WORK SOURCE=VERSION...: unpacks Debian's source packages, at exactly these
# versions, into WORK (one directory each, named SOURCE-UPSTREAMVERSION). Sourced by the scripts
# that rebuild Debian's archives (tools/pic_deps.sh, tools/httplib_archive.sh); the caller
# defines log().
#
# apt-get reads Debian's signed source indices through a source list and state directory of
# its own under WORK, so that the machine's apt configuration is left alone. Needs dpkg-dev and
# deb.debian.org.
fetch_debian_sources() {
  local work="$1" codename
  shift
  mkdir -p "$work/apt/lists/partial"
  codename="$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release)"
  cat >"$work/apt/sources.list" <<SOURCES
deb-src http://deb.debian.org/debian $codename main
deb-src http://deb.debian.org/debian $codename-updates main
deb-src http://deb.debian.org/debian-security $codename-security main
SOURCES
  local apt_options=(-o "Dir::Etc::SourceList=$work/apt/sources.list"
    -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$work/apt/lists"
    -o "Dir::Cache=$work/apt/cache" -q)
  if ! apt-get "${apt_options[@]}" update >"$work/apt.log" 2>&1; then
    cat "$work/apt.log" >&2
    log "cannot read Debian's source index; is deb.debian.org reachable?"
    return 1
  fi
  if ! (cd "$work" && apt-get "${apt_options[@]}" source --only-source "$@") \
    >"$work/source.log" 2>&1; then
    cat "$work/source.log" >&2
    log "apt-get source $* failed: the installed versions must still be in Debian's archive"
    return 1
  fi
}
