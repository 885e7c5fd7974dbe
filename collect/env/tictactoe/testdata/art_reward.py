"""Writes art_reward.json: OpenPipe ART's tic-tac-toe reward per result.

Run from this folder: /usr/bin/python3 art_reward.py

The formula restates examples/tic_tac_toe/rollout.py of ART (commit 779559fd
of github.com/OpenPipe/ART): win 1, draw 0.5, loss 0; an invalid move ends
the game with -100 + log(move_number + 1) / log(100), move_number being the
agent's valid moves before it; a game not finished keeps the initial 0. Go's
tictactoe.ARTReward must match within 1e-12.
"""

import json
import math


def art_reward(result, moves):
    if result == "illegal":
        return -100 + math.log(moves + 1) / math.log(100)
    return {"win": 1.0, "draw": 0.5, "loss": 0.0}.get(result, 0.0)


CASES = [("win", 3), ("draw", 5), ("loss", 4), ("", 2)] + [("illegal", m) for m in range(6)]

if __name__ == "__main__":
    out = [{"result": r, "moves": m, "reward": art_reward(r, m)} for r, m in CASES]
    with open("art_reward.json", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
