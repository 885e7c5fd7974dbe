"""Record your own agent's episodes with `hone-collect proxy`.

Point your OpenAI client at the proxy, send each episode's ids as headers,
and post its reward when it ends:

    import hone_proxy
    from openai import OpenAI

    PROXY = "http://127.0.0.1:8100/v1"
    client = OpenAI(base_url=PROXY, api_key="none")
    t = hone_proxy.Trajectory(group="scenario-17", base_url=PROXY)  # or set $OPENAI_BASE_URL
    client.chat.completions.create(model="myrun", messages=msgs, extra_headers=t.headers)
    t.reward(1.0, metrics={"turns": 3})

One file, standard library only (Python 3.9+, for asyncio.to_thread): copy it next to your agent or
put this folder on PYTHONPATH. The protocol is in docs/proxy.md.
"""

import asyncio
import json
import math
import os
import re
import urllib.error
import urllib.parse
import urllib.request
import uuid

__all__ = ["Trajectory", "close_group", "aclose_group", "proxy_url", "HoneProxyError"]

TRAJECTORY_HEADER = "X-Hone-Trajectory"
GROUP_HEADER = "X-Hone-Group"

# An id travels in a header and in a URL path: printable ASCII, no space, no "/".
_ID = re.compile(r"[!-.0-~]+")


class HoneProxyError(Exception):
    """The proxy refused a call, or could not be reached."""


def proxy_url(base_url=None):
    """The proxy's root URL: base_url (default $OPENAI_BASE_URL), the URL
    your OpenAI client uses, without its trailing /v1."""
    url = base_url or os.environ.get("OPENAI_BASE_URL", "")
    if not url:
        raise HoneProxyError("no proxy URL: pass base_url='http://127.0.0.1:8100/v1' or set OPENAI_BASE_URL")
    url = url.rstrip("/")
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
    return url


def _check_id(what, value):
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise ValueError("%s id %r: use printable ASCII without spaces or '/'" % (what, value))
    return value


def _post(url, body, timeout):
    data = json.dumps(body, allow_nan=False).encode() if body is not None else b""
    req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            resp.read()
    except urllib.error.HTTPError as e:
        raw = e.read().decode("utf-8", "replace")
        try:
            msg = json.loads(raw)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            msg = raw.strip() or e.reason
        raise HoneProxyError("POST %s: HTTP %d: %s" % (url, e.code, msg)) from None
    except OSError as e:  # URLError, timeouts, refused connections
        raise HoneProxyError("POST %s: %s (is hone-collect proxy running there?)" % (url, e)) from None


class Trajectory:
    """One episode as the proxy records it.

    id      the trajectory id (default: a random one); unique in the run.
    group   the group id (default: the trajectory's own): the attempts at
            one scenario that GRPO compares share it. A group id is used
            once per proxy run: after the group is written, more requests
            with it are refused (409).
    headers the dict to pass as the openai client's default_headers (a
            client per episode) or extra_headers (on every call).
    """

    def __init__(self, group=None, id=None, base_url=None, timeout=30.0):
        self.id = _check_id("trajectory", id if id is not None else uuid.uuid4().hex)
        self.group = _check_id("group", group if group is not None else self.id)
        self.headers = {TRAJECTORY_HEADER: self.id, GROUP_HEADER: self.group}
        self._root = proxy_url(base_url)
        self._timeout = timeout

    def reward(self, reward, metrics=None, error=None, metadata=None):
        """Sets the reward (a finite number, not a str or bool, or None for
        none) and metrics ({name: number or bool, bool sent as 1 or 0}; a
        None one is left out of the row) and closes the
        trajectory: later requests with its headers are forwarded but not
        recorded. error marks the episode as failed (hone-train skips it).
        metadata ({name: str, number or bool}, a None one left out; names
        beginning "hone." are Hone's, refused by the proxy) is the
        trajectory's own, as ART's Trajectory(metadata=...).
        The trajectory must have made at least one chat request through the
        proxy; a second reward for it is refused (HTTP 409) and the first
        stands."""
        body = {"reward": _number("reward", reward) if reward is not None else None}
        if metrics:
            body["metrics"] = {str(k): _metric("metric " + str(k), v) for k, v in metrics.items()}
        if metadata:
            body["metadata"] = _metadata("trajectory", metadata)
        if error:
            body["error"] = str(error)
        _post("%s/hone/trajectories/%s/reward" % (self._root, urllib.parse.quote(self.id, safe="")), body, self._timeout)

    async def areward(self, reward, metrics=None, error=None, metadata=None):
        """reward() for asyncio code: the POST runs in a worker thread."""
        await asyncio.to_thread(self.reward, reward, metrics, error, metadata)

    def close_group(self, metadata=None, metrics=None):
        """Writes this trajectory's group now (see close_group)."""
        close_group(self.group, base_url=self._root, timeout=self._timeout, metadata=metadata, metrics=metrics)

    async def aclose_group(self, metadata=None, metrics=None):
        """close_group() for asyncio code."""
        await asyncio.to_thread(self.close_group, metadata, metrics)


