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
