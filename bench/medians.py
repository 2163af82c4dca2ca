"""Reads lines `round R NAME ... VALUE` (the bench scripts' output) and
prints each NAME's median and spread over its rounds, then the ratio of
the medians of each `NUM/DEN` pair given as an argument after the file.

    python3 bench/medians.py FILE UNIT [NUM/DEN ...]
"""
import collections
import statistics
import sys

path, unit, pairs = sys.argv[1], sys.argv[2], sys.argv[3:]
runs = collections.defaultdict(list)
for line in open(path):
    w = line.split()
    runs[w[2]].append(float(w[-1]))
for k, v in runs.items():
    print(f"median {k} {statistics.median(v):.0f} {unit} (spread {min(v):.0f}..{max(v):.0f}, {len(v)} rounds)")
for pair in pairs:
    num, den = pair.split("/")
    print(f"ratio {num} / {den}: {statistics.median(runs[num]) / statistics.median(runs[den]):.3f}")
