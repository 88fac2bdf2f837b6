// Small behaviours of the studio that htmx and Bootstrap do not cover.

// Plain forms ask before destructive posts: <form data-confirm="Revoke …?">.
document.addEventListener("submit", (event) => {
  const message = event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});

// Copy buttons: <button data-copy="input-id">. The clipboard API needs a secure context, so fall back to execCommand.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  field.select();
  try {
    await navigator.clipboard.writeText(field.value);
  } catch {
    document.execCommand("copy");
  }
  button.innerHTML = '<i class="bi bi-check2"></i> Copied';
});

// Job logs: <div data-follow="URL"> follows the API's Server-Sent Events (`status` at once and at each change, `line`,
// then `end`). When the server closes a long stream (`timeout`), EventSource reconnects by itself with Last-Event-ID,
// so no line is shown twice.
function appendLogLine(pane, line) {
  const atBottom = pane.scrollHeight - pane.scrollTop - pane.clientHeight < 32;
  const row = document.createElement("div");
  row.className = "log-line";
  row.dataset.seq = line.seq;
  if (line.source) {
    const source = document.createElement("span");
    source.className = "log-source";
    source.textContent = `[${line.source}]`;
    row.append(source, " ");
  }
  row.append(line.text);
  pane.querySelector(".log-empty")?.remove();
  pane.append(row);
  if (atBottom) pane.scrollTop = pane.scrollHeight;
}

function showLogState(pane, state, text) {
  const badge = document.getElementById(pane.dataset.stateTarget);
  if (!badge) return;
  badge.dataset.state = state;
  const icon = { following: '<span class="live-dot" aria-hidden="true"></span>',
                 ended: '<i class="bi bi-check2-circle"></i>', error: '<i class="bi bi-exclamation-triangle"></i>' }[state] || "";
  badge.innerHTML = `${icon} <span class="log-state-text"></span>`;
  badge.querySelector(".log-state-text").textContent = text;
}

function followLog(pane) {
  const stream = new EventSource(pane.dataset.follow);
  const count = document.getElementById(pane.dataset.countTarget);
  stream.onopen = () => showLogState(pane, "following", "Following the log live…");
  stream.addEventListener("status", (event) => {
    // A job that prints nothing yet (Queued, waiting for a node) still says where it is and why.
    const job = JSON.parse(event.data);
    const reason = job.status_reason ? `: ${job.status_reason}` : "";
    showLogState(pane, "following", `${job.status}${reason} — following the log live…`);
    pane.querySelector(".log-empty")?.replaceChildren(`Waiting for output (${job.status}${reason}).`);
  });
  stream.addEventListener("line", (event) => {
    const line = JSON.parse(event.data);
    appendLogLine(pane, line);
    if (count) count.textContent = `${line.seq + 1} line${line.seq === 0 ? "" : "s"}`;
  });
  stream.addEventListener("end", (event) => {
    stream.close();
    const end = JSON.parse(event.data);
    const code = end.exit_code === null ? "" : ` (exit code ${end.exit_code})`;
    showLogState(pane, "ended", `The job has ended: ${end.status}${code}.`);
    pane.querySelector(".log-empty")?.replaceChildren("The job printed nothing.");
  });
  stream.onerror = () => {
    if (stream.readyState === EventSource.CLOSED) showLogState(pane, "error", "The log stream was closed; reload to follow again.");
    else showLogState(pane, "connecting", "Reconnecting…");
  };
  // htmx swaps and page changes drop the pane: stop streaming with it.
  window.addEventListener("pagehide", () => stream.close(), { once: true });
}

document.addEventListener("DOMContentLoaded", () => document.querySelectorAll("[data-follow]").forEach(followLog));

// Bootstrap tooltips: <span data-bs-toggle="tooltip" data-bs-title="…">, also in content htmx swaps in (and out).
htmx.onLoad((root) => root.querySelectorAll('[data-bs-toggle="tooltip"]').forEach((el) => bootstrap.Tooltip.getOrCreateInstance(el)));
document.addEventListener("htmx:beforeCleanupElement", (event) => bootstrap.Tooltip.getInstance(event.target)?.dispose());

// Traffic sliders: <form data-traffic-form> holds one <input type=range data-traffic-slider> per deployment, each with a
// number box (data-traffic-number = the slider's id). The total is shown as they move; Save works at 0 or 100 only
// (the server checks again).
// "as saved" until something moves: right after a save the sliders hold the saved split, nothing is ready to save.
function trafficChanged(form) {
  if (form.hasAttribute("data-traffic-changed")) return true; // a refused post: the sliders show what was posted
  const fields = [...form.querySelectorAll("[data-traffic-slider], #mirror-percent")];
  const select = form.querySelector("#mirror-deployment");
  // a select with no `selected` option starts on its first one
  const initial = select && ([...select.options].find((option) => option.defaultSelected) || select.options[0]);
  return fields.some((field) => field.value !== field.defaultValue) || Boolean(select && select.value !== initial?.value);
}

function showTraffic(form) {
  const sliders = [...form.querySelectorAll("[data-traffic-slider]")];
  if (!sliders.length) return; // no deployments yet: no sliders, no total
  const total = sliders.reduce((sum, slider) => sum + Number(slider.value), 0);
  const valid = total === 0 || total === 100;
  form.querySelector("[data-traffic-total]").textContent = total;
  form.querySelector(".traffic-total").classList.toggle("traffic-bad", !valid);
  const off = total > 100 ? `${total - 100} too many` : `${100 - total} short of 100`;
  const save = form.querySelector("[data-traffic-save]");
  form.querySelector("[data-traffic-hint]").textContent = valid
    ? (total === 0 ? "— no deployment takes traffic" : (save ? (trafficChanged(form) ? "— ready to save" : "— as saved") : ""))
    : `— must be 0 or 100 (${off})`;
  if (save) save.disabled = !valid;
  for (const slider of sliders) {
    const segment = form.querySelector(`[data-segment="${slider.id}"]`);
    if (segment) segment.style.width = `${(Number(slider.value) * 100) / Math.max(total, 100)}%`;
  }
}

document.addEventListener("input", (event) => {
  const form = event.target.closest("[data-traffic-form]");
  if (!form) return;
  if (event.target.matches("[data-traffic-number]")) {
    const slider = document.getElementById(event.target.dataset.trafficNumber);
    slider.value = Math.min(100, Math.max(0, Math.round(Number(event.target.value) || 0)));
  } else if (event.target.matches("[data-traffic-slider]")) {
    const box = form.querySelector(`[data-traffic-number="${event.target.id}"]`);
    if (box) box.value = event.target.value;
  }
  showTraffic(form);
});

// A number box left out of range shows what its slider took.
document.addEventListener("change", (event) => {
  if (!event.target.matches("[data-traffic-number]")) return;
  event.target.value = document.getElementById(event.target.dataset.trafficNumber).value;
});

document.addEventListener("DOMContentLoaded", () => document.querySelectorAll("[data-traffic-form]").forEach(showTraffic));
