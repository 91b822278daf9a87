#!/usr/bin/env bash
# Run one Ray node (head or worker) in the foreground; stop it, with every process it started, on exit.
#
# Every node runs with Ray's token authentication: --token-file (default: $RAY_AUTH_TOKEN_PATH) names the
# cluster's token, a file only its user may read (make one with `python -m olb.grid.auth new-token FILE`); a
# process without it is refused by every Ray server of the node. With --node-ip 127.0.0.1 (one node) Ray binds
# loopback only; with any other address its servers also listen on the machine's other interfaces.
#
# slurm/olb_grid.sbatch starts it once per node with `srun`; it also works without Slurm (the tests start a
# two-node cluster on loopback with it):
#
#   slurm/ray_node.sh head   --port-base 23000 --node-ip 127.0.0.2 --num-cpus 1 --token-file ~/olb-ray/token
#   slurm/ray_node.sh worker --port-base 23400 --node-ip 127.0.0.3 --head 127.0.0.2:23000 --num-cpus 1 \
#                            --token-file ~/olb-ray/token
#
# Ray's temp dir (sockets, session files, logs) is a fresh folder only the user can enter: by default
# `mktemp -d $OLB_RAY_TMPDIR/olbray.XXXXXX` (OLB_RAY_TMPDIR: /tmp). --temp-dir DIR chooses it: a DIR that does not
# exist is created (0700); one that exists must be the user's own and writable by nobody else (else it is refused,
# exit 2) and the fresh folder is made inside it. Ray makes its own folder and its session folders open to everyone
# (0777): they go in `ray/` below the private folder, where nobody else reaches them. The folder this script made
# is removed when the node stops.
# Ray's metrics export (Prometheus, it answers without the token) is off: RAY_enable_metrics_collection=0.
#
# Options: --num-cpus (default: SLURM_CPUS_PER_TASK, else SLURM_CPUS_ON_NODE), --pid-file FILE (the session id
# of the node's Ray processes), --python (default: $OLB_PYTHON), --oom-retries N (head: how often a task killed
# by Ray's memory monitor is retried, default 2, the grid's backend.max_retries; Ray's own default is forever),
# --log-dir DIR (the node's Ray logs are copied to DIR/<host> when it stops: they explain lost cells).
# Every port of the node lies in [--port-base, --port-base + 400) (layout below): nodes that share a machine
# need port bases 400 apart. `ray start --block` runs in a session of its own (setsid), so every Ray process
# of the node has that session id. On SIGTERM/SIGINT/SIGHUP/SIGUSR1 (the batch script's stop request) the node
# is stopped: SIGTERM to `ray start` (it stops its processes), then SIGKILL to whatever still has the session
# id; a detached janitor does the same if this script is killed first. Nothing is matched by name.
set -uo pipefail

PROG="ray_node.sh"
die() { echo "$PROG: error: $*" >&2; exit 2; }

role="${1:-}"
case "$role" in
  head|worker) shift ;;
  -h|--help|"") awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; [ -n "$role" ] && exit 0; exit 2 ;;
  *) die "first argument must be 'head' or 'worker', got '$role'" ;;
esac

port_base="" node_ip="" num_cpus="" temp_dir="" head_addr="" pid_file="" python="${OLB_PYTHON:-}"
token_file="${RAY_AUTH_TOKEN_PATH:-}" oom_retries=2 log_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --port-base) port_base="$2"; shift 2 ;;
    --node-ip) node_ip="$2"; shift 2 ;;
    --num-cpus) num_cpus="$2"; shift 2 ;;
    --temp-dir) temp_dir="$2"; shift 2 ;;
    --head) head_addr="$2"; shift 2 ;;
    --pid-file) pid_file="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    --token-file) token_file="$2"; shift 2 ;;
    --oom-retries) oom_retries="$2"; shift 2 ;;
    --log-dir) log_dir="$2"; shift 2 ;;
    *) die "unknown option '$1'" ;;
  esac
done

host="$(hostname -s 2>/dev/null || hostname)"
[ -n "$port_base" ] || die "--port-base is required"
[[ "$port_base" =~ ^[0-9]+$ ]] && [ "$port_base" -ge 1024 ] && [ "$port_base" -le 65000 ] \
  || die "--port-base must be a number in 1024..65000, got '$port_base'"
