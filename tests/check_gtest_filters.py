"""Every test of a GoogleTest binary is selected by one of the --gtest_filter patterns its CTests
run it with (tests/CMakeLists.txt, dynamix_add_mpi_run): a suite added to a shared binary without a
run of its own would otherwise never run.

Usage: check_gtest_filters.py FILTER [FILTER ...] -- COMMAND [ARG ...]
COMMAND (the binary, under mpirun if it needs one) is run with --gtest_list_tests."""
import fnmatch
import subprocess
import sys


def listed_tests(cmd):
    """Suite.Test names that `cmd --gtest_list_tests` prints (parameters' comments left out)."""
    out = subprocess.run(cmd + ["--gtest_list_tests"], capture_output=True, text=True, check=True).stdout
    names, suite = [], None
    for line in out.splitlines():
        name = line.split("#")[0].rstrip()
        if not name:
            continue
        if not line.startswith(" "):
            suite = name
        elif suite:
            names.append(suite + name.strip())
    return names


def selected(name, gtest_filter):
    """GoogleTest's rule: positive patterns before '-', negative ones after, ':' between patterns."""
    positive, _, negative = gtest_filter.partition("-")
    match = lambda patterns: any(fnmatch.fnmatchcase(name, p) for p in patterns.split(":") if p)  # noqa: E731
    return match(positive or "*") and not match(negative)


def main():
    if "--" not in sys.argv[1:]:
        sys.exit(__doc__)
    split = sys.argv.index("--")
    filters, cmd = sys.argv[1:split], sys.argv[split + 1:]
    names = listed_tests(cmd)
    missed = [n for n in names if not any(selected(n, f) for f in filters)]
    if not names or missed:
        print(f"{len(missed)} of {len(names)} tests are in no run's filter {filters}:\n  " + "\n  ".join(missed))
        sys.exit(1)
    print(f"all {len(names)} tests are run by one of the filters {filters}")


if __name__ == "__main__":
    main()
