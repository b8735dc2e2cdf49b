"""The watchdog's network options through the real CLI (issue #19, item 5): `mpirun -np 2 dynamix
train` with the channel on a named interface over IPv6 (comm.watchdog_interface: lo,
comm.watchdog_family: ipv6), the environment's DYNAMIX_SOCKET_IFNAME / DYNAMIX_SOCKET_FAMILY
overriding the config, and clear errors for an interface that does not exist and a bad family.
Skips (exit 77) when the loopback interface has no IPv6 address."""
import os
import subprocess
import sys

from e2e_util import DYNAMIX, TINY_CNN, TempDir, check_outputs, expect_error, fail, mpirun, run, train_cmd, write

CONFIG = TINY_CNN + "monitor: {enabled: false}\n"
SKIP = 77


def train(d, name, sets, env=None):
    out = d / name
    cfg = write(d / f"{name}.yaml", CONFIG.replace("OUT", str(out)))
    return out, train_cmd(2, cfg, sets), dict(os.environ, **(env or {}))


def joined_at(d, name, sets, env, endpoint):
    """Runs to the end; rank 0's log must say the ranks joined it at `endpoint`."""
    out, cmd, full_env = train(d, name, sets, env)
    r = run(cmd, timeout=300, env=full_env)
    if r.returncode != 0:
        fail(f"{name}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    said = [line for line in r.stdout.splitlines() if line.startswith("watchdog: ")]
    if not said or endpoint not in said[0]:
        fail(f"{name}: expected the ranks to join rank 0 at {endpoint}, log says {said}\n{r.stdout}")
    check_outputs(out)
    print(f"ok: {name}: {said[0]}")


def main():
    lo6 = subprocess.run(["ip", "-6", "addr", "show", "lo"], capture_output=True, text=True)
    if "inet6 ::1" not in lo6.stdout:
        print(f"SKIP: the loopback interface has no IPv6 address (ip -6 addr show lo: {lo6.stdout!r} "
              f"{lo6.stderr!r})")
        sys.exit(SKIP)
    with TempDir() as d:
        joined_at(d, "lo_ipv6", ["comm.watchdog_interface=lo", "comm.watchdog_family=ipv6"], {}, "[::1]:")
        # The environment wins over the config.
        joined_at(d, "env_ipv4", ["comm.watchdog_interface=lo", "comm.watchdog_family=ipv6"],
                  {"DYNAMIX_SOCKET_IFNAME": "lo", "DYNAMIX_SOCKET_FAMILY": "ipv4"}, "127.0.0.1:")
        _, cmd, env = train(d, "bad_interface", ["comm.watchdog_interface=nosuch0"])
        expect_error(cmd, "comm.watchdog_interface: no network interface 'nosuch0'", "unknown interface", env)
        down = [line.split(":")[1].strip().split("@")[0] for line in
                subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout.splitlines()
                if "state DOWN" in line]
        if down:
            _, cmd, env = train(d, "down_interface", [f"comm.watchdog_interface={down[0]}"])
            expect_error(cmd, f"comm.watchdog_interface: interface '{down[0]}'", "interface down", env)
        else:
            print("note: no interface is down here; the 'interface down' case is not run")
        _, cmd, env = train(d, "bad_env_interface", [], {"DYNAMIX_SOCKET_IFNAME": "nosuch1"})
        expect_error(cmd, "DYNAMIX_SOCKET_IFNAME: no network interface 'nosuch1'", "unknown interface (env)", env)
        # Only rank 1's node lacks the interface (MPMD: its own environment): every rank names it.
        _, cmd, env = train(d, "rank1_interface", [])
        args = cmd[cmd.index(DYNAMIX):]
        cmd = mpirun(1) + args + [":", "-np", "1", "-x", "DYNAMIX_SOCKET_IFNAME=nosuch2"] + args
        expect_error(cmd, "rank 1: DYNAMIX_SOCKET_IFNAME: no network interface 'nosuch2'", "one rank's interface", env)
        _, cmd, env = train(d, "bad_env_family", [], {"DYNAMIX_SOCKET_FAMILY": "ipv5"})
        expect_error(cmd, "'DYNAMIX_SOCKET_FAMILY' must be one of auto|ipv4|ipv6, got 'ipv5'", "bad family (env)", env)
    print("watchdog network e2e: passed")


if __name__ == "__main__":
    main()
