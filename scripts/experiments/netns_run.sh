#!/usr/bin/env bash
# Real network heterogeneity on one machine: every rank in its own network namespace, joined to a
# bridge by a veth pair, with a `tc tbf` rate cap on the capped ranks' links; Open MPI over TCP
# between the namespaces, so the allreduce crosses real (rate-limited) links and the network
# probes see real traffic and real queueing.
#
# Usage: scripts/experiments/netns_run.sh [options] -- COMMAND [ARGS...]
#   -n, --ranks N          ranks (default: the number of --caps entries, else 2)
#   --caps R0,R1,...       per-rank cap in Mbit/s, 0 = uncapped (default: all 0); one entry per rank
#   --egress-only          cap only what a rank sends (default: both directions, the rank's
#                          download through the bridge-side veth's egress)
#   --burst-ms MS          tbf bucket: MS milliseconds at the rate (default 10, at least 32 KiB)
#   --latency-ms MS        tbf queue: at most MS of backlog before drops (default 50)
#   --prefix P             names: namespaces P0.., veths Pv0.., bridge Pbr (default dmx)
#   --subnet A.B.C         the ranks' /24: ranks A.B.C.1.., the bridge A.B.C.254 (default 10.77.0)
#   --mpirun-arg ARG       one more argument for mpirun (repeatable)
#   --dry-run              print the mpirun line and exit, creating nothing
# Example:
#   scripts/experiments/netns_run.sh --caps 0,0,0,100 -- build/bin/dynamix train \
#       --config configs/experiments/fm_bandwidth_capped.yaml --set 'hetero.bandwidth_mbps=[0]'
# runs `mpirun -np 1 ip netns exec dmx0 COMMAND : ... : -np 1 ip netns exec dmx3 COMMAND` with
# `--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include SUBNET.0/24` (no shared memory, no
# UCX: MPI traffic crosses the veths). mpirun stays in the root namespace; its PMIx server
# listens on the bridge's address (PMIX_MCA_ptl_tcp_*: by default it takes only loopback, which a
# namespace does not share), the ranks reach it through the bridge. Namespaces, veths and the
# bridge are removed on exit, also on failure and Ctrl-C. Exit status: the command's, 77 when it
# cannot run here (not root, no `ip`/`tc`, or the kernel refuses a namespace, veth, bridge or tbf),
# 2 for bad arguments.
set -u -o pipefail

SKIP=77
ranks=""
caps=""
ingress=1
burst_ms=10
latency_ms=50
prefix=dmx
subnet=10.77.0
dry=0
mpirun_extra=()

die() { echo "netns_run.sh: $*" >&2; exit 2; }
skip() { echo "netns_run.sh: cannot run here: $*" >&2; exit "$SKIP"; }
is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }

while [ $# -gt 0 ]; do
  case "$1" in
    -n|--ranks) [ $# -ge 2 ] || die "$1 needs a value"; ranks="$2"; shift 2 ;;
    --caps) [ $# -ge 2 ] || die "$1 needs a value"; caps="$2"; shift 2 ;;
    --egress-only) ingress=0; shift ;;
    --burst-ms) [ $# -ge 2 ] || die "$1 needs a value"; burst_ms="$2"; shift 2 ;;
    --latency-ms) [ $# -ge 2 ] || die "$1 needs a value"; latency_ms="$2"; shift 2 ;;
    --prefix) [ $# -ge 2 ] || die "$1 needs a value"; prefix="$2"; shift 2 ;;
    --subnet) [ $# -ge 2 ] || die "$1 needs a value"; subnet="$2"; shift 2 ;;
    --mpirun-arg) [ $# -ge 2 ] || die "$1 needs a value"; mpirun_extra+=("$2"); shift 2 ;;
    --dry-run) dry=1; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (the command goes after --; see --help)" ;;
  esac
