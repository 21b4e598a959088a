// CitySeeker operator console: the offline map with the vehicle, what the agent saw and chose,
// the safety state, and the commands (hold, e-stop, reset, take control, return, seek, cancel).
// Plain JavaScript, no build step; the server sends one state record (docs/operator.md).
"use strict";

const $ = (id) => document.getElementById(id);
const token = new URLSearchParams(location.search).get("token") || "";
const q = `token=${encodeURIComponent(token)}`;
const STALE_MS = 1000;          // no state for this long: the page says "stale"
const RECONNECT_MS = 1000;
const COLOURS = {
  ground: "#1b1f24", building: "#5a6470", street: "#8d969f", graph: "#3d8bfd", path: "#ff9800",
  vehicle: "#ff1744", target: "#00e5ff", fence: "#ffd600", goal: "#e040fb",
};
const st = { ws: null, map: null, state: null, lastMsgAt: -Infinity, scale: 1.5, follow: true,
             centre: [0, 0], decisionSeq: 0, answerCount: 0 };
// Counters a test (or a curious operator) can read: nothing else depends on them.
window.__console = { states: 0, connects: 0, sent: [], answers: [], dropped: 0, refused: [], stale: true,
                     mapLoaded: false, viewsShown: 0, vehiclePx: null };

// -- the server ----------------------------------------------------------------------------------
function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/console/ws?${q}`);
  ws.onopen = () => { window.__console.connects++; renderLink(); };
  ws.onclose = () => { renderLink(); setTimeout(connect, RECONNECT_MS); };
  ws.onmessage = (e) => onMessage(JSON.parse(e.data));
  st.ws = ws;
}

function send(obj) {
  if (st.ws && st.ws.readyState === WebSocket.OPEN) { st.ws.send(JSON.stringify(obj)); return true; }
  showAnswer(`not sent: no connection to the server (${obj.type})`, false);
  return false;
}

function onMessage(m) {
  st.lastMsgAt = performance.now();
  switch (m.type) {
    case "state": st.state = m; window.__console.states++; window.__console.vehicle = m.vehicle; render(); break;
    case "sent": window.__console.sent.push(m.command); showAnswer(`${m.command}: sent to the stack`, true); break;
    case "refused": window.__console.refused.push(m); showAnswer(`${m.command} refused (${m.code}): ${m.reason}`, false);
      break;
    case "dropped": window.__console.dropped++; showAnswer(`dropped: ${m.what}`, false); break;
  }
}

function showAnswer(text, ok) { $("answer").textContent = text; $("answer").className = ok ? "" : "fail"; }

// -- the commands --------------------------------------------------------------------------------
$("hold").onclick = () => send({ type: "hold" });
$("estop").onclick = () => { $("estop-confirm").hidden = false; $("estop-yes").focus(); };
$("estop-no").onclick = () => { $("estop-confirm").hidden = true; };
$("estop-yes").onclick = () => { $("estop-confirm").hidden = true; send({ type: "estop", confirm: true }); };
$("reset-estop").onclick = () => send({ type: "reset_estop" });
$("take-control").onclick = () => send({ type: "take_control" });
$("rtl").onclick = () => send({ type: "return_to_launch" });
$("seek-cancel").onclick = () => send({ type: "cancel" });
$("seek-form").onsubmit = (e) => {
  e.preventDefault();
  const steps = parseInt($("seek-steps").value || "0", 10);
  send({ type: "seek", kind: $("seek-kind").value, text: $("seek-text").value,
         max_steps: Number.isFinite(steps) ? steps : 0 });
};

// -- the page ------------------------------------------------------------------------------------
function isStale() {
  const open = st.ws && st.ws.readyState === WebSocket.OPEN;
  return !open || !st.state || st.state.stale || performance.now() - st.lastMsgAt > STALE_MS;
}

function renderLink() {
  const open = st.ws && st.ws.readyState === WebSocket.OPEN;
  $("link-badge").textContent = open ? "connected" : "reconnecting";
  $("link-badge").className = open ? "badge ok" : "badge";
  const stale = isStale();
  $("stale").hidden = !stale;
  window.__console.stale = stale;
}

function render() {
  const s = st.state;
  renderLink();
  if (!s) return;
  const safety = s.safety, link = s.link, battery = s.battery;
  $("safety-status").textContent = safety
    ? `${safety.code}${safety.moving ? " (moving)" : " (holding)"}${safety.connected ? "" : ", link down"}: ${safety.reason}`
    : "–";
  $("safety-link").textContent = link ? link.link : "–";
  $("safety-mode").textContent = link ? link.mode : "–";
  const latched = !!(safety && safety.estop);
  $("safety-estop").textContent = safety ? (latched ? "LATCHED" : "released") : "–";
  $("safety-estop").className = latched ? "latched" : "";
  $("estop-badge").hidden = !latched;
  $("safety-battery").textContent = battery && battery.fraction !== null
    ? `${Math.round(battery.fraction * 100)} %${battery.voltage_v !== null ? `, ${battery.voltage_v.toFixed(1)} V` : ""}`
    : "–";
  $("safety-violations").textContent = String(s.violation_count);
  $("violations").replaceChildren(...s.violations.slice(-5).map((v) => li(`${v.rule}: ${v.detail}`)));
  renderSeek(s.seek);
  renderDecision(s.decision);
  if (s.answer_count !== st.answerCount && s.answers.length) {  // a new answer: shown once, until the next news
    st.answerCount = s.answer_count;
    const a = s.answers[s.answers.length - 1];
    window.__console.answers = s.answers;
    showAnswer(`${a.command}: ${a.ok ? "done" : "failed"}${a.message ? ` — ${a.message}` : ""}`, a.ok);
  }
  draw();
}

function li(text) { const el = document.createElement("li"); el.textContent = text; return el; }

function renderSeek(seek) {
  if (!seek || seek.state === "idle") { $("seek-state").textContent = "idle"; $("seek-result").textContent = ""; return; }
  const left = seek.steps_left === null ? "" : `, ${seek.steps_left} left`;
  $("seek-state").textContent = `${seek.state}: "${seek.text}"${seek.family ? ` (${seek.family})` : ""} step ${seek.step}${left}, ` +
    `${Math.round(seek.distance_m)} m${seek.reason ? ` — ${seek.reason}` : ""}`;
  const r = seek.result;
  $("seek-result").textContent = r ? `result: ${r.outcome} (${r.code}) at ${r.node || "?"}, ${r.steps} steps, ` +
    `${Math.round(r.distance_m)} m${r.answer ? `; answer: ${r.answer}` : ""}${r.reason ? ` — ${r.reason}` : ""}` : "";
}

function renderDecision(d) {
  if (!d) return;
  $("decision-reason").textContent = d.reason || "(no reason given)";
  $("decision-meta").textContent = `step ${d.step} of ${d.max_steps} · ${d.action}` +
    `${d.chosen_index === null ? "" : ` view ${d.chosen_index}`} · decided in ${d.latency_s.toFixed(2)} s · node ${d.node}`;
  if (d.seq === st.decisionSeq) return;  // the same views: keep the images
  st.decisionSeq = d.seq;
  const views = d.views.map((v) => {
    const box = document.createElement("figure");
    box.className = "view" + (v.index === d.chosen_index ? " chosen" : "");
    box.dataset.index = String(v.index);
    let img;
    if (v.image) { img = document.createElement("img"); img.src = `/console/view/${d.seq}/${v.index}?${q}`; img.alt = `view ${v.index}`; }
    else { img = document.createElement("div"); img.className = "noimage"; }
    const label = document.createElement("figcaption");
    label.textContent = `${Math.round(v.heading_deg)}°${v.relative ? ` ${v.relative}` : ""}`;
    box.append(img, label);
    return box;
  });
  $("views").replaceChildren(...views);
  window.__console.viewsShown++;
}

// -- the map -------------------------------------------------------------------------------------
async function loadMap() {
  for (;;) {
    try {
      const r = await fetch(`/console/map.json?${q}`);
      if (r.ok) { st.map = await r.json(); break; }
    } catch (e) { /* the server restarts: try again */ }
    await new Promise((ok) => setTimeout(ok, RECONNECT_MS));
  }
  const b = st.map.bounds;
  st.centre = [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2];
  $("world").textContent = st.map.name;
  $("credit").textContent = st.map.credit;
  window.__console.mapLoaded = true;
  draw();
}

function draw() {
  const canvas = $("map"), map = st.map;
  const w = canvas.clientWidth, h = canvas.clientHeight, dpr = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
  }
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.fillStyle = COLOURS.ground; g.fillRect(0, 0, w, h);
  if (!map) return;
  const s = st.state, vehicle = s && s.vehicle;
  if (st.follow && vehicle) st.centre = [vehicle.x, vehicle.y];
  const k = st.scale, cx = st.centre[0], cy = st.centre[1];
  const px = (x, y) => [w / 2 + (x - cx) * k, h / 2 - (y - cy) * k];   // north up
  const line = (xy, close) => {
    g.beginPath();
    for (let i = 0; i < xy.length; i += 2) { const [u, v] = px(xy[i], xy[i + 1]); i ? g.lineTo(u, v) : g.moveTo(u, v); }
    if (close) g.closePath();
  };
  g.lineCap = "round"; g.lineJoin = "round";
  g.strokeStyle = COLOURS.street;
  for (const street of map.streets) { g.lineWidth = Math.max(1, street.width_m * k); line(street.xy, false); g.stroke(); }
  g.fillStyle = COLOURS.building;
  for (const b of map.buildings) { line(b, true); g.fill(); }
  const nodes = map.graph.xy, edges = map.graph.edges;
  g.strokeStyle = COLOURS.graph; g.lineWidth = 1.5; g.beginPath();
  for (let i = 0; i < edges.length; i += 2) {
    const [a, b] = [edges[i], edges[i + 1]];
    const [u1, v1] = px(nodes[2 * a], nodes[2 * a + 1]), [u2, v2] = px(nodes[2 * b], nodes[2 * b + 1]);
    g.moveTo(u1, v1); g.lineTo(u2, v2);
  }
  g.stroke();
  if (map.geofence) { g.strokeStyle = COLOURS.fence; g.lineWidth = 2; g.setLineDash([8, 6]); line(map.geofence.xy, true);
    g.stroke(); g.setLineDash([]); }
  if (map.target) {
    g.strokeStyle = COLOURS.target; g.lineWidth = 2; line(map.target.ring, true); g.stroke();
    const [u, v] = px(map.target.xy[0], map.target.xy[1]); g.fillStyle = COLOURS.target; g.fillRect(u - 4, v - 4, 8, 8);
  }
  if (!s) return;
  if (s.path.length > 1) {
    g.strokeStyle = COLOURS.path; g.lineWidth = 4; g.beginPath();
    s.path.forEach(([x, y], i) => { const [u, v] = px(x, y); i ? g.lineTo(u, v) : g.moveTo(u, v); });
    g.stroke();
  }
  if (s.going_to) {
    const [u, v] = px(s.going_to.x, s.going_to.y);
    g.strokeStyle = COLOURS.goal; g.lineWidth = 3; g.beginPath(); g.arc(u, v, 9, 0, 2 * Math.PI); g.stroke();
  }
  if (vehicle) {
    const [u, v] = px(vehicle.x, vehicle.y);
    const a = ((vehicle.heading_deg === null ? 0 : vehicle.heading_deg) * Math.PI) / 180;  // clockwise from north
    g.save(); g.translate(u, v); g.rotate(a);
    g.fillStyle = COLOURS.vehicle; g.strokeStyle = "#ffffff"; g.lineWidth = 2;
    g.beginPath(); g.moveTo(0, -16); g.lineTo(11, 12); g.lineTo(0, 6); g.lineTo(-11, 12); g.closePath();
    g.fill(); g.stroke(); g.restore();
    window.__console.vehiclePx = [u, v];
  }
}

$("zoom-in").onclick = () => { st.scale *= 1.5; draw(); };
$("zoom-out").onclick = () => { st.scale /= 1.5; draw(); };
$("follow").onclick = () => { st.follow = !st.follow; $("follow").className = st.follow ? "on" : ""; draw(); };
window.addEventListener("resize", draw);
setInterval(renderLink, 200);  // "stale" shows even when nothing arrives at all
loadMap();
connect();
