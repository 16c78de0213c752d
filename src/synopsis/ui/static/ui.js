// synopsis's operator page: refresh the live parts of the page while it is open.
// Each element marked data-live (with an id) is replaced by the same element of the page
// fetched again; details left open stay open. Nothing runs when the page is hidden or while
// someone types in a field, and a failed fetch is tried again at the next tick.
"use strict";
(function () {
  const every = Number(document.body.dataset.refresh || "0");
  const said = document.getElementById("updated");
  if (!(every > 0) || !document.querySelector("[data-live]")) {
    return;
  }
  let busy = false;
  async function tick() {
    const active = document.activeElement;
    if (busy || document.hidden || (active && active.matches("input, textarea, select"))) {
      return;
    }
    busy = true;
    try {
      const response = await fetch(window.location.href, {
        credentials: "same-origin",
        headers: { "x-synopsis-refresh": "1" },
      });
      if (!response.ok || response.redirected) {
        return;
      }
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
      for (const node of fresh.querySelectorAll("[data-live][id]")) {
        const old = document.getElementById(node.id);
        if (!old || old.innerHTML === node.innerHTML) {
          continue;
        }
        const open = new Set(
          Array.from(old.querySelectorAll("details[id]")).filter((d) => d.open).map((d) => d.id)
        );
        const shut = new Set(
          Array.from(old.querySelectorAll("details[id]")).filter((d) => !d.open).map((d) => d.id)
        );
        old.replaceChildren(...Array.from(node.childNodes).map((n) => document.importNode(n, true)));
        for (const d of old.querySelectorAll("details[id]")) {
          if (open.has(d.id)) d.open = true;
          if (shut.has(d.id)) d.open = false;
        }
      }
      if (said) {
        said.textContent = "Updated " + new Date().toLocaleTimeString();
      }
    } catch (error) {
      if (said) {
        said.textContent = "Not updated: the server did not answer";
      }
    } finally {
      busy = false;
    }
  }
  window.setInterval(tick, every * 1000);
})();
