#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for tests/cluster/test_slurm.py and for trying the slurm profile.
#
#   tests/cluster/start-slurm.sh         install slurm-wlm + munge (+ slurmdbd, mariadb-server) where missing, start
#                                        munged, (mariadbd, slurmdbd,) slurmctld, slurmd
#   . "${FEDREPRO_SLURM_DIR:-/var/tmp/fedrepro-slurm}/env"     then sbatch, squeue, sacct, sinfo talk to it
#   tests/cluster/stop-slurm.sh          cancel its jobs and stop the daemons
#
# Idempotent: a cluster that already answers is left as it is.  Everything (config, munge key, state, logs,
# pid files) lives in $FEDREPRO_SLURM_DIR; nothing is written to /etc/slurm or /etc/munge, and the one link outside
# it, /run/slurm/conf, is explained below.  The daemons bind to 127.0.0.1 only, and munge uses a key of its own,
# so no other machine can submit to it.
# Job accounting (FEDREPRO_SLURM_ACCOUNTING=1, the default): slurmdbd over a MariaDB server of its own (data, socket
# and logs in the state folder, listening on 127.0.0.1 only), so `sacct` answers and the executor plugin's default
# status path (sacct) is the one used; FEDREPRO_SLURM_ACCOUNTING=0: no slurmdbd, job states from squeue only.
#
# Environment: FEDREPRO_SLURM_DIR (state folder), FEDREPRO_SLURM_PORT (slurmctld port; slurmd, slurmdbd and mariadbd
# use the next three; default 6817), FEDREPRO_SLURM_ACCOUNTING (1 or 0).  Exit status: 0 running, 3 the packages are
# missing and cannot be installed here, 1 other errors.
set -euo pipefail

STATE=${FEDREPRO_SLURM_DIR:-/var/tmp/fedrepro-slurm}
CTLD_PORT=${FEDREPRO_SLURM_PORT:-6817}
SLURMD_PORT=$((CTLD_PORT + 1))
DBD_PORT=$((CTLD_PORT + 2))
DB_PORT=$((CTLD_PORT + 3))
ACCOUNTING=${FEDREPRO_SLURM_ACCOUNTING:-1}
DB_SOCKET=$STATE/run/mysqld.sock
CONF=$STATE/etc/slurm.conf
SOCKET=$STATE/munge/munge.socket.2
NODE=$(hostname -s)
START_TIMEOUT_S=60

say() { echo "start-slurm: $*" >&2; }

# --- packages --------------------------------------------------------------------------------------------------
missing_commands() {
    local c
    for c in munged munge slurmctld slurmd sbatch squeue scontrol sinfo; do
        command -v "$c" >/dev/null 2>&1 || echo "$c"
    done
    if [ "$ACCOUNTING" = 1 ]; then
        for c in slurmdbd sacct sacctmgr mariadbd mariadb-install-db mariadb; do
            command -v "$c" >/dev/null 2>&1 || echo "$c"
        done
    fi
}
PACKAGES="slurm-wlm munge"
if [ "$ACCOUNTING" = 1 ]; then PACKAGES="$PACKAGES slurmdbd mariadb-server mariadb-client"; fi


install_packages() {
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
            say "cannot install $PACKAGES: not root and no password-less sudo"; exit 3
        fi
    fi
    command -v apt-get >/dev/null 2>&1 || { say "cannot install $PACKAGES: no apt-get here"; exit 3; }
    say "installing $PACKAGES (missing: $(missing_commands | tr '\n' ' '))"
    # The packages' maintainer scripts would start the system-wide services with /etc configs; we start our own.
    # policy-rc.d answering 101 ("action forbidden") stops that, and is removed again unless it was already there.
    local policy=/usr/sbin/policy-rc.d own_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod 755 "$policy" && own_policy=1
    fi
    local rc=0
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
        --no-install-recommends $PACKAGES; } >"${TMPDIR:-/tmp}/fedrepro-slurm-apt.log" 2>&1 || rc=$?
    [ "$own_policy" = 1 ] && $sudo rm -f "$policy"
    if [ "$rc" != 0 ]; then
        tail -n 20 "${TMPDIR:-/tmp}/fedrepro-slurm-apt.log" >&2
        say "cannot install $PACKAGES (apt-get exit $rc)"; exit 3
    fi
}

if [ -n "$(missing_commands)" ]; then install_packages; fi
# The daemons run as root (slurmd starts each job as the user who submitted it): with password-less sudo, the rest
# of this script runs under it; the state folder stays readable, so any user can submit.
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        exec sudo -n FEDREPRO_SLURM_DIR="$STATE" FEDREPRO_SLURM_PORT="$CTLD_PORT" \
            FEDREPRO_SLURM_ACCOUNTING="$ACCOUNTING" "$0" "$@"
    fi
    say "the SLURM daemons must run as root: not root and no password-less sudo"; exit 3
fi

# --- already running? -----------------------------------------------------------------------------------------
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

