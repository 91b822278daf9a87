# Shared by the recipes in jobs/ (source it, then call olb_recipe). A recipe names one experiment
# (conf/experiment/NAME.yaml); everything else is `python -m olb.grid`'s configuration, not repeated here.
#
#   RECIPE [local] [GRID OVERRIDES ...]                    this machine: a local Ray on every core
#   RECIPE ray [GRID OVERRIDES ...]                        `ray job submit` to a running Ray cluster whose
#                                                          dashboard is at $RAY_JOB_ADDRESS (http://HEAD:8265),
#                                                          with its token file $RAY_AUTH_TOKEN_PATH
#   RECIPE slurm [SBATCH OPTIONS ...] [--] [GRID OVERRIDES ...]   `sbatch slurm/olb_grid.sbatch` (docs/cluster.md)
#
# OLB_PYTHON picks the python (default: .venv/bin/python of this checkout). Grid overrides are key=value
# (e.g. seeds=2 datasets=[emotions] tracking.uri=...); see docs/grid.md. A recipe may set the array
# recipe_overrides before calling olb_recipe: they come after +experiment=NAME, before the user's own.

OLB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

olb_recipe() {
  local experiment="$1" recipe="$2"
  shift 2
  local mode=local
  case "${1:-}" in
    local|ray|slurm) mode="$1"; shift ;;
    -h|--help)
      awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$recipe"
      echo "Modes (jobs/_lib.sh):"
      sed -n '4,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}/  /'
      return 0 ;;
  esac
  local py="${OLB_PYTHON:-$OLB_ROOT/.venv/bin/python}"
  local own=(${recipe_overrides[@]+"${recipe_overrides[@]}"})
  local grid=(-m olb.grid "+experiment=$experiment" ${own[@]+"${own[@]}"})
  case "$mode" in
    local)
      [ -x "$py" ] || { echo "$(basename "$recipe"): no python at $py (make setup, or set OLB_PYTHON)" >&2; return 2; }
      echo "+ $py ${grid[*]} $*" >&2
      "$py" "${grid[@]}" "$@" ;;
    ray)
      local address="${RAY_JOB_ADDRESS:-}"
      if [ -z "$address" ]; then
        echo "$(basename "$recipe") ray: set RAY_JOB_ADDRESS to the cluster's dashboard, e.g. http://HEAD:8265" >&2
        return 2
      fi
      # Token authentication (docs/cluster.md): the cluster's token file, never the token on a command line.
      export RAY_AUTH_MODE="${RAY_AUTH_MODE:-token}"
      if [ "$RAY_AUTH_MODE" = token ] && [ -z "${RAY_AUTH_TOKEN_PATH:-}" ] && [ ! -s "$HOME/.ray/auth_token" ]; then
        echo "$(basename "$recipe") ray: set RAY_AUTH_TOKEN_PATH to the cluster's token file" >&2
        return 2
      fi
      local ray_bin="${RAY_BIN:-$(dirname "$py")/ray}"
      [ -x "$ray_bin" ] || ray_bin="$(command -v ray || true)"
      [ -n "$ray_bin" ] || { echo "$(basename "$recipe") ray: no ray command found (set RAY_BIN)" >&2; return 2; }
      # The driver runs on the head node, in this directory (the same path there: shared file system or the
      # same machine), against the cluster it runs on.
      local entry
      entry="cd $(printf '%q' "$PWD") && exec $(printf '%q ' "$py" "${grid[@]}" backend.address=auto "$@")"
      echo "+ $ray_bin job submit --address $address -- bash -c \"$entry\"" >&2
      "$ray_bin" job submit --address "$address" -- bash -c "$entry" ;;
    slurm)
      local sbatch_opts=()
      while [ $# -gt 0 ] && [[ "$1" == -* ]]; do
        [ "$1" = "--" ] && { shift; break; }
        sbatch_opts+=("$1"); shift
      done
      echo "+ sbatch ${sbatch_opts[*]} $OLB_ROOT/slurm/olb_grid.sbatch ${grid[*]:2} $*" >&2
      sbatch "${sbatch_opts[@]}" "$OLB_ROOT/slurm/olb_grid.sbatch" "${grid[@]:2}" "$@" ;;
  esac
}
