#!/usr/bin/env bash
# Stop the one-node cluster of tests/cluster/start-slurm.sh: cancel its jobs, then stop slurmd, slurmctld,
# slurmdbd, mariadbd and munged by the process ids in their pid files (nothing else is touched).  Idempotent.
#   FEDREPRO_SLURM_DIR=... tests/cluster/stop-slurm.sh [--purge]    --purge also deletes the state folder
set -euo pipefail

STATE=${FEDREPRO_SLURM_DIR:-/var/tmp/fedrepro-slurm}
if [ "$(id -u)" != 0 ] && [ -e "$STATE" ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    exec sudo -n FEDREPRO_SLURM_DIR="$STATE" "$0" "$@"  # the daemons run as root (start-slurm.sh)
fi
export SLURM_CONF=$STATE/etc/slurm.conf

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_pidfile() {  # stop_pidfile NAME: TERM, wait up to 10 s, then KILL
    local file=$STATE/run/$1.pid pid i
    alive "$file" || { rm -f "$file"; return 0; }
    pid=$(cat "$file")
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    rm -f "$file"
}

if alive "$STATE/run/slurmctld.pid"; then
    jobs=$(squeue -h -o %i 2>/dev/null | tr '\n' ' ' || true)
    if [ -n "${jobs// /}" ]; then
        # shellcheck disable=SC2086  # one argument per job id
        scancel $jobs 2>/dev/null || true
        for i in $(seq 1 50); do
            [ -z "$(squeue -h -t RUNNING,COMPLETING -o %i 2>/dev/null)" ] && break
            sleep 0.2
        done
    fi
fi
stop_pidfile slurmd
stop_pidfile slurmctld
stop_pidfile slurmdbd      # accounting (FEDREPRO_SLURM_ACCOUNTING=1), where started
stop_pidfile mariadbd
stop_pidfile munged
if [ "$(readlink /run/slurm/conf 2>/dev/null)" = "$STATE/etc" ]; then rm -f /run/slurm/conf; fi
if [ "${1:-}" = "--purge" ]; then rm -rf "$STATE"; fi
echo "stop-slurm: stopped ($STATE)" >&2
