// The live monitor page's drawing and polling (served with monitor.html by nandlab.webmonitor).

// From /config.json: the ring's policies in the order of its mode values
// (nandlab.gateware.power.common.POLICIES) and the state polls per second.
let POLICIES = [], UPDATES = 20;
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
function unreachable(retry) {
  document.getElementById("status").textContent = "monitor not reachable; retrying ...";
  setTimeout(retry, 1000);
}
function poll() {
  fetch("/state.json").then(r => r.json()).then(s => { update(s); setTimeout(poll, 1000 / UPDATES); })
    .catch(() => unreachable(poll));
}
function start() {
  fetch("/config.json").then(r => r.json()).then(c => { POLICIES = c.policies; UPDATES = c.updates_per_s; poll(); })
    .catch(() => unreachable(start));
}
start();
