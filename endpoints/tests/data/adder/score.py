"""A scoring script for tests: adds the numbers it is sent (plus an offset from the environment)."""
import json
import os


def init():
    global offset
    offset = int(os.environ.get("OFFSET", "0"))


def run(raw_data):
    numbers = json.loads(raw_data)["numbers"]
    return {"sum": sum(numbers) + offset, "deployment": os.environ.get("DEPLOYMENT_NAME", "")}
