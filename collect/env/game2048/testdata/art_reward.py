"""Writes art_reward.json: OpenPipe ART's 2048 reward on known boards.

Run from this folder: /usr/bin/python3 art_reward.py

The formula restates the end-of-game branch of ART's examples/2048/rollout.py
(commit 779559fd of github.com/OpenPipe/ART), with its WINNING_VALUE
(examples/2048/utils.py, 128 there) as `target`: a win scores 2; otherwise
the largest tile and the sum of the tiles, each scaled on a log2 scale, the
sum weighted 0.2. Go's game2048.ARTReward must match within 1e-12.
"""

import json
import math


def art_reward(board, target):
    max_value = max(board)
    board_value = sum(board)
    if max_value >= target:
        return 2.0
    max_term = (math.log(max_value, 2) - 1) / (math.log(target, 2) - 1)
    sum_term = (math.log(board_value, 2) - 1) / (math.log(target * 16, 2) - 1)
    return max_term + 0.2 * sum_term


CASES = [
    ([2] + [0] * 15, 128),  # the smallest board: both terms 0
    ([2, 2] + [0] * 14, 128),
    ([64, 32, 16, 8, 4, 2, 2, 4, 8, 16, 32, 2, 4, 2, 0, 0], 128),
    ([2, 4] * 8, 128),  # a full board that lost early
    ([128, 2] + [0] * 14, 128),  # the target reached: 2
    ([256, 64] + [0] * 14, 128),
    ([32, 32, 16, 8] + [4] * 12, 64),
    ([8, 0, 0, 0] * 4, 16),
]

if __name__ == "__main__":
    out = [{"board": b, "target": t, "reward": art_reward(b, t)} for b, t in CASES]
    with open("art_reward.json", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
