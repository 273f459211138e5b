// Muster's small enhancements, the first of the parts joined into app.js (web/src/assets.rs lists them in
// order). Every page works without app.js: forms post and redirect. This part:
// - htmx requests carry the CSRF token (meta tag) as `x-csrf-token`;
// - toasts, and `window.Muster`: the CSRF reader, toasts and the error page reader for the later parts;
// - `[data-copy]` buttons copy the value of the element their selector names;
// - `form[data-confirm]` asks before submitting, and an empty `_csrf` input is filled from the meta tag;
// - Ctrl/Cmd+Enter in a form field sends the form in this tab (not the browser's new-tab submit);
// - `<time datetime>` is shown in the reader's local time.
(function () {
  "use strict";

  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  document.addEventListener("htmx:configRequest", function (e) {
    e.detail.headers["x-csrf-token"] = csrfToken();
  });

  // ---- toasts -------------------------------------------------------------------------------
  function toast(message, kind) {
    var box = document.getElementById("toasts");
    if (!box) {
      box = document.createElement("div");
      box.id = "toasts";
      box.setAttribute("aria-live", "polite");
      document.body.appendChild(box);
    }
    var t = document.createElement("div");
    t.className = "toast toast-" + (kind || "error");
    t.setAttribute("role", kind === "ok" ? "status" : "alert");
    t.textContent = message;
    box.appendChild(t);
    setTimeout(function () { t.classList.add("toast-out"); }, 4500);
    setTimeout(function () { t.remove(); }, 5000);
  }

  // The error page's message, for a toast.
  function errorText(res) {
    return res.text().then(function (html) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var p = doc.querySelector("main p");
      var text = p ? p.textContent.trim() : "";
      return "(" + res.status + ")" + (text ? " " + text.slice(0, 200) : "");
    });
  }

  // The later parts of app.js (board, palette, …) use these rather than write them again.
  window.Muster = { csrfToken: csrfToken, toast: toast, errorText: errorText };

  // ---- copy, confirm, send, local times ------------------------------------------------------
  document.addEventListener("click", function (e) {
    var btn = e.target.closest && e.target.closest("[data-copy]");
    if (!btn) return;
    var source = document.querySelector(btn.getAttribute("data-copy"));
    if (!source) return;
    var text = source.value !== undefined ? source.value : source.textContent;
    var done = function () {
      var label = btn.textContent;
      btn.textContent = "Copied ✓";
      setTimeout(function () { btn.textContent = label; }, 2000);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { toast("Copy failed; select the text and copy it."); });
    } else {
      source.select();
      try { document.execCommand("copy"); done(); } catch (_) { toast("Copy failed; select the text and copy it."); }
    }
  });

  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!form || form.tagName !== "FORM") return;
    if (form.hasAttribute("data-confirm") && !window.confirm(form.getAttribute("data-confirm"))) {
      e.preventDefault();
      return;
    }
    // Fragments broadcast over the board socket are rendered once for everyone, with an empty `_csrf`.
    var csrf = form.querySelector('input[name="_csrf"]');
    if (csrf && !csrf.value) csrf.value = csrfToken();
  });

  // Ctrl/Cmd+Enter in a form's field sends the form in this tab (through htmx when the form is one of
  // its own): the browser's own Ctrl+Enter submits into a new tab and leaves this one filled in, so a
  // second send would duplicate what the first created.
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Enter" || !(e.ctrlKey || e.metaKey) || e.altKey || e.shiftKey || e.isComposing) return;
    var form = e.target && e.target.form;
    if (!form) return;
    e.preventDefault();
    if (form.requestSubmit) form.requestSubmit();
    else form.submit();
  });

  function localTimes(root) {
    if (!window.Intl) return;
    var fmt = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
    (root || document).querySelectorAll("time[datetime]").forEach(function (t) {
      var d = new Date(t.getAttribute("datetime"));
      if (!isNaN(d)) t.textContent = fmt.format(d);
    });
  }

  document.addEventListener("DOMContentLoaded", function () { localTimes(document); });
  document.addEventListener("htmx:load", function (e) { localTimes(e.target); });
})();
