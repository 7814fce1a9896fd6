"""The live monitor page of `nandlab monitor --web`: a local web server (standard library only) whose
page polls the latest telemetry state (20 times a second) and draws it.

Why a web page rather than a desktop window: in a lab the board's host is often a machine next to
the bench while people watch from their own desks; a browser is on every machine, needs no GUI
toolkit on the host, works through an SSH tunnel, and several people can watch one run. The page is
web/monitor.html and web/monitor.js (package data) drawing on canvases, with nothing from outside:
it works offline. It reads its configuration (the ring's policy names) from /config.json and the
state from /state.json.

The page shows the summed current normalised to the budget over the last frames with the budget
line and the frames that went over it marked, each die's mean and peak current, the ring (who holds
the key, tokens held and in use per node, who waits) and a status line: frames, missing frames
(dropped on chip / lost on the way), corrupt frames and the link's state.
"""

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources

from nandlab.gateware.power.common import POLICIES

HISTORY = 2000          # frames drawn
DIE_HISTORY = 250       # frames over which each die's mean and peak are shown
UPDATES_PER_S = 20


class LiveState:
    """The recent frames and counters, shared by the receiver thread and the page's event streams."""
    def __init__(self):
        self.lock = threading.Lock()
        self.points = deque(maxlen=HISTORY)
        self.die_points = deque(maxlen=DIE_HISTORY)   # per frame: ((sum, max) per die), cycles
        self.last = None
        self.frames = 0
        self.version = 0
        self.link = "waiting for the link"
        self.stats = None

    def add(self, f):
        cyc = max(f["cycles"], 1)
        pb = f["pb"] or 4096
        p = [f["timestamp"], round(f["total_max"] / pb, 4), round(f["total_sum"] / cyc / pb, 4),
             int(f["violations"] > 0)]
        per_die = (tuple((f[f"die{d}_sum"], f[f"die{d}_max"]) for d in range(f["dies"])), cyc)
        with self.lock:
            self.points.append(p)
            self.die_points.append(per_die)
            self.last = f
            self.frames += 1
            self.version += 1

    def snapshot(self):
        with self.lock:
            f = self.last
            s = self.stats
            out = {"frames": self.frames, "link": self.link, "points": list(self.points)}
            recent = list(self.die_points)
        if s is not None:
            out.update(missing=s.gaps, dropped=s.chip_dropped, lost=s.lost_in_transit, corrupt=s.bad_crc + s.bad_header)
        if f is not None:
            cyc = max(f["cycles"], 1)
            pb = f["pb"] or 4096
            dies = f["dies"]
            recent = [r for r in recent if len(r[0]) == dies] or [(tuple((0, 0) for _ in range(dies)), 1)]
            out.update(pb=pb / 4096, key=f["key"], policy=(f["flags"] >> 4) & 7, ring=(f["flags"] >> 1) & 1,
                       span=len(recent),
                       dies=[{"mean": sum(r[0][d][0] for r in recent) / max(sum(r[1] for r in recent), 1) / pb,
                              "max": max(r[0][d][1] for r in recent) / pb,
                              "oi": f[f"die{d}_oi"], "ht": f[f"die{d}_ht"], "ut": f[f"die{d}_ut"],
                              "wait": (f["waiting"] >> d) & 1} for d in range(dies)])
        return out


class _Handler(BaseHTTPRequestHandler):
    state = None

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path in ("/", "/index.html"):
            self._send(_page_file("monitor.html"), "text/html; charset=utf-8")
        elif self.path == "/monitor.js":
            self._send(_page_file("monitor.js"), "text/javascript; charset=utf-8")
        elif self.path == "/config.json":
            self._send(json.dumps(CONFIG).encode(), "application/json")
        elif self.path == "/state.json":
            self._send(json.dumps(self.state.snapshot()).encode(), "application/json")
        else:
            self.send_error(404)

    def _send(self, body, content_type):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


# What the page takes from Python: the policy names in the order of the ring's mode values.
CONFIG = {"policies": POLICIES, "updates_per_s": UPDATES_PER_S}


def _page_file(name):
    return (resources.files("nandlab") / "web" / name).read_bytes()


class WebMonitor:
    """Serves the page on 127.0.0.1:`port` (0: any free port) until `close()`."""
    def __init__(self, state, port=8080, host="127.0.0.1"):
        from nandlab.errors import NandLabError
        handler = type("Handler", (_Handler,), {"state": state})
        try:
            self.server = ThreadingHTTPServer((host, port), handler)
        except (OSError, OverflowError) as e:
            raise NandLabError(f"cannot serve the monitor page on {host}:{port}: "
                               f"{getattr(e, 'strerror', None) or e}") from None
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
