#!/bin/bash
# usage: es_timeline.sh BUILD PYDIR OUT
o=$(mktemp -d)
TREX_DATA_DIR=/work/shared/data TREX_PYTHON_DIR=$2 perf trace -o $3 -e 'execve,clone,clone3,close,sendto,recvfrom,sendmsg,recvmsg,exit_group,wait4,unshare' -- $1/trex eval run --bench b4o-orgeval --references --jobs 1 --quiet --out $o --limit 1 >/dev/null
rm -rf $o