def _number(what, v, allow_bool=False):
    # What the proxy refuses is refused here, before the request that
    # would close the trajectory only to be refused: float() alone would
    # send the string "0.5" as 0.5, which the proxy refuses when posted
    # as a string. A boolean is refused as a reward (ART's reward is a
    # float) and sent as 1 or 0 for a metric (ART's metrics name bool),
    # as the proxy reads them. Other numbers (int, Decimal, numpy's) go
    # through float(), which the JSON encoder needs.
    if isinstance(v, (str, bytes, bytearray)) or (isinstance(v, bool) and not allow_bool):
        raise ValueError("%s is %.80r: want a number" % (what, v))
    try:
        f = float(v)
    except OverflowError:
        raise ValueError("%s is %.80r: want a number within a float's range" % (what, v)) from None
    except (TypeError, ValueError):
        raise ValueError("%s is %.80r: want a number" % (what, v)) from None
    if not math.isfinite(f):
        raise ValueError("%s is %r: want a finite number" % (what, v))
    return f


def _metadata(whose, metadata):
    # The proxy keeps strings, numbers and booleans (as their JSON text)
    # and leaves None out; anything else is refused here, before a request.
    for k, v in metadata.items():
        if v is not None and not isinstance(v, (str, int, float, bool)):
            raise ValueError("%s metadata %r: %r is not a string, number or boolean" % (whose, k, v))
        # json.dumps(allow_nan=False) would refuse a NaN or infinity
        # without naming its key: JSON has no such number.
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError("%s metadata %r is %r: want a finite number (JSON has no NaN or Infinity)" % (whose, k, v))
    return {str(k): v for k, v in metadata.items()}


def _metric(what, v):
    # None ("does not apply") is sent as null, which the proxy leaves out
    # of the row, as the stdio environment does.
    return None if v is None else _number(what, v, allow_bool=True)


def close_group(group, base_url=None, timeout=30.0, metadata=None, metrics=None):
    """Writes group's trajectories as one Parquet file; those without a
    reward are written with the error "not closed". Not needed when the
    proxy runs with --group-size N: a group is written once N of its
    trajectories have a reward. metadata ({name: str, number or bool}) and
    metrics ({name: number}, a None one left out) are the group's own
    fields, as ART's TrajectoryGroup(metadata=..., metrics=...)."""
    root = proxy_url(base_url)
    body = None
    if metadata or metrics:
        body = {}
        if metadata:
            body["metadata"] = _metadata("group", metadata)
        if metrics:
            body["metrics"] = {str(k): _metric("group metric " + str(k), v) for k, v in metrics.items()}
    _post("%s/hone/groups/%s/close" % (root, urllib.parse.quote(_check_id("group", group), safe="")), body, timeout)


async def aclose_group(group, base_url=None, timeout=30.0, metadata=None, metrics=None):
    """close_group() for asyncio code."""
    await asyncio.to_thread(close_group, group, base_url, timeout, metadata, metrics)
