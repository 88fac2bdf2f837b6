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
  const text = "value" in field ? field.value : field.textContent; // an input, or a <code> block such as the YAML
  if ("select" in field) field.select();
  else window.getSelection().selectAllChildren(field);
  try {
    await navigator.clipboard.writeText(text);
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

// Upload fields: <div data-upload data-plan-url … data-max-body …> holds a folder picker ([data-upload-folder]), an
// archive picker ([data-upload-archive], the one posted) and a hidden [data-upload-name]. A picked folder is listed to
// the server, which answers what its .amlignore/.gitignore leave behind and what the limits refuse; the files kept are
// packed here into a .tar.gz that takes the archive picker's place, so the form posts one archive either way.
const IGNORE_FILES = [".amlignore", ".gitignore"];
const MAX_IGNORE_FILE = 64 * 1024;

function megabytes(size) {
  return size < 1024 * 1024 ? `${(size / 1024).toFixed(1)} KB` : `${(size / (1024 * 1024)).toFixed(1)} MB`;
}

function showUpload(field, text, problems = []) {
  const status = field.querySelector("[data-upload-status]");
  status.replaceChildren(text);
  status.classList.toggle("text-danger", problems.length > 0);
  if (problems.length) {
    const list = document.createElement("ul");
    list.className = "mb-0";
    for (const problem of problems) {
      const item = document.createElement("li");
      item.textContent = problem;
      list.append(item);
    }
    status.append(list);
  }
}

function setArchive(field, file, name) {
  const archive = field.querySelector("[data-upload-archive]");
  const transfer = new DataTransfer();
  if (file) transfer.items.add(file);
  archive.files = transfer.files;
  const named = field.querySelector("[data-upload-name]");
  named.value = name;
  named.dispatchEvent(new Event("input", { bubbles: true })); // the YAML preview shows code: ./<name>
}

// One tar member (ustar); a name longer than the header holds goes first in a pax record, as tar itself writes it.
function tarHeader(name, size, type = "0") {
  const block = new Uint8Array(512);
  const encoder = new TextEncoder();
  const put = (text, offset, length) => block.set(encoder.encode(text).subarray(0, length), offset);
  const octal = (value, length) => `${value.toString(8).padStart(length - 1, "0")}\0`;
  put(name, 0, 100);
  put(octal(0o644, 8), 100, 8);
  put(octal(0, 8), 108, 8);
  put(octal(0, 8), 116, 8);
  put(octal(size, 12), 124, 12);
  put(octal(0, 12), 136, 12);
  block.fill(32, 148, 156);
  put(type, 156, 1);
  put("ustar\0" + "00", 257, 8);
  const sum = block.reduce((total, byte) => total + byte, 0);
  put(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8);
  return block;
}

function paxRecord(name) {
  const body = ` path=${name}\n`;
  const bytes = new TextEncoder().encode(body).length;
  let length = bytes + String(bytes).length;
  if (String(length).length !== String(bytes).length) length += 1;
  return new TextEncoder().encode(`${length}${body}`);
}

function padding(size) {
  return new Uint8Array((512 - (size % 512)) % 512);
}

async function packFolder(entries) {
  const parts = [];
  for (const [path, file] of entries) {
    if (new TextEncoder().encode(path).length > 100) {
      const record = paxRecord(path);
      parts.push(tarHeader("PaxHeader", record.length, "x"), record, padding(record.length));
    }
    parts.push(tarHeader(path, file.size), file, padding(file.size));
  }
  parts.push(new Uint8Array(1024));
  const packed = new Blob(parts).stream().pipeThrough(new CompressionStream("gzip"));
  return new Response(packed).blob();
}

async function planFolder(field, files, root) {
  const paths = files.map((file) => file.webkitRelativePath.slice(root.length + 1));
  const ignores = {};
  for (const [index, path] of paths.entries()) {
    if (IGNORE_FILES.includes(path.split("/").pop())) ignores[path] = await files[index].slice(0, MAX_IGNORE_FILE).text();
  }
  const form = new FormData();
  form.append("csrfmiddlewaretoken", field.closest("form").querySelector("[name=csrfmiddlewaretoken]").value);
  form.append("listing", new Blob(paths.map((path, index) => `${files[index].size}\t${path}\n`)), "listing.txt");
  form.append("ignores", JSON.stringify(ignores));
  const reply = await fetch(field.dataset.planUrl, { method: "POST", body: form, credentials: "same-origin" });
  if (!reply.ok) throw new Error(`The server could not read the folder's list (${reply.status}).`);
  return { paths, plan: await reply.json() };
}

async function folderPicked(field, input) {
  const files = [...input.files];
  if (!files.length) return;
  const root = files[0].webkitRelativePath.split("/")[0];
  setArchive(field, null, "");
  showUpload(field, `Reading ${root}…`);
  try {
    const { paths, plan } = await planFolder(field, files, root);
    const left = plan.left_out ? `; ${plan.left_out} left behind by .amlignore/.gitignore` : "";
    if (plan.problems.length) {
      showUpload(field, `${root} cannot be uploaded${left}:`, plan.problems);
      return;
    }
    showUpload(field, `Packing ${plan.files} files of ${root}…`);
    const archive = await packFolder(plan.keep.map((index) => [paths[index], files[index]]));
    if (archive.size > Number(field.dataset.maxBody)) {
      showUpload(field, `${root} packs into ${megabytes(archive.size)}; an upload has at most ${megabytes(Number(field.dataset.maxBody))}.`, ["Leave out what is not needed (.amlignore)."]);
      return;
    }
    setArchive(field, new File([archive], `${root}.tar.gz`, { type: "application/gzip" }), root);
    showUpload(field, `${root}: ${plan.files} files, ${megabytes(plan.bytes)} (${megabytes(archive.size)} packed)${left}. Uploaded when you submit.`);
  } catch (error) {
    showUpload(field, "The folder could not be read:", [error.message]);
  } finally {
    input.value = ""; // only the packed archive is posted
  }
}

function archivePicked(field, input) {
  const file = input.files[0];
  field.querySelector("[data-upload-name]").value = file ? file.name : "";
  if (!file) return showUpload(field, "");
  if (file.size > Number(field.dataset.maxBody)) {
    showUpload(field, `${file.name} has ${megabytes(file.size)}; an upload has at most ${megabytes(Number(field.dataset.maxBody))}.`, ["Choose a smaller archive."]);
    input.value = "";
    return;
  }
  showUpload(field, `${file.name}, ${megabytes(file.size)}: uploaded when you submit.`);
}

document.addEventListener("change", (event) => {
  const field = event.target.closest("[data-upload]");
  if (!field) return;
  if (event.target.matches("[data-upload-folder]")) folderPicked(field, event.target);
  else if (event.target.matches("[data-upload-archive]")) archivePicked(field, event.target);
});

// Size pickers: <div data-size-picker> holds radio rows (data-size-row, data-gpu, data-search, data-summary), a
// CPU/GPU switch (data-size-kind) and a search box (data-size-search). Filtering only hides rows: a chosen size stays
// chosen. The filters stop their events here, so the form's YAML preview does not refresh for them.
function filterSizes(picker) {
  const kind = picker.querySelector("[data-size-kind]:checked")?.value || "all";
  const words = picker.querySelector("[data-size-search]").value.trim().toLowerCase().split(/\s+/).filter(Boolean);
  let shown = 0;
  for (const row of picker.querySelectorAll("[data-size-row]")) {
    const fits = (kind === "all" || (kind === "gpu") === (row.dataset.gpu === "1"))
      && words.every((word) => row.dataset.search.includes(word));
    row.hidden = !fits;
    if (fits) shown += 1;
  }
  picker.querySelector("[data-size-count]").textContent = `${shown} size${shown === 1 ? "" : "s"}`;
  picker.querySelector("[data-size-none]").hidden = shown > 0;
}

function showChosenSize(picker) {
  const radio = picker.querySelector("[data-size-row] input:checked");
  const chosen = picker.querySelector("[data-size-chosen]");
  if (!radio) return;
  const row = radio.closest("[data-size-row]");
  chosen.replaceChildren("Selected: ");
  const name = document.createElement("span");
  name.className = "font-monospace fw-semibold";
  name.textContent = radio.value;
  chosen.append(name, ` — ${row.dataset.summary}`);
}

function setUpSizePicker(picker) {
  for (const filter of picker.querySelectorAll("[data-size-kind], [data-size-search]")) {
    for (const type of ["input", "change"]) {
      filter.addEventListener(type, (event) => {
        event.stopPropagation();
        filterSizes(picker);
      });
    }
  }
  // A click anywhere on a row picks its size (the radio's change event refreshes the YAML).
  picker.addEventListener("click", (event) => {
    const row = event.target.closest("[data-size-row]");
    const radio = row?.querySelector("input[type=radio]");
    if (!radio || event.target === radio || event.target.closest("label")) return;
    radio.checked = true;
    radio.dispatchEvent(new Event("change", { bubbles: true }));
  });
  picker.addEventListener("change", (event) => {
    if (event.target.closest("[data-size-row]")) showChosenSize(picker);
  });
  showChosenSize(picker);
  const checked = picker.querySelector("[data-size-row] input:checked")?.closest("tr");
  const wrap = picker.querySelector(".size-table-wrap");
  if (checked) wrap.scrollTop = checked.offsetTop - wrap.clientHeight / 2;
}

htmx.onLoad((root) => root.querySelectorAll("[data-size-picker]").forEach(setUpSizePicker));
