// Muster's small enhancements. Every page works without this file: forms post and redirect.
// - htmx requests carry the CSRF token (meta tag) as `x-csrf-token`;
// - board cards drag between and within columns, POSTing `status`, `index`, `_csrf` to the card's
//   `data-move-url`; the move shows at once and is undone, with a toast, if the server refuses it;
// - `[data-copy]` buttons copy the value of the element their selector names;
// - `form[data-confirm]` asks before submitting, and an empty `_csrf` input is filled from the meta tag;
// - `<time datetime>` is shown in the reader's local time;
// - the run page's elapsed clock ticks, and its live socket resumes from the page's last seq.
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

  // ---- board drag and drop ------------------------------------------------------------------
  var drag = null; // { item, card, fromList, fromNext, dropped }

  function updateCounts() {
    document.querySelectorAll(".column").forEach(function (col) {
      var count = col.querySelector(".column-head .count");
      var list = col.querySelector("ol.cards");
      if (count && list) count.textContent = String(list.children.length);
    });
  }

  function itemAfter(list, y) {
    var items = Array.prototype.filter.call(list.children, function (li) {
      return !drag || li !== drag.item;
    });
    for (var i = 0; i < items.length; i++) {
      var r = items[i].getBoundingClientRect();
      if (y < r.top + r.height / 2) return items[i];
    }
    return null;
  }

  function clearTargets() {
    document.querySelectorAll(".column.drop-target").forEach(function (c) {
      c.classList.remove("drop-target");
    });
  }

  function putBack(d) {
    if (d.fromNext && d.fromNext.parentNode === d.fromList) d.fromList.insertBefore(d.item, d.fromNext);
    else d.fromList.appendChild(d.item);
    d.card.dataset.status = d.fromList.dataset.status;
    updateCounts();
  }

  function syncMoveSelect(card, status) {
    var select = card.querySelector('.card-move-form select[name="status"]');
    if (select) select.value = status;
  }

  function send(d) {
    var list = d.item.parentNode;
    var status = list.dataset.status;
    var index = Array.prototype.indexOf.call(list.children, d.item);
    if (list === d.fromList && d.item.nextElementSibling === d.fromNext) return;
    d.card.dataset.status = status;
    syncMoveSelect(d.card, status);
    updateCounts();
    var body = new URLSearchParams();
    body.set("status", status);
    body.set("index", String(index));
    body.set("_csrf", csrfToken());
    d.card.classList.add("saving");
    fetch(d.card.dataset.moveUrl, {
      method: "POST",
      headers: { "HX-Request": "true", "x-csrf-token": csrfToken() },
      body: body,
      credentials: "same-origin",
    })
      .then(function (res) {
        if (!res.ok) throw new Error("The server refused the move (" + res.status + ").");
      })
      .catch(function (err) {
        putBack(d);
        syncMoveSelect(d.card, d.fromList.dataset.status);
        toast("Could not move " + d.card.dataset.key + ": " + (err && err.message ? err.message : "network error"));
      })
      .finally(function () { d.card.classList.remove("saving"); });
  }

  document.addEventListener("dragstart", function (e) {
    var card = e.target.closest && e.target.closest('.card[draggable="true"]');
    if (!card || !card.parentNode) return;
    var item = card.parentNode;
    drag = { item: item, card: card, fromList: item.parentNode, fromNext: item.nextElementSibling, dropped: false };
    e.dataTransfer.effectAllowed = "move";
    e.dataTransfer.setData("text/plain", card.dataset.key || "");
    requestAnimationFrame(function () { card.classList.add("dragging"); });
  });

  document.addEventListener("dragover", function (e) {
    if (!drag) return;
    var col = e.target.closest && e.target.closest(".column");
    var list = col && col.querySelector("ol.cards");
    if (!list) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = "move";
    if (!col.classList.contains("drop-target")) {
      clearTargets();
      col.classList.add("drop-target");
    }
    var after = itemAfter(list, e.clientY);
    if (after) {
      if (after !== drag.item.nextElementSibling) list.insertBefore(drag.item, after);
    } else if (list.lastElementChild !== drag.item) {
      list.appendChild(drag.item);
    }
  });

  document.addEventListener("drop", function (e) {
    if (!drag) return;
    e.preventDefault();
    drag.dropped = true;
  });

  document.addEventListener("dragend", function () {
    if (!drag) return;
    var d = drag;
    drag = null;
    d.card.classList.remove("dragging");
    clearTargets();
    if (d.dropped) send(d);
    else putBack(d);
  });

  // ---- copy, confirm, local times -----------------------------------------------------------
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

  function localTimes(root) {
    if (!window.Intl) return;
    var fmt = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
    (root || document).querySelectorAll("time[datetime]").forEach(function (t) {
      var d = new Date(t.getAttribute("datetime"));
      if (!isNaN(d)) t.textContent = fmt.format(d);
    });
  }

  // ---- run page: the elapsed clock, and a live log that resumes from the page's cursor ---------
  // `.elapsed[data-started]` ticks every second until it gets `data-finished`. The run page's socket
  // URL carries `after=<seq>`; on a reconnect the ws extension reuses the first URL, so the socket
  // factory swaps in the seq the page holds now (`#run-<id>-cursor[data-seq]`): nothing twice, nothing lost.
  function elapsedText(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    var pad = function (n) { return (n < 10 ? "0" : "") + n; };
    if (s >= 3600) return Math.floor(s / 3600) + "h " + pad(Math.floor((s % 3600) / 60)) + "m";
    if (s >= 60) return Math.floor(s / 60) + "m " + pad(s % 60) + "s";
    return s + "s";
  }

  function tickElapsed() {
    document.querySelectorAll(".elapsed[data-started]").forEach(function (el) {
      var start = Date.parse(el.getAttribute("data-started"));
      var done = el.getAttribute("data-finished");
      var end = done ? Date.parse(done) : Date.now();
      if (!isNaN(start) && !isNaN(end)) el.textContent = elapsedText(end - start);
    });
  }
  setInterval(tickElapsed, 1000);

  if (window.htmx) {
    var openSocket = htmx.createWebSocket;
    htmx.createWebSocket = function (url) {
      var page = document.querySelector(".run-live[data-run]");
      var cursor = page && document.getElementById("run-" + page.getAttribute("data-run") + "-cursor");
      if (cursor && /[?&]after=\d+/.test(url)) {
        url = url.replace(/([?&]after=)\d+/, "$1" + (cursor.getAttribute("data-seq") || "0"));
      }
      return openSocket ? openSocket(url) : new WebSocket(url, []);
    };
  }

  document.addEventListener("DOMContentLoaded", function () { localTimes(document); tickElapsed(); });
  document.addEventListener("htmx:load", function (e) { localTimes(e.target); });
})();

// == 17-issue: in-place editing on the issue page ==
// An in-place form ([data-swap-invalid]) answered 422 gets the page again with its messages: swap it in
// like a success, so the form shows what to fix with the input kept.
(function () {
  "use strict";
  document.addEventListener("htmx:beforeSwap", function (e) {
    var elt = e.detail.elt;
    if (e.detail.xhr.status === 422 && elt && elt.closest && elt.closest("[data-swap-invalid]")) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
})();
