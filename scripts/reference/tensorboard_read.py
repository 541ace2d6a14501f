"""Reads a TensorBoard log directory with TensorBoard's own reader and prints its scalars as JSON:
{"tag": [[step, value, wall_time], ...], ...}. The test `apps: report: TensorBoard reads the run's event
file ...` compares them with metrics.jsonl and eval.jsonl.
  python3 scripts/reference/tensorboard_read.py RUN/tensorboard
"""
import json
import sys

from tensorboard.backend.event_processing import event_accumulator


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: tensorboard_read.py LOGDIR")
    # size_guidance 0 keeps every event (the default samples scalars down to 10,000 per tag).
    acc = event_accumulator.EventAccumulator(sys.argv[1], size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    out = {tag: [[e.step, e.value, e.wall_time] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
