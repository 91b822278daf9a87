#!/usr/bin/env bash
# Run one Ray node (head or worker) in the foreground and stop it, with every process it started, on exit.
#
# slurm/olb_grid.sbatch starts this once per node with `srun`; it also works without Slurm (the tests start a
# two-node cluster on loopback with it):
#
#   slurm/ray_node.sh head   --port-base 23000 --node-ip 127.0.0.1 --num-cpus 1 --temp-dir /tmp/olbray-x
#   slurm/ray_node.sh worker --port-base 23400 --head 127.0.0.1:23000 --num-cpus 1 --temp-dir /tmp/olbray-x
#
# Ports (all on this node) are laid out from --port-base (see port_layout below), so two jobs that share a node
# need port bases at least OLB_RAY_PORT_BLOCK (400) apart. `ray start --block` runs in its own session (setsid):
# every Ray process of this node has that session id, and the session leader's PID is written to --pid-file.
# On SIGTERM/SIGINT/SIGHUP/SIGUSR1 or when Ray exits, the node is stopped: SIGTERM to `ray start` (which stops its
# processes), then SIGKILL to whatever still has the session id. Nothing is matched by name.
set -uo pipefail

PROG="ray_node.sh"
die() { echo "$PROG: error: $*" >&2; exit 2; }

role="${1:-}"
case "$role" in
  head|worker) shift ;;
  -h|--help|"") sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; [ -n "$role" ] && exit 0; exit 2 ;;
  *) die "first argument must be 'head' or 'worker', got '$role'" ;;
esac

port_base="" node_ip="" num_cpus="" temp_dir="" head_addr="" pid_file="" python="${OLB_PYTHON:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --port-base) port_base="$2"; shift 2 ;;
    --node-ip) node_ip="$2"; shift 2 ;;
    --num-cpus) num_cpus="$2"; shift 2 ;;
    --temp-dir) temp_dir="$2"; shift 2 ;;
    --head) head_addr="$2"; shift 2 ;;
    --pid-file) pid_file="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
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
[ -n "$temp_dir" ] || die "--temp-dir is required"
case "$temp_dir" in /*) ;; *) die "--temp-dir must be an absolute path, got '$temp_dir'" ;; esac
# Ray puts Unix sockets at <temp-dir>/session_<date>_<pid>/sockets/plasma_store; Linux caps socket paths at 107 bytes.
[ "${#temp_dir}" -le 48 ] || die "--temp-dir '$temp_dir' is longer than 48 characters; Ray's socket paths would exceed the Unix limit"
[ "$role" = head ] || [ -n "$head_addr" ] || die "a worker needs --head IP:PORT"
[ -n "$python" ] || python="$(command -v python3 || true)"
[ -x "$python" ] || die "python '$python' is not executable (set OLB_PYTHON or pass --python)"
ray_bin="$(dirname "$python")/ray"
if [ -x "$ray_bin" ]; then ray_cmd=("$ray_bin"); else ray_cmd=("$python" -m ray.scripts.scripts); fi

# Port layout (offsets from the base): 0 GCS (head only), 1 spare, 2 dashboard (head only), 3 node manager,
# 4 object manager, 5 dashboard agent gRPC, 6 dashboard agent HTTP, 7 metrics export, 8 runtime-env agent,
# 50..399 worker processes.
p() { echo $((port_base + $1)); }
port_is_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for off in 3 4 5 6 7 8; do
  port_is_free "$(p $off)" || die "port $(p $off) on $host is already in use; pick another OLB_RAY_PORT_BASE"
done
if [ "$role" = head ]; then
  for off in 0 1 2; do
    port_is_free "$(p $off)" || die "port $(p $off) on $host is already in use; pick another OLB_RAY_PORT_BASE"
  done
fi

export RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE="${RAY_AUTH_MODE:-disabled}"
# Stop at once on SIGTERM instead of draining for 30 s (Slurm gives a job little time after its signal).
export RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="${RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S:-0}"
unset RAY_ADDRESS

args=(start --block --disable-usage-stats --temp-dir="$temp_dir" --num-cpus="$num_cpus"
      --node-manager-port="$(p 3)" --object-manager-port="$(p 4)"
      --dashboard-agent-grpc-port="$(p 5)" --dashboard-agent-listen-port="$(p 6)"
      --metrics-export-port="$(p 7)" --runtime-env-agent-port="$(p 8)"
      --min-worker-port="$(p 50)" --max-worker-port="$(p 399)")
[ -n "$node_ip" ] && args+=(--node-ip-address="$node_ip")
if [ "$role" = head ]; then
  args+=(--head --port="$(p 0)" --include-dashboard=false
         --dashboard-port="$(p 2)")
else
  args+=(--address="$head_addr")
fi

created_temp=0
if [ ! -e "$temp_dir" ]; then
  mkdir -p "$temp_dir" || die "cannot create --temp-dir '$temp_dir'"
  created_temp=1
fi
echo "$PROG: $(date '+%F %T') starting Ray $role on $host: ${num_cpus} CPUs, ports $(p 0)..$(p 399), temp dir $temp_dir"

ray_pid=""
stopping=0
session_pids() {  # PIDs whose session id is $1 (field 6 of /proc/PID/stat, after the parenthesised command)
  local sid="$1" f rest
  for f in /proc/[0-9]*/stat; do
    rest="$(cat "$f" 2>/dev/null)" || continue
    rest="${rest##*) }"
    set -- $rest
    [ "${4:-}" = "$sid" ] && { f="${f#/proc/}"; echo "${f%/stat}"; }
  done
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
  if [ "$created_temp" = 1 ] && [ "${OLB_KEEP_RAY_TMP:-0}" != 1 ] && [ -d "$temp_dir" ]; then
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
wait "$ray_pid"
rc=$?
[ "$stopping" = 1 ] || echo "$PROG: $(date '+%F %T') ray start exited with status $rc on $host" >&2
exit "$rc"
