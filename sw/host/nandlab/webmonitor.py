"""The live monitor page of `nandlab monitor --web`: a local web server (standard library only) whose
page polls the latest telemetry state (20 times a second) and draws it.

Why a web page rather than a desktop window: in a lab the board's host is often a machine next to
the bench while people watch from their own desks; a browser is on every machine, needs no GUI
toolkit on the host, works through an SSH tunnel, and several people can watch one run. The page is
one HTML file with a canvas (no external scripts: it works offline).

The page shows the summed current normalised to the budget over the last frames with the budget
line and the frames that went over it marked, each die's mean and peak current, the ring (who holds
the key, tokens held and in use per node, who waits) and a status line: frames, missing frames
(dropped on chip / lost on the way), corrupt frames and the link's state.
"""

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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
            body = PAGE.replace("@UPDATES@", str(UPDATES_PER_S)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/state.json":
            body = json.dumps(self.state.snapshot()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_error(404)


class WebMonitor:
    """Serves the page on 127.0.0.1:`port` (0: any free port) until `close()`."""
    def __init__(self, state, port=8080, host="127.0.0.1"):
        handler = type("Handler", (_Handler,), {"state": state})
        self.server = ThreadingHTTPServer((host, port), handler)
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


PAGE = r"""<!doctype html>
<html><head><meta charset="utf-8"><title>nandlab monitor</title>
<style>
 body { font-family: sans-serif; margin: 12px; background: #fafafa; color: #222; }
 h1 { font-size: 18px; margin: 0 0 6px 0; }
 #status { font-family: monospace; font-size: 13px; margin: 4px 0 10px 0; }
 .bad { color: #d62728; font-weight: bold; }
 canvas { background: white; border: 1px solid #ccc; }
 table { border-collapse: collapse; font-size: 12px; margin-top: 8px; }
 td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
 .key { background: #ffe08a; }
</style></head>
<body>
<h1>nandlab: NAND current against the power budget</h1>
<div id="status">waiting for telemetry ...</div>
<canvas id="total" width="1100" height="300"></canvas>
<div style="display:flex; gap:16px; align-items:flex-start">
 <canvas id="dies" width="700" height="220"></canvas>
 <table id="ring"><tr><th>node</th><th>HT</th><th>UT</th><th>key</th><th>waits</th><th>phase (OI)</th></tr></table>
</div>
<script>
const POLICIES = ["npm", "ppm", "mtpm", "kmtpm_atomic", "kmtpm_sub", "mtpm_nokey"];
const BUDGET = "#d62728";
function drawTotal(s) {
  const c = document.getElementById("total"), g = c.getContext("2d"), W = c.width, H = c.height, L = 50, B = 25;
  g.clearRect(0, 0, W, H);
  const pts = s.points || [];
  let ymax = 1.25;
  for (const p of pts) ymax = Math.max(ymax, p[1] * 1.1);
  const y = v => H - B - v / ymax * (H - B - 10);
  const n = Math.max(pts.length, 2), x = i => L + i * (W - L - 10) / (n - 1);
  g.strokeStyle = "#888"; g.fillStyle = "#444"; g.font = "11px sans-serif";
  for (let v = 0; v <= ymax; v += 0.25) { g.fillText(v.toFixed(2), 5, y(v) + 4); g.beginPath(); g.moveTo(L - 4, y(v)); g.lineTo(L, y(v)); g.stroke(); }
  g.fillText("current / PB", 5, 12);
  g.fillText("last " + pts.length + " frames", W - 120, H - 6);
  g.strokeStyle = "#9ecae1"; g.beginPath(); pts.forEach((p, i) => i ? g.lineTo(x(i), y(p[2])) : g.moveTo(x(i), y(p[2]))); g.stroke();
  g.strokeStyle = "#1f77b4"; g.lineWidth = 1.5; g.beginPath(); pts.forEach((p, i) => i ? g.lineTo(x(i), y(p[1])) : g.moveTo(x(i), y(p[1]))); g.stroke(); g.lineWidth = 1;
  g.strokeStyle = BUDGET; g.lineWidth = 2; g.setLineDash([8, 5]);
  g.beginPath(); g.moveTo(L, y(1)); g.lineTo(W - 10, y(1)); g.stroke(); g.setLineDash([]); g.lineWidth = 1;
  g.fillStyle = BUDGET; g.fillText("budget (PB)", W - 90, y(1) - 5);
  pts.forEach((p, i) => { if (p[3]) { g.fillRect(x(i) - 2, y(p[1]) - 2, 4, 4); } });
}
function drawDies(s) {
  const c = document.getElementById("dies"), g = c.getContext("2d"), W = c.width, H = c.height, B = 20;
  g.clearRect(0, 0, W, H);
  const d = s.dies || [], n = Math.max(d.length, 1), w = (W - 20) / n;
  let ymax = 0.5; for (const e of d) ymax = Math.max(ymax, e.max * 1.1);
  g.font = "11px sans-serif";
  d.forEach((e, i) => {
    const h = v => v / ymax * (H - B - 15);
    g.fillStyle = "#c6dbef"; g.fillRect(10 + i * w + 4, H - B - h(e.max), w - 8, h(e.max));
    g.fillStyle = "#3182bd"; g.fillRect(10 + i * w + 4, H - B - h(e.mean), w - 8, h(e.mean));
    g.fillStyle = "#222"; g.fillText("die " + i, 10 + i * w + 6, H - 5);
  });
  g.fillText("per die over the last " + (s.span || 0) + " frames: mean (dark) and peak (light), / PB", 10, 12);
}
function drawRing(s) {
  const t = document.getElementById("ring");
  while (t.rows.length > 1) t.deleteRow(1);
  (s.dies || []).forEach((e, i) => {
    const r = t.insertRow(); if (s.key === i) r.className = "key";
    [i, e.ht, e.ut, s.key === i ? "held" : "", e.wait ? "yes" : "", "0x" + e.oi.toString(16)].forEach(v => { r.insertCell().textContent = v; });
  });
}
function update(s) {
  const bad = (s.missing || 0) + (s.corrupt || 0) > 0;
  const pol = s.ring ? POLICIES[s.policy] : "no ring (dies run free)";
  document.getElementById("status").innerHTML =
    "frames <b id=frames>" + s.frames + "</b> &middot; missing <span class=" + (s.missing ? "bad" : "") + ">" + (s.missing || 0) +
    "</span> (dropped on chip " + (s.dropped || 0) + ", lost on the way " + (s.lost || 0) + ") &middot; corrupt <span class=" +
    (s.corrupt ? "bad" : "") + ">" + (s.corrupt || 0) + "</span> &middot; link: " + s.link +
    (s.pb ? " &middot; policy " + pol + ", PB = " + s.pb.toFixed(3) + " x I_max" : "");
  drawTotal(s); drawDies(s); drawRing(s);
}
// Poll the monitor (a plain request at a time: nothing stays open, so the page also renders in
// headless browsers and through proxies).
function poll() {
  fetch("/state.json").then(r => r.json()).then(s => { update(s); setTimeout(poll, 1000 / UPDATES); })
    .catch(() => { document.getElementById("status").textContent = "monitor not reachable; retrying ...";
                   setTimeout(poll, 1000); });
}
const UPDATES = @UPDATES@;
poll();
</script>
</body></html>
"""
