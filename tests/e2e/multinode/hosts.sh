# SPDX-License-Identifier: MIT
# hosts.sh -- two test hosts made of namespaces (sourced by multinode.sh,
# which already runs in network, mount and UTS namespaces of its own, so
# that nothing here is seen outside the test).
#
# host0 is the test's own namespaces; host1 is a process holding new
# network, UTS and mount namespaces, entered with nsenter.  Two veth pairs
# join them: the training link (t0 10.77.0.1 -- t1 10.77.0.2, gloo and the
# rendezvous) and the daemon link (d0 10.78.0.1 -- d1 10.78.0.2), so that
# host1 can be cut off from the daemon while it trains on.
H1=${H1:-}

# on_host1 CMD...: runs CMD on host1, in the working directory, with the
# environment as it is (as srun or pdsh carries it).
on_host1() {
    nsenter -t "$H1" --net --uts --mount --wd="$PWD" -- "$@"
}

hosts_up() {
    local i
    ip link set lo up || return 1
    hostname host0 || return 1
    # the hosts' names resolve (torch's rendezvous looks its own up); the
    # file is bound in this mount namespace, which host1 copies
    hosts=$(mktemp "${TMPDIR:-/tmp}/tp-hosts.XXXXXX") || return 1
    printf '127.0.0.1 localhost\n10.77.0.1 host0\n10.77.0.2 host1\n' >"$hosts"
    chmod 644 "$hosts" && mount --bind "$hosts" /etc/hosts || return 1
    rm -f "$hosts"
    unshare --net --uts --mount --propagation private sleep 100000 &
    H1=$!
    for i in $(seq 1 100); do # until it has its own network namespace
        [ "$(readlink /proc/$H1/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break
        sleep 0.05
    done
    [ "$(readlink /proc/$H1/ns/net)" != "$(readlink /proc/self/ns/net)" ] || return 1
    nsenter -t "$H1" --uts hostname host1 || return 1
    ip link add t0 type veth peer name t1 &&
        ip link set t1 netns "$H1" &&
        ip link add d0 type veth peer name d1 &&
        ip link set d1 netns "$H1" &&
        ip addr add 10.77.0.1/24 dev t0 && ip link set t0 up &&
        ip addr add 10.78.0.1/24 dev d0 && ip link set d0 up || return 1
    nsenter -t "$H1" --net -- sh -c '
        ip link set lo up &&
        ip addr add 10.77.0.2/24 dev t1 && ip link set t1 up &&
        ip addr add 10.78.0.2/24 dev d1 && ip link set d1 up' || return 1
    for i in $(seq 1 100); do # until both pairs carry (both ends up)
        ip link show t0 | grep -q LOWER_UP && ip link show d0 | grep -q LOWER_UP && return 0
        sleep 0.05
    done
    return 1
}

# hosts_down ends every process left on either host (a launcher that
# outlived a failed check holds the test's output open, and ctest would
# wait for it) and host1 itself.
hosts_down() {
    local p ns0 ns1=
    ns0=$(readlink /proc/self/ns/net)
    [ -n "$H1" ] && ns1=$(readlink "/proc/$H1/ns/net")
    for p in /proc/[0-9]*; do
        case ${p#/proc/} in "$$" | "$BASHPID" | "$H1") continue ;; esac
        case $(readlink "$p/ns/net" 2>/dev/null) in
        "$ns0" | "$ns1") kill -KILL "${p#/proc/}" 2>/dev/null ;;
        esac
    done
    [ -n "$H1" ] && kill "$H1" 2>/dev/null
    wait "$H1" 2>/dev/null
    H1=
}