node_ready() {
    local state
    state=$(SLURM_CONF=$CONF sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -n 1) || return 1
    case "$state" in idle*|mixed*|allocated*|completing*) return 0 ;; *) return 1 ;; esac
}

accounting_alive() {
    [ "$ACCOUNTING" != 1 ] || { alive "$STATE/run/mariadbd.pid" && alive "$STATE/run/slurmdbd.pid"; }
}

if alive "$STATE/run/munged.pid" && alive "$STATE/run/slurmctld.pid" && alive "$STATE/run/slurmd.pid" \
        && accounting_alive && node_ready; then
    say "already running (SLURM_CONF=$CONF)"
    echo "export SLURM_CONF=$CONF"
    exit 0
fi

# --- configuration --------------------------------------------------------------------------------------------
mkdir -p "$STATE"/{etc,munge,run,log,ctld,spool,db}
chmod 755 "$STATE"
chmod 755 "$STATE/munge"  # munged wants its socket folder searchable by all (the key itself is 0400)
chmod 700 "$STATE/ctld" "$STATE/spool" "$STATE/db"

# What slurmd sees on this machine (CPUs, sockets, cores, threads, memory): the node never claims more.
HW=$(slurmd -C | head -n 1 | tr ' ' '\n' \
    | grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore|RealMemory)=' | paste -sd ' ')

if [ "$ACCOUNTING" = 1 ]; then
    ACCOUNTING_LINE="slurmdbd on 127.0.0.1:$DBD_PORT over mariadbd on 127.0.0.1:$DB_PORT"
    ACCOUNTING_CONF="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$SOCKET
AccountingStorageTRES=gres/gpu"
else
    ACCOUNTING_LINE="none (job states from squeue)"
    ACCOUNTING_CONF="AccountingStorageType=accounting_storage/none"
fi
cat >"$CONF.new" <<EOF
# Written by tests/cluster/start-slurm.sh: one node on 127.0.0.1; accounting: $ACCOUNTING_LINE
ClusterName=fedrepro
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
AuthType=auth/munge
AuthInfo=socket=$SOCKET
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups (containers rarely allow them): processes are tracked by parent id, tasks are not confined.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
$ACCOUNTING_CONF
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
# Finished jobs stay visible to squeue for 5 minutes: the executor plugin's squeue status needs at least
# 3 x its first status-check delay (validation.py in snakemake-executor-plugin-slurm).
MinJobAge=300
KillWait=5
InactiveLimit=0
# Two GPUs that exist only for the scheduler (each "device" is an empty file: slurmd drops a GPU without
# one), so that jobs submitted with --gpus=1 to the gpu partition are accepted, two at a time, and run; they
# compute on the CPU like every other job.  Partition cpu: one a user names (the tests check it is honoured).
GresTypes=gpu
NodeName=$NODE NodeAddr=127.0.0.1 NodeHostname=$NODE $HW Gres=gpu:2 State=UNKNOWN
PartitionName=main Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$NODE MaxTime=INFINITE State=UP
PartitionName=cpu Nodes=$NODE MaxTime=INFINITE State=UP
EOF
mv "$CONF.new" "$CONF"
touch "$STATE/etc/fake-gpu0" "$STATE/etc/fake-gpu1"
cat >"$STATE/etc/gres.conf" <<EOF
NodeName=$NODE Name=gpu File=$STATE/etc/fake-gpu[0-1]
EOF
echo "export SLURM_CONF=$CONF" >"$STATE/env"
export SLURM_CONF=$CONF

# Inside a job the executor plugin's job step clears every SLURM_* variable, SLURM_CONF included, before it calls
# srun (snakemake-executor-plugin-slurm issue 164).  srun then looks in /etc/slurm/slurm.conf and next in
# /run/slurm/conf/, where a configless slurmd keeps the controller's files: that is where this cluster's go.
if [ -e /etc/slurm/slurm.conf ]; then
    say "/etc/slurm/slurm.conf exists: srun inside jobs would read it instead of $CONF; not starting"; exit 1
fi
if [ -e /run/slurm/conf ] && [ ! -L /run/slurm/conf ]; then
    say "/run/slurm/conf exists and is not ours (a configless slurmd runs here?); not starting"; exit 1
fi
mkdir -p /run/slurm
ln -sfn "$STATE/etc" /run/slurm/conf

# --- munge ----------------------------------------------------------------------------------------------------
if [ ! -s "$STATE/munge/munge.key" ]; then
    (umask 077 && head -c 1024 /dev/urandom >"$STATE/munge/munge.key")
    chmod 400 "$STATE/munge/munge.key"
fi
if ! alive "$STATE/run/munged.pid"; then
    rm -f "$SOCKET" "$SOCKET.lock"
    munged --key-file="$STATE/munge/munge.key" --socket="$SOCKET" --pid-file="$STATE/run/munged.pid" \
        --log-file="$STATE/log/munged.log" --seed-file="$STATE/munge/munged.seed"