done
[ $# -gt 0 ] || die "no command: scripts/experiments/netns_run.sh [options] -- COMMAND [ARGS...]"

# Per-rank caps: a comma-separated list of non-negative numbers (Mbit/s), one per rank.
cap_list=()
if [ -n "$caps" ]; then
  IFS=, read -r -a cap_list <<< "$caps"
  for c in "${cap_list[@]}"; do
    [[ "$c" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--caps: '$c' is not a rate in Mbit/s (a number >= 0; 0 = uncapped)"
  done
fi
if [ -z "$ranks" ]; then ranks=${#cap_list[@]}; [ "$ranks" -gt 0 ] || ranks=2; fi
if ! is_uint "$ranks" || [ "$ranks" -lt 1 ] || [ "$ranks" -gt 253 ]; then die "--ranks: '$ranks' is not a count in 1..253"; fi
if [ ${#cap_list[@]} -eq 0 ]; then
  for ((i = 0; i < ranks; i++)); do cap_list+=(0); done
fi
[ ${#cap_list[@]} -eq "$ranks" ] || die "--caps has ${#cap_list[@]} entries for $ranks ranks (one per rank)"
if ! is_uint "$burst_ms" || [ "$burst_ms" -lt 1 ]; then die "--burst-ms: '$burst_ms' is not a positive integer"; fi
if ! is_uint "$latency_ms" || [ "$latency_ms" -lt 1 ]; then die "--latency-ms: '$latency_ms' is not a positive integer"; fi
[[ "$prefix" =~ ^[a-z][a-z0-9]{0,5}$ ]] || die "--prefix: '$prefix' must be 1-6 lower-case letters/digits, starting with a letter"
[[ "$subnet" =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || die "--subnet: '$subnet' is not A.B.C"

bridge="${prefix}br"
ns_of() { echo "${prefix}$1"; }
veth_ns() { echo "${prefix}v$1"; }    # the rank's end, inside its namespace
veth_br() { echo "${prefix}v$1b"; }   # the bridge's end, in the root namespace

# The MPMD line: one app context per rank, each started inside its namespace.
mpi=(mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl "tcp,self"
     --mca btl_tcp_if_include "${subnet}.0/24")
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
mpi+=("${mpirun_extra[@]}")
for ((i = 0; i < ranks; i++)); do
  [ "$i" -gt 0 ] && mpi+=(:)
  mpi+=(-np 1 ip netns exec "$(ns_of "$i")" "$@")
done

if [ "$dry" -eq 1 ]; then
  printf '%q ' "${mpi[@]}"; echo
  exit 0
fi

[ "$(id -u)" -eq 0 ] || skip "network namespaces, veths and tc need root (running as uid $(id -u))"
for tool in ip tc mpirun; do
  command -v "$tool" > /dev/null || skip "'$tool' not found (iproute2 / Open MPI)"
done
taken=()
ip link show "$bridge" > /dev/null 2>&1 && taken+=("bridge $bridge")
for ((i = 0; i < ranks; i++)); do
  [ -e "/run/netns/$(ns_of "$i")" ] && taken+=("namespace $(ns_of "$i")")
  ip link show "$(veth_br "$i")" > /dev/null 2>&1 && taken+=("veth $(veth_br "$i")")
done
if [ ${#taken[@]} -gt 0 ]; then
  die "${taken[*]} already exist(s): another netns_run.sh with --prefix $prefix is running, or one was killed by SIGKILL (remove with: ip link del ${prefix}br; ip netns del ${prefix}0 ...); or use another --prefix and --subnet"
fi

created_ns=()
created_veth=()
created_bridge=0
# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
  local v n
  for v in "${created_veth[@]}"; do ip link del "$v" 2> /dev/null; done
  for n in "${created_ns[@]}"; do ip netns del "$n" 2> /dev/null; done
  [ "$created_bridge" -eq 1 ] && ip link del "$bridge" 2> /dev/null
  created_veth=(); created_ns=(); created_bridge=0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# A step the kernel may refuse (no netns/veth/bridge/tbf support): skip, saying which and why.
need() {
  local what="$1"; shift
  local err
  if ! err=$("$@" 2>&1); then skip "$what failed: $* -> ${err:-no message}"; fi
}

need "creating the bridge" ip link add "$bridge" type bridge
created_bridge=1
need "addressing the bridge" ip addr add "${subnet}.254/24" dev "$bridge"
need "bringing the bridge up" ip link set "$bridge" up

# tbf: rate R Mbit/s; a bucket of burst_ms at that rate (>= 32 KiB, so a 64 KiB GSO segment is
# split rather than dropped); at most latency_ms of queue before tail drops (TCP sees real loss).
tbf_args() {
  local rate="$1"
  local burst
  burst=$(awk -v r="$rate" -v ms="$burst_ms" 'BEGIN { b = r * 1e6 / 8 * ms / 1000; if (b < 32768) b = 32768; printf "%d", b }')
  echo "rate ${rate}mbit burst ${burst} latency ${latency_ms}ms"
}

for ((i = 0; i < ranks; i++)); do
  ns=$(ns_of "$i"); vn=$(veth_ns "$i"); vb=$(veth_br "$i")
  need "creating namespace $ns" ip netns add "$ns"
  created_ns+=("$ns")
  need "creating veth $vn/$vb" ip link add "$vb" type veth peer name "$vn"
  created_veth+=("$vb")
  need "moving $vn into $ns" ip link set "$vn" netns "$ns"
  need "attaching $vb to $bridge" ip link set "$vb" master "$bridge"
  need "bringing $vb up" ip link set "$vb" up
  need "addressing $vn" ip -n "$ns" addr add "${subnet}.$((i + 1))/24" dev "$vn"
  need "bringing $vn up" ip -n "$ns" link set "$vn" up
  need "bringing lo up in $ns" ip -n "$ns" link set lo up
  cap="${cap_list[$i]}"
  if awk -v c="$cap" 'BEGIN { exit !(c > 0) }'; then
    # shellcheck disable=SC2046  # tbf_args is a list of words
    need "tbf on $vn (rank $i's sending side)" ip netns exec "$ns" tc qdisc add dev "$vn" root tbf $(tbf_args "$cap")
    if [ "$ingress" -eq 1 ]; then
      # shellcheck disable=SC2046
      need "tbf on $vb (rank $i's receiving side)" tc qdisc add dev "$vb" root tbf $(tbf_args "$cap")
    fi
    echo "netns_run.sh: rank $i: $ns ${subnet}.$((i + 1)) capped at ${cap} Mbit/s ($(tbf_args "$cap"); $([ "$ingress" -eq 1 ] && echo "both directions" || echo "sending only"))"
  else
    echo "netns_run.sh: rank $i: $ns ${subnet}.$((i + 1)) uncapped"
  fi
done
# Every namespace reaches rank 0's through the bridge before MPI starts (where ping is installed).
if command -v ping > /dev/null; then
  for ((i = 1; i < ranks; i++)); do
    need "ping ${subnet}.1 from $(ns_of "$i")" ip netns exec "$(ns_of "$i")" ping -c 1 -W 2 "${subnet}.1"
  done
fi

# The ranks reach mpirun's PMIx server over TCP, which listens on loopback by default: a
# namespace's loopback is its own, so the server listens on the bridge's address instead.
export PMIX_MCA_ptl_tcp_remote_connections=1
export PMIX_MCA_ptl_tcp_if_include="${subnet}.0/24"
printf 'netns_run.sh: '; printf '%q ' "${mpi[@]}"; echo
# mpirun in the background so that a signal to this script is handled at once: it is passed on
# to mpirun as SIGTERM (a background job ignores SIGINT; Open MPI turns TERM into TERM for the
# ranks), and the namespaces go once mpirun has ended.
"${mpi[@]}" &
mpi_pid=$!
trap 'kill -TERM "$mpi_pid" 2> /dev/null' INT TERM HUP
while :; do
  wait "$mpi_pid"
  status=$?
  kill -0 "$mpi_pid" 2> /dev/null || break
done
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
for ((i = 0; i < ranks; i++)); do
  if awk -v c="${cap_list[$i]}" 'BEGIN { exit !(c > 0) }'; then
    stats=$(ip netns exec "$(ns_of "$i")" tc -s qdisc show dev "$(veth_ns "$i")" |
      awk '/Sent/ { d = $7; sub(",", "", d); print $2 " bytes in " $4 " packets, " d " dropped" }')
    echo "netns_run.sh: rank $i tbf (sending side): sent $stats"
  fi
done
exit "$status"
