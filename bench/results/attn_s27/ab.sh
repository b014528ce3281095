#!/bin/bash
# ab.sh LOG DRV then lines of drv arguments on stdin; load logged before each line.
log=$1; drv=$2
while read -r args; do
  [ -z "$args" ] && continue
  echo "# $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) : $drv $args" >> $log
  nice -n 0 /tmp/attn27/$drv $args >> $log 2>&1
done
echo "# $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) end" >> $log