fi
munge -n -S "$SOCKET" | unmunge -S "$SOCKET" >/dev/null || { say "munge does not answer"; exit 1; }

# --- accounting: mariadbd, slurmdbd, and the cluster, account and users registered with sacctmgr -------------
start_accounting() {
    local db_pass i user
    if [ ! -d "$STATE/db/mysql" ]; then
        mariadb-install-db --no-defaults --datadir="$STATE/db" --user=root --auth-root-authentication-method=socket \
            >"$STATE/log/mariadb-install.log" 2>&1 || { tail -n 20 "$STATE/log/mariadb-install.log" >&2; return 1; }
    fi
    if ! alive "$STATE/run/mariadbd.pid"; then
        rm -f "$DB_SOCKET"
        mariadbd --no-defaults --datadir="$STATE/db" --socket="$DB_SOCKET" --port="$DB_PORT" \
            --bind-address=127.0.0.1 --pid-file="$STATE/run/mariadbd.pid" --log-error="$STATE/log/mariadbd.log" \
            --user=root --innodb-buffer-pool-size=32M --skip-name-resolve </dev/null >/dev/null 2>&1 &
        for i in $(seq 1 120); do [ -S "$DB_SOCKET" ] && alive "$STATE/run/mariadbd.pid" && break; sleep 0.5; done
        [ -S "$DB_SOCKET" ] || { say "mariadbd did not start"; tail -n 15 "$STATE/log/mariadbd.log" >&2; return 1; }
    fi
    if [ ! -s "$STATE/etc/slurmdbd.pass" ]; then
        (umask 077 && head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$STATE/etc/slurmdbd.pass")
    fi
    db_pass=$(cat "$STATE/etc/slurmdbd.pass")
    mariadb --no-defaults -S "$DB_SOCKET" -u root <<SQL
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$db_pass';
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
SQL
    # slurmdbd reads slurmdbd.conf beside slurm.conf (SLURM_CONF); it holds the password: mode 0600.  The clients
    # reach slurmdbd with the munge socket named by slurm.conf's AccountingStoragePass (AuthInfo is not used there).
    (umask 077 && cat >"$STATE/etc/slurmdbd.conf" <<EOF
# Written by tests/cluster/start-slurm.sh
AuthType=auth/munge
AuthInfo=socket=$SOCKET
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$STATE/run/slurmdbd.pid
LogFile=$STATE/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$db_pass
StorageLoc=slurm_acct_db
EOF
    )
    alive "$STATE/run/slurmdbd.pid" || slurmdbd
    for i in $(seq 1 120); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.5; done
    if ! sacctmgr -n list cluster >/dev/null 2>&1; then
        say "slurmdbd does not answer"; tail -n 15 "$STATE/log/slurmdbd.log" >&2; return 1
    fi
    # Jobs are recorded for a registered cluster; the account and the submitting users complete sacct's view.
    sacctmgr -i add cluster fedrepro >/dev/null 2>&1 || true
    sacctmgr -i add account fedrepro Cluster=fedrepro Description=tests Organization=fedrepro >/dev/null 2>&1 || true
    for user in root ${SUDO_USER:-}; do
        sacctmgr -i add user "$user" Account=fedrepro Cluster=fedrepro >/dev/null 2>&1 || true
    done
}
if [ "$ACCOUNTING" = 1 ]; then start_accounting || exit 1; fi

# --- slurmctld and slurmd -------------------------------------------------------------------------------------
# A fresh controller forgets earlier jobs (-c): state from a previous cluster in this folder is not wanted.
alive "$STATE/run/slurmctld.pid" || slurmctld -c -f "$CONF"
alive "$STATE/run/slurmd.pid" || slurmd -f "$CONF" -N "$NODE"

started=$SECONDS
until node_ready; do
    state=$(sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -n 1 || true)
    case "$state" in down*|drain*|fail*) scontrol update NodeName="$NODE" State=RESUME 2>/dev/null || true ;; esac
    gone=""
    if [ $((SECONDS - started)) -ge 5 ]; then  # a daemon that exited (port taken, bad config) will not come back
        alive "$STATE/run/slurmctld.pid" || gone="slurmctld exited; "
        alive "$STATE/run/slurmd.pid" || gone="${gone}slurmd exited; "
    fi
    if [ -n "$gone" ] || [ $((SECONDS - started)) -ge "$START_TIMEOUT_S" ]; then
        say "${gone}node $NODE not ready after $((SECONDS - started))s (state '${state:-no answer}'); logs in $STATE/log:"
        tail -n 15 "$STATE/log/slurmctld.log" "$STATE/log/slurmd.log" >&2 || true
        exit 1
    fi
    sleep 0.5
done
say "running: node $NODE ($HW) partitions main (default), gpu, cpu; accounting: $ACCOUNTING_LINE; SLURM_CONF=$CONF"
echo "export SLURM_CONF=$CONF"
