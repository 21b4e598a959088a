// CitySeeker AR page: camera frames, fixes and the compass to the server; a need to a Seek;
// the guidance over the live video, spoken. Plain JavaScript, no build step (docs/ar.md).
"use strict";

const $ = (id) => document.getElementById(id);
const token = new URLSearchParams(location.search).get("token") || "";
const FPS_MAX = 5, FPS_MIN = 1;        // frames a second, adapted to the link by acknowledgements
const FIX_REPEAT_MS = 1000;            // the latest fix again each second: the stack knows we are here
const FIX_MAX_AGE_MS = 30000;          // ... while it is younger than this
const FIX_REFRESH_MS = 4000;           // older than this: ask the receiver again
// A phone's compass fires many times a second: a reading older than this is no longer where the
// phone points, so it is neither sent nor shown (the server drops a heading after 3 s, docs/ar.md).
const HEADING_FRESH_MS = 2000;
const HEADING_REPEAT_MS = 1000;        // a fresh heading goes again each second, changed or not
const state = {
  ws: null, connected: false, heading: null, headingAt: -Infinity, headingAbsolute: false, fix: null,
  cameraOk: false, inFlight: false, lastSentAt: 0, rttMs: 400, waiting: [],
  goalActive: false, cancelled: false, lastGuidance: null, lastFeedback: null, spokenFor: "",
};
// Counters a test (or a curious tester) can read: nothing else depends on them.
window.__ar = { framesSent: 0, framesAcked: 0, fixesSent: 0, headingsSent: 0, guidanceShown: 0,
                guidanceAfterCancel: 0, results: [], lastLatencyMs: null, fps: 0, statuses: 0, waiting: [],
                compassButtonShown: false, lastHeadingSent: null };

