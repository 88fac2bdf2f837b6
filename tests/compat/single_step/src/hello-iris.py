"""Stand-in for the example's script: reads the iris file it is given and says what it found."""
import argparse
import csv

parser = argparse.ArgumentParser()
parser.add_argument("--iris-file")
args = parser.parse_args()
with open(args.iris_file, newline="") as handle:
    rows = list(csv.DictReader(handle))
print(f"iris rows: {len(rows)}")