if [ -z "$num_cpus" ]; then
  # The allocation's CPUs on this node; never guessed from the hardware.
  num_cpus="${SLURM_CPUS_PER_TASK:-${SLURM_CPUS_ON_NODE:-}}"
  [ -n "$num_cpus" ] || die "--num-cpus not given and neither SLURM_CPUS_PER_TASK nor SLURM_CPUS_ON_NODE is set"
fi
[[ "$num_cpus" =~ ^[0-9]+$ ]] && [ "$num_cpus" -ge 1 ] || die "--num-cpus must be a positive integer, got '$num_cpus'"
# Why others could change what is in the folder $1 (nothing printed: they cannot). With "parent", a sticky folder
# of root's or one's own (/tmp) is fine too: nobody else can rename or remove what one makes in it.
folder_problem() {
  local dir="$1" uid mode
  [ -L "$dir" ] && { echo "is a symbolic link"; return; }
  [ -d "$dir" ] || { echo "is not a directory"; return; }
  uid="$(stat -c %u "$dir")" mode="$(stat -c %a "$dir")"
  if [ "$uid" != "$(id -u)" ] && ! { [ "${2:-}" = parent ] && [ "$uid" = 0 ]; }; then
    echo "is owned by uid $uid, not by you (uid $(id -u))"; return
  fi
  [ "${2:-}" = parent ] && [ $(( 8#$mode & 8#1000 )) -ne 0 ] && return
  [ $(( 8#$mode & 8#022 )) -eq 0 ] || echo "is writable by other users (mode $mode)"
}
# Ray puts Unix sockets at <temp-dir>/session_<date>_<pid>/sockets/plasma_store; Linux caps socket paths at 107 bytes.
short_enough() {
  [ "${#1}" -le 48 ] || die "Ray's temp dir '$1' is longer than 48 characters: its socket paths would exceed the Unix limit; $2"
}
if [ -z "$temp_dir" ]; then
  temp_parent="${OLB_RAY_TMPDIR:-/tmp}" temp_template="${OLB_RAY_TMPDIR:-/tmp}/olbray.XXXXXX"
  short_enough "$temp_template/ray" "set OLB_RAY_TMPDIR=/tmp"
elif [ -e "$temp_dir" ] || [ -L "$temp_dir" ]; then
  problem="$(folder_problem "$temp_dir")"
  [ -z "$problem" ] || die "--temp-dir '$temp_dir' $problem: others could change Ray's sockets and logs there; remove it or name a folder that does not exist yet"
  temp_parent="$temp_dir" temp_template="$temp_dir/r.XXXXXX"
  short_enough "$temp_template/ray" "pass a shorter --temp-dir"
else
  temp_parent="$(dirname "$temp_dir")" temp_template=""
  short_enough "$temp_dir/ray" "pass a shorter --temp-dir"
fi
case "$temp_parent" in /*) ;; *) die "--temp-dir and OLB_RAY_TMPDIR must be absolute paths, got '$temp_parent'" ;; esac
problem="$(folder_problem "$temp_parent" parent)"
[ -z "$problem" ] || die "'$temp_parent', the folder of Ray's temp dir, $problem; choose another (--temp-dir, OLB_RAY_TMPDIR)"
[ "$role" = head ] || [ -n "$head_addr" ] || die "a worker needs --head IP:PORT"
[[ "$oom_retries" =~ ^[0-9]+$ ]] || die "--oom-retries must be a number >= 0, got '$oom_retries'"
[ -n "$token_file" ] || die "--token-file is required (or RAY_AUTH_TOKEN_PATH); make one with: python -m olb.grid.auth new-token FILE"
[ -s "$token_file" ] && [ -r "$token_file" ] || die "the token file '$token_file' is missing, empty or unreadable"
[ "$(stat -L -c %u "$token_file")" = "$(id -u)" ] && [ $(( 8#$(stat -L -c %a "$token_file") & 8#077 )) -eq 0 ] \
  || die "the token file '$token_file' must be yours and readable by you only (chmod 600)"
case "$token_file" in /*) ;; *) token_file="$PWD/$token_file" ;; esac
[ -n "$python" ] || python="$(command -v python3 || true)"
[ -x "$python" ] || die "python '$python' is not executable (set OLB_PYTHON or pass --python)"
ray_bin="$(dirname "$python")/ray"
if [ -x "$ray_bin" ]; then ray_cmd=("$ray_bin"); else ray_cmd=("$python" -m ray.scripts.scripts); fi

# Port layout (offsets from the base): 0 GCS, 1 Ray Client (with ray[client]), 2 dashboard, 9 autoscaler metrics,
# 10 dashboard metrics (these five on the head only), 3 node manager, 4 object manager, 5 dashboard agent gRPC,
# 6 dashboard agent HTTP, 7 metrics export (off), 8 runtime-env agent, 50..399 worker processes.
p() { echo $((port_base + $1)); }
port_is_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for off in 3 4 5 6 7 8; do
  port_is_free "$(p $off)" || die "port $(p $off) on $host is already in use; pick another OLB_RAY_PORT_BASE"
done
if [ "$role" = head ]; then
  for off in 0 1 2 9 10; do
    port_is_free "$(p $off)" || die "port $(p $off) on $host is already in use; pick another OLB_RAY_PORT_BASE"
  done
fi

export RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH="$token_file"
# Ray's Prometheus servers answer without the token: the node's metrics export is off; the head's autoscaler and
# dashboard metrics servers (Ray starts them regardless) get ports of the node's range, not Ray's fixed 44217, 44227.
export RAY_enable_metrics_collection=0 AUTOSCALER_METRIC_PORT="$(p 9)" DASHBOARD_METRIC_PORT="$(p 10)"
unset RAY_AUTH_TOKEN  # it would win over the file
# Ray's own switch for a one-machine Ray: 127.0.0.1 is the node's address (not rewritten to the host's) and
# every server binds it.
[ "$node_ip" = 127.0.0.1 ] && export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
# A node cut off from the head is declared dead within 5 x (3 + 2) = 25 s, not Ray's 5 x (10 + 3) = 65 s: the
# head's health check of each node every 2 s, each given 3 s, 5 failed in a row (the grid then resubmits the
# node's cells). Set on every node (only the head's GCS reads them); the environment's values win.
export RAY_health_check_period_ms="${RAY_health_check_period_ms:-2000}"
export RAY_health_check_timeout_ms="${RAY_health_check_timeout_ms:-3000}"
export RAY_health_check_failure_threshold="${RAY_health_check_failure_threshold:-5}"
# Stop at once on SIGTERM instead of draining for 30 s (Slurm gives a job little time after its signal).
export RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="${RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S:-0}"
unset RAY_ADDRESS

# The node's private folder is made here (0700), this node's alone, removed when it stops; Ray's below it.
if [ -n "$temp_template" ]; then
  temp_dir="$(mktemp -d "$temp_template")" || die "cannot create a folder in '$temp_parent'"
else
  mkdir -m 700 "$temp_dir" || die "cannot create --temp-dir '$temp_dir'"
fi
ray_dir="$temp_dir/ray"
args=(start --block --disable-usage-stats --temp-dir="$ray_dir" --num-cpus="$num_cpus"
      --node-manager-port="$(p 3)" --object-manager-port="$(p 4)"
      --dashboard-agent-grpc-port="$(p 5)" --dashboard-agent-listen-port="$(p 6)"
      --metrics-export-port="$(p 7)" --runtime-env-agent-port="$(p 8)"
      --min-worker-port="$(p 50)" --max-worker-port="$(p 399)")
[ -n "$node_ip" ] && args+=(--node-ip-address="$node_ip")
if [ "$role" = head ]; then
  args+=(--head --port="$(p 0)" --include-dashboard=false --system-config="{\"task_oom_retries\": $oom_retries}"
         --dashboard-port="$(p 2)")
  # With ray[client] installed the head also serves Ray Client, on 10001 unless told otherwise.
  "$python" -c "import grpc" 2>/dev/null && args+=(--ray-client-server-port="$(p 1)")
else
  args+=(--address="$head_addr")
fi

echo "$PROG: $(date '+%F %T') starting Ray $role on $host: ${num_cpus} CPUs, ports $(p 0)..$(p 399), temp dir $temp_dir"

ray_pid=""
stopping=0
session_pids() {  # live PIDs whose session id is $1 (/proc/PID/stat after the command: state ppid pgrp session)
  local sid="$1" f rest
  for f in /proc/[0-9]*/stat; do
    read -r rest 2>/dev/null <"$f" || continue
    rest="${rest##*) }"
    set -- $rest
    [ "${4:-}" = "$sid" ] && [ "$1" != Z ] && { f="${f#/proc/}"; echo "${f%/stat}"; }
  done
}
start_time() { local rest; read -r rest 2>/dev/null <"/proc/$1/stat" || return 1; rest="${rest##*) }"; set -- $rest; echo "${20}"; }
# The janitor outlives this script: when Slurm cancels a job it may SIGKILL this script while Ray is still
# stopping, and a Ray worker the raylet spawned at that moment would be left behind (reparented to init, out
# of Slurm's reach with proctrack/linuxproc). Detached, it waits for `ray start` and for this script to end
# (the script stops the session, keeps the logs and removes the temp dir itself: the janitor must not remove
# them under it), gives the session 10 s to empty, SIGKILLs what remains of it, removes the temp dir and exits.
janitor() {
  local sid="$1" script="$2" pid t0 left i
  trap '' TERM INT HUP USR1 PIPE
  for pid in "$sid" "$script"; do
    t0="$(start_time "$pid")" || t0=""
    while [ -n "$t0" ] && [ "$(start_time "$pid" 2>/dev/null)" = "$t0" ]; do sleep 1; done
  done
  for ((i = 0; i < 40; i++)); do
    left="$(session_pids "$sid" | tr '\n' ' ')"
    [ -n "${left// /}" ] || break
    sleep 0.25
  done
  for i in 1 2 3; do
    left="$(session_pids "$sid" | tr '\n' ' ')"
    [ -n "${left// /}" ] || break
    kill -KILL $left 2>/dev/null
    sleep 0.5
  done
  if [ "${OLB_KEEP_RAY_TMP:-0}" != 1 ] && [ -d "$temp_dir" ]; then
    rm -rf "$temp_dir"
  fi
}
stop_ray() {
  [ "$stopping" = 1 ] && return
  stopping=1
  trap '' TERM INT HUP USR1
  [ -n "$ray_pid" ] || return 0
  if kill -0 "$ray_pid" 2>/dev/null; then
    echo "$PROG: $(date '+%F %T') stopping Ray $role on $host (pid $ray_pid)"
    kill -TERM "$ray_pid" 2>/dev/null
    for _ in $(seq 1 60); do kill -0 "$ray_pid" 2>/dev/null || break; sleep 0.25; done
  fi
  local left i
  for ((i = 0; i < 40; i++)); do  # ray start asked them to stop; give them up to 10 s
    left="$(session_pids "$ray_pid" | tr '\n' ' ')"
    [ -n "${left// /}" ] || break
    sleep 0.25
  done
  if [ -n "${left// /}" ]; then
    echo "$PROG: killing remaining Ray processes of session $ray_pid: $left"
    kill -KILL $left 2>/dev/null
    sleep 0.5
  fi
  left="$(session_pids "$ray_pid" | tr '\n' ' ')"
  [ -z "${left// /}" ] || echo "$PROG: warning: processes still alive after SIGKILL: $left" >&2
  local logs="$ray_dir/session_latest/logs"  # Ray's link to its session; the newest session when it is missing
  [ -d "$logs" ] || logs="$(ls -d "$ray_dir"/session_2*/logs 2>/dev/null | tail -n 1)"
  if [ -n "$log_dir" ] && [ -n "$logs" ] && [ -d "$logs" ]; then
    # -P: a link in the logs is copied as a link, never the file it points to
    mkdir -p "$log_dir/$host" && cp -rP "$logs/." "$log_dir/$host/" 2>/dev/null
    echo "$PROG: Ray logs kept in $log_dir/$host"
  fi
  if [ "${OLB_KEEP_RAY_TMP:-0}" != 1 ] && [ -d "$temp_dir" ]; then
    rm -rf "$temp_dir" && echo "$PROG: removed $temp_dir (OLB_KEEP_RAY_TMP=1 keeps it)"
  fi
  echo "$PROG: $(date '+%F %T') Ray $role on $host stopped"
}
# SIGUSR1 is the batch script's request to stop (srun forwards it): a normal end, exit 0.
on_signal() { echo "$PROG: received SIG$1"; stop_ray; [ "$1" = USR1 ] && exit 0; exit $((128 + $2)); }
trap 'on_signal TERM 15' TERM
trap 'on_signal INT 2' INT
trap 'on_signal HUP 1' HUP
trap 'on_signal USR1 10' USR1
trap stop_ray EXIT

# setsid: ray start becomes a session (and process group) leader; all Ray processes of this node inherit it.
setsid "${ray_cmd[@]}" "${args[@]}" </dev/null &
ray_pid=$!
[ -n "$pid_file" ] && echo "$ray_pid" >"$pid_file"
( janitor "$ray_pid" "$$" </dev/null >/dev/null 2>&1 & )
wait "$ray_pid"
rc=$?
[ "$stopping" = 1 ] || echo "$PROG: $(date '+%F %T') ray start exited with status $rc on $host" >&2
exit "$rc"
