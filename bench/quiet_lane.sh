#!/bin/sh
# Runs a timed command in this machine's quiet lane: it holds /work/notes/quiet.lock (one timed
# measurement at a time) and runs in a session of its own whose scheduler group gets nice -20.
# Why the group: with kernel.sched_autogroup_enabled=1 the CPUs are first shared equally between
# sessions, and a process's own nice only orders it within its session, so everyone else's
# `nice -n 19` builds still took about 90% of the machine from an ordinary command. The command
# itself runs at nice 0. Prints the time and load average before and after.
#   bench/quiet_lane.sh COMMAND [ARG...]
[ $# -ge 1 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
lock=${TREX_QUIET_LOCK:-/work/notes/quiet.lock}
exec flock "$lock" setsid sh -c '
  echo -20 > /proc/self/autogroup 2>/dev/null || echo "quiet_lane: cannot raise the session group (no autogroups?)" >&2
  echo "quiet lane start $(date -u +%T) load $(cut -d" " -f1-3 /proc/loadavg) group $(cat /proc/self/autogroup 2>/dev/null)"
  "$@"; rc=$?
  echo "quiet lane end $(date -u +%T) load $(cut -d" " -f1-3 /proc/loadavg)"
  exit $rc' quiet_lane "$@"
