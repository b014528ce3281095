#!/bin/bash
# ab.sh LOG then lines of drv arguments on stdin; each line run in the quiet lane, load logged.
log=$1
while read -r args; do
  [ -z "$args" ] && continue
  echo "# $(date -u +%T) load $(cat /proc/loadavg) : drv $args" >> $log
  flock /work/notes/quiet.lock nice -n 0 /tmp/attn26/drv $args >> $log 2>&1
done
echo "# $(date -u +%T) load $(cat /proc/loadavg) end" >> $log