// -- the server --------------------------------------------------------------------------------
function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/ws?token=${encodeURIComponent(token)}`);
  ws.binaryType = "arraybuffer";
  ws.onopen = () => {
    state.connected = true; state.inFlight = false;
    sendHeading();
    if (state.fix) sendFix();
    render();
  };
  ws.onclose = () => { state.connected = false; render(); setTimeout(connect, 1500); };
  ws.onmessage = (e) => onMessage(JSON.parse(e.data));
  state.ws = ws;
}

function send(obj) {
  if (state.ws && state.ws.readyState === WebSocket.OPEN) { state.ws.send(JSON.stringify(obj)); return true; }
  return false;
}

function onMessage(m) {
  switch (m.type) {
    case "status": state.waiting = m.waiting || []; state.goalActive = !!m.goal_active;
      window.__ar.waiting = state.waiting.map((w) => w[0]); window.__ar.statuses++; render(); break;
    case "ack": {
      state.inFlight = false;
      const rtt = performance.now() - m.captured_ms;
      state.rttMs = 0.7 * state.rttMs + 0.3 * rtt;
      window.__ar.framesAcked++;
      break;
    }
    case "started": state.goalActive = true; state.cancelled = false; $("result").hidden = true;
      $("refused").hidden = true; clearGuidance(); render(); break;
    case "cancelling": state.cancelled = true; render(); break;
    case "refused": showRefused(m); break;
    case "feedback": if (state.goalActive) { state.lastFeedback = m; showStep(); } break;
    case "guidance": showGuidance(m); break;
    case "result": showResult(m); break;
    default: break;
  }
}

// -- camera ------------------------------------------------------------------------------------
async function startCamera() {
  $("camera-error").hidden = true;
  try {
    const stream = await navigator.mediaDevices.getUserMedia(
      { video: { facingMode: "environment", width: { ideal: 640 }, height: { ideal: 480 } }, audio: false });
    $("video").srcObject = stream;
    state.cameraOk = true;
  } catch (err) {
    state.cameraOk = false;
    const refused = err && (err.name === "NotAllowedError" || err.name === "SecurityError");
    $("camera-error-text").textContent = refused
      ? "Camera access was refused: the stack sees through this camera. Allow it in the browser's site settings, then retry."
      : `The camera could not start (${err && err.name}): ${err && err.message}`;
    $("camera-error").hidden = false;
  }
  render();
}

function frameLoop() {
  // One frame in flight at a time: the next goes when the last was acknowledged, so a slow link
  // gets fewer frames (down to FPS_MIN), a fast one up to FPS_MAX.
  const now = performance.now();
  const interval = Math.min(1000 / FPS_MIN, Math.max(1000 / FPS_MAX, state.rttMs * 1.2));
  const stale = state.inFlight && now - state.lastSentAt > 2000;
  if (state.cameraOk && state.connected && (!state.inFlight || stale) && now - state.lastSentAt >= interval) {
    grabAndSend(now);
  }
  window.__ar.fps = 1000 / interval;
  setTimeout(frameLoop, 50);
}

function grabAndSend(captured) {
  const video = $("video");
  if (!video.videoWidth) return;
  const canvas = $("grab");
  canvas.getContext("2d").drawImage(video, 0, 0, canvas.width, canvas.height);
  state.inFlight = true; state.lastSentAt = captured;
  canvas.toBlob(async (blob) => {
    if (!blob) { state.inFlight = false; return; }
    const jpeg = new Uint8Array(await blob.arrayBuffer());
    const buf = new ArrayBuffer(8 + jpeg.length);
    new DataView(buf).setFloat64(0, captured, true);
    new Uint8Array(buf, 8).set(jpeg);
    if (state.ws && state.ws.readyState === WebSocket.OPEN) { state.ws.send(buf); window.__ar.framesSent++; }
    else state.inFlight = false;
  }, "image/jpeg", 0.7);
}

// -- position and heading ----------------------------------------------------------------------
function startGeolocation() {
  if (!navigator.geolocation) { state.fixError = "this browser gives no location"; render(); return; }
  const options = { enableHighAccuracy: true, maximumAge: 0, timeout: 30000 };
  const onPosition = (pos) => {
    state.fix = { lat: pos.coords.latitude, lon: pos.coords.longitude, accuracy_m: pos.coords.accuracy,
                  at: Date.now() };
    state.fixError = "";
    sendFix();
  };
  const REASONS = { 1: "location access was refused: allow it in the browser's site settings",
                    2: "no position available yet", 3: "the position took too long" };
  const onError = (err) => {   // said only while there is no usable fix: a failed refresh is no news
    if (state.fix && Date.now() - state.fix.at < FIX_MAX_AGE_MS) return;
    state.fixError = `waiting for a location fix: ${REASONS[err.code] || err.message}`;
    render();
  };
  navigator.geolocation.watchPosition(onPosition, onError, options);
  // A phone standing still may get no new watch callback: ask again when the last is a few seconds
  // old, and repeat the latest fix each second while it is younger than FIX_MAX_AGE_MS.
  let asking = false;
  setInterval(() => {
    if (!asking && (!state.fix || Date.now() - state.fix.at > FIX_REFRESH_MS)) {
      asking = true;
      navigator.geolocation.getCurrentPosition((pos) => { asking = false; onPosition(pos); },
                                               (err) => { asking = false; onError(err); }, options);
    }
    if (state.fix && Date.now() - state.fix.at < FIX_MAX_AGE_MS) sendFix();
  }, FIX_REPEAT_MS);
}

function sendFix() {
  const f = state.fix;
  const body = { type: "fix", lat: f.lat, lon: f.lon, accuracy_m: f.accuracy_m };
  const heading = freshHeading();
  if (heading !== null) body.heading_deg = heading;
  if (send(body)) window.__ar.fixesSent++;
}

function freshHeading() {
  return state.heading !== null && performance.now() - state.headingAt < HEADING_FRESH_MS ? state.heading : null;
}

function sendHeading() {
  const heading = freshHeading();
  if (heading === null) return;
  state.headingSentAt = performance.now();
  if (send({ type: "heading", heading_deg: heading })) { window.__ar.headingsSent++; window.__ar.lastHeadingSent = heading; }
}

function onOrientation(e) {
  let heading = null;
  if (typeof e.webkitCompassHeading === "number") heading = e.webkitCompassHeading;      // iOS
  else if (e.alpha !== null && e.alpha !== undefined && (e.absolute || e.type === "deviceorientationabsolute"))
    heading = (360 - e.alpha) % 360;                                                      // Android, north-referenced
  if (heading === null) return;
  if (e.type === "deviceorientation" && state.headingAbsolute && typeof e.webkitCompassHeading !== "number") return;
  if (e.type === "deviceorientationabsolute") state.headingAbsolute = true;
  const stale = freshHeading() === null;
  const changed = stale || Math.abs(((heading - state.heading + 540) % 360) - 180) > 2;
  state.heading = heading; state.headingAt = performance.now();
  $("orientation-permission").hidden = true;   // the browser gives readings: nothing to ask
  if (changed && performance.now() - (state.headingSentAt || 0) > 250) sendHeading();
  if (stale) render();
  pointArrow();
}

function startOrientation() {
  // Listen at once: most browsers (Android Chrome, desktop Chromium, Firefox) give readings without
  // a tap. Only where the browser refuses without one (iOS Safari's requestPermission outside a
  // user gesture) does the page show "Allow compass".
  window.addEventListener("deviceorientationabsolute", onOrientation);
  window.addEventListener("deviceorientation", onOrientation);
  setInterval(() => { if (performance.now() - (state.headingSentAt || 0) >= HEADING_REPEAT_MS) sendHeading(); },
              HEADING_REPEAT_MS / 4);
  if (typeof DeviceOrientationEvent === "undefined" || typeof DeviceOrientationEvent.requestPermission !== "function")
    return;
  const button = $("orientation-permission");
  // Asked without a tap: Chromium answers "granted"; iOS Safari refuses unless already granted.
  DeviceOrientationEvent.requestPermission().then((answer) => answer === "granted", () => false).then((granted) => {
    if (granted || freshHeading() !== null) return;
    button.hidden = false;
    window.__ar.compassButtonShown = true;
    render();
  });
  button.onclick = async () => {
    try {
      const answer = await DeviceOrientationEvent.requestPermission();
      if (answer === "granted") button.hidden = true;
      else button.textContent = "Compass refused: allow Motion & Orientation Access in Settings > Safari, then tap";
    } catch (err) { button.textContent = `Compass: ${err.message}`; }
  };
}

// -- a need ------------------------------------------------------------------------------------
function startNeedInput() {
  $("need-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("need").value.trim();
    $("refused").hidden = true;
    if (!text) { showRefused({ code: "bad_need", reason: "say what you need, e.g. I am thirsty" }); return; }
    send({ type: "need", text: text, max_steps: Number(new URLSearchParams(location.search).get("max_steps") || 0) });
  });
  $("cancel").addEventListener("click", () => { state.cancelled = true; send({ type: "cancel" }); render(); });
  $("camera-retry").addEventListener("click", startCamera);
  const Recognition = window.SpeechRecognition || window.webkitSpeechRecognition;
  if (!Recognition) return;
  const mic = $("mic");
  mic.hidden = false;
  mic.onclick = () => {
    const rec = new Recognition();
    rec.lang = navigator.language || "en-US";
    rec.interimResults = false;
    rec.onresult = (e) => { $("need").value = e.results[0][0].transcript; $("go").click(); };
    rec.onerror = (e) => showRefused({ code: "voice", reason: `voice input: ${e.error}; type the need instead` });
    rec.start();
  };
}

// -- showing and saying ------------------------------------------------------------------------
function pointArrow() {
  const g = state.lastGuidance;
  if (!g || g.heading_deg === null || g.heading_deg === undefined) return;
  const relative = state.heading === null ? 0 : ((g.heading_deg - state.heading + 540) % 360) - 180;
  $("arrow").style.transform = `rotate(${relative}deg)`;
  $("arrow").dataset.relativeDeg = relative.toFixed(0);
}

function showGuidance(g) {
  if (state.cancelled || !state.goalActive) { window.__ar.guidanceAfterCancel++; return; }
  state.lastGuidance = g;
  window.__ar.lastGuidance = g;
  const stop = g.action === "stop";
  $("arrow-box").hidden = stop;
  $("guidance").hidden = false;
  $("distance").textContent = stop ? "You have arrived" :
    (g.distance_m !== null ? `${Math.round(g.distance_m)} m to the next corner` : "");
  $("reason").textContent = g.text || g.reason || "";
  pointArrow();
  showStep();
  window.__ar.guidanceShown++;
  if (g.view_set_id !== state.spokenFor) {
    state.spokenFor = g.view_set_id;
    say(g.text || g.reason || "");
  }
  requestAnimationFrame(() => {          // on the screen from the next paint: the latency ends here
    if (typeof g.frame_captured_ms === "number") {
      const latency = performance.now() - g.frame_captured_ms;
      window.__ar.lastLatencyMs = latency;
      send({ type: "shown", view_set_id: g.view_set_id, latency_ms: latency });
    }
  });
}

function showStep() {
  const f = state.lastFeedback;
  if (f) $("step").textContent = `step ${f.step + 1} · ${f.steps_left} left`;
}

function say(text) {
  if (!text || !("speechSynthesis" in window)) return;
  window.speechSynthesis.cancel();       // the newest guidance, not a queue of old ones
  window.speechSynthesis.speak(new SpeechSynthesisUtterance(text));
}

const ENDINGS = { found: "Arrived", answered: "Answered", budget: "Budget spent", cancelled: "Cancelled",
                  failed: "Failed", rejected: "Not started", pilot_override: "Pilot took over",
                  link_lost: "Link lost" };

function clearGuidance() {
  // The guidance belongs to the Seek that gave it: once it ends, none of it stays on the screen.
  state.lastGuidance = null; state.lastFeedback = null;
  $("guidance").hidden = true; $("arrow-box").hidden = true;
  for (const id of ["distance", "reason", "step"]) $(id).textContent = "";
}

function showResult(m) {
  state.goalActive = false;
  clearGuidance();
  window.__ar.results.push(m);
  const box = $("result");
  box.textContent = `${ENDINGS[m.outcome] || m.outcome}: ${m.reason || m.line || ""}`;
  box.dataset.outcome = m.outcome;
  box.className = m.outcome === "found" ? "" : "ended";
  box.hidden = false;
  say(ENDINGS[m.outcome] || m.outcome);
  render();
}

function showRefused(m) {
  const box = $("refused");
  box.textContent = m.reason;
  box.dataset.code = m.code;
  box.hidden = false;
}

function render() {
  const waiting = Object.fromEntries(state.waiting);
  const line = (id, show, text) => { const el = $(id); el.hidden = !show; if (text) el.textContent = text; };
  line("wait-server", !state.connected || !!waiting.server,
       state.connected ? waiting.server : "waiting for the server: not connected (retrying)");
  line("wait-camera", !state.cameraOk || !!waiting.camera,
       state.cameraOk ? waiting.camera : "waiting for camera permission");
  line("wait-fix", !!state.fixError || !!waiting.fix || !state.connected,
       state.fixError || waiting.fix || "waiting for a location fix");
  const compass = freshHeading() !== null;
  line("wait-heading", !compass || !!waiting.heading,
       compass ? waiting.heading : "waiting for the compass heading" +
         ($("orientation-permission").hidden ? "" : ": tap Allow compass"));
  $("cancel").hidden = !state.goalActive;
  $("go").disabled = state.goalActive;
}

connect();
startCamera();
startGeolocation();
startOrientation();
startNeedInput();
frameLoop();
render();
