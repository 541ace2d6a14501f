#!/usr/bin/env python3
"""Writes train.jsonl and test.jsonl beside this file: GSM8K-format rows ({"question", "answer":
"reasoning with <<a*b=c>> annotations #### N"}) made from a few word-problem patterns with a fixed seed.
They are not GSM8K: they let configs/gsm8k-chat.yaml run anywhere (CI runs it); for a real run point
task.train_file / task.test_file at GSM8K's own JSONL (openai/gsm8k, main split), which has the same fields.

usage: python3 examples/gsm8k/make_sample.py
"""
import json
import os
import random

NAMES = ["Ava", "Ben", "Chloe", "Dev", "Emma", "Farid", "Grace", "Hugo"]
THINGS = ["apples", "stickers", "marbles", "books", "pencils", "cookies"]


def problem(rng):
    name, thing = rng.choice(NAMES), rng.choice(THINGS)
    kind = rng.randrange(3)
    if kind == 0:
        boxes, per, eaten = rng.randint(2, 9), rng.randint(2, 9), rng.randint(1, 5)
        total = boxes * per
        q = f"{name} has {boxes} boxes with {per} {thing} in each box. {name} gives away {eaten} {thing}. How many {thing} are left?"
        a = (f"{name} has {boxes}*{per} = <<{boxes}*{per}={total}>>{total} {thing}.\n"
             f"After giving away {eaten}, {total}-{eaten} = <<{total}-{eaten}={total - eaten}>>{total - eaten} are left.\n"
             f"#### {total - eaten}")
    elif kind == 1:
        price, count, paid = rng.randint(2, 9), rng.randint(2, 6), 0
        cost = price * count
        paid = (cost // 10 + 1) * 10
        q = f"{name} buys {count} {thing} at ${price} each and pays with ${paid}. How much change does {name} get?"
        a = (f"The {thing} cost {count}*{price} = <<{count}*{price}={cost}>>{cost} dollars.\n"
             f"The change is {paid}-{cost} = <<{paid}-{cost}={paid - cost}>>{paid - cost} dollars.\n"
             f"#### {paid - cost}")
    else:
        start, more, days = rng.randint(3, 20), rng.randint(2, 6), rng.randint(2, 5)
        total = start + more * days
        q = f"{name} has {start} {thing} and gets {more} more every day for {days} days. How many {thing} does {name} have then?"
        a = (f"{name} gets {more}*{days} = <<{more}*{days}={more * days}>>{more * days} more.\n"
             f"{start}+{more * days} = <<{start}+{more * days}={total}>>{total}\n"
             f"#### {total}")
    return {"question": q, "answer": a}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    rng = random.Random(2508)
    for name, count in (("train.jsonl", 16), ("test.jsonl", 8)):
        with open(os.path.join(here, name), "w") as f:
            for _ in range(count):
                f.write(json.dumps(problem(rng)) + "\n")


if __name__ == "__main__":
    main()
