#!/usr/bin/env python3
"""ctest logs on stdin -> CTestCostData.txt on stdout, so a fresh build directory runs the longest
tests first (ctest -j starts tests in decreasing cost). A test's cost is its longest time in the
logs; the format is ctest's own: `name runs cost` lines, then `---` and no failed tests."""
import re
import sys

LINE = re.compile(r"Test +#\d+: (\S+) \.+.*?(\d+\.\d+) sec")


def main():
    costs = {}
    for line in sys.stdin:
        match = LINE.search(line)
        if match:
            name, seconds = match.group(1), float(match.group(2))
            costs[name] = max(seconds, costs.get(name, 0.0))
    for name, seconds in sorted(costs.items()):
        print(f"{name} 1 {seconds}")
    print("---")
    return 0


if __name__ == "__main__":
    sys.exit(main())
