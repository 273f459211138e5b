// Muster's small enhancements. Every page works without this file: forms post and redirect.
// - htmx requests carry the CSRF token (meta tag) as `x-csrf-token`;
// - board cards drag between and within columns, POSTing `status`, `index`, `_csrf` to the card's
//   `data-move-url`; the move shows at once and is undone, with a toast, if the server refuses it;
// - `[data-copy]` buttons copy the value of the element their selector names;
// - `form[data-confirm]` asks before submitting, and an empty `_csrf` input is filled from the meta tag;
// - Ctrl/Cmd+Enter in a form field sends the form in this tab (not the browser's new-tab submit);
// - `<time datetime>` is shown in the reader's local time;
// - task-list boxes of an issue's description (`[data-tasks-url] input[data-task]`) can be ticked: each
//   change POSTs `task`, `done`, the description's `digest` and `_csrf`; a refusal undoes it, with a toast;
// - the run page's elapsed clock ticks, its live socket resumes from the page's last seq, and its log
//   follows the tail while the reader is at the bottom.
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

  // The later blocks of this file (palette, card menu) use the same two.
  window.Muster = { csrfToken: csrfToken, toast: toast };

  // ---- board drag and drop ------------------------------------------------------------------
  var drag = null; // { item, card, fromList, fromNext, dropped }

  // A column's count is how many issues it holds (the server's figure, paging aside): a move here
  // shifts one between two counts, and "+ N more" is the count less the cards shown.
  function bump(list, delta) {
    var count = list.closest(".column") && list.closest(".column").querySelector(".column-head .count");
    if (count) count.textContent = String(Math.max(0, (parseInt(count.textContent, 10) || 0) + delta));
  }

  function updateRests() {
    document.querySelectorAll(".column").forEach(function (col) {
      var count = col.querySelector(".column-head .count");
      var list = col.querySelector("ol.cards");
      var rest = col.querySelector(".more-rest");
      if (count && list && rest) {
        var n = (parseInt(count.textContent, 10) || 0) - list.children.length;
        rest.textContent = "+ " + Math.max(n, 0) + " more";
      }
    });
  }

  document.addEventListener("htmx:wsAfterMessage", updateRests);

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
    var now = d.item.parentNode;
    if (d.fromNext && d.fromNext.parentNode === d.fromList) d.fromList.insertBefore(d.item, d.fromNext);
    else d.fromList.appendChild(d.item);
    d.card.dataset.status = d.fromList.dataset.status;
    if (d.counted && now && now !== d.fromList) {
      bump(now, -1);
      bump(d.fromList, 1);
    }
    updateRests();
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
    if (list !== d.fromList) {
      bump(d.fromList, -1);
      bump(list, 1);
      d.counted = true;
    }
    updateRests();
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

  // ---- task-list boxes ------------------------------------------------------------------------
  function enableTasks(root) {
    (root || document).querySelectorAll("[data-tasks-url] input[data-task]").forEach(function (box) {
      box.disabled = false;
    });
  }

  document.addEventListener("change", function (e) {
    var box = e.target;
    if (!box || !box.matches || !box.matches("input[data-task]")) return;
    var holder = box.closest("[data-tasks-url]");
    if (!holder) return;
    var body = new URLSearchParams();
    body.set("task", box.getAttribute("data-task"));
    body.set("done", box.checked ? "true" : "false");
    body.set("digest", holder.getAttribute("data-digest") || "");
    body.set("_csrf", csrfToken());
    box.disabled = true;
    fetch(holder.getAttribute("data-tasks-url"), {
      method: "POST",
      headers: { "x-csrf-token": csrfToken(), "Accept": "application/json" },
      body: body,
      credentials: "same-origin"
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (answer) {
        if (r.ok && answer.digest) {
          holder.setAttribute("data-digest", answer.digest);
          return;
        }
        box.checked = !box.checked;
        var errors = (answer && answer.errors) || {};
        var first = Object.keys(errors).map(function (k) { return errors[k][0]; })[0];
        toast(first || ("The box could not be saved (" + r.status + ")"));
      });
    }, function () {
      box.checked = !box.checked;
      toast("The box could not be saved: the server did not answer");
    }).then(function () { box.disabled = false; });
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

  // A live log follows its tail while the reader is at the bottom of the page; scrolling up to read
  // stops that, scrolling back down resumes it.
  var atBottom = true;
  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 48;
  }
  window.addEventListener("scroll", function () { atBottom = nearBottom(); }, { passive: true });
  function followTail() {
    var log = document.querySelector("ol.run-log");
    if (!log || !window.MutationObserver) return;
    atBottom = nearBottom();
    new MutationObserver(function () {
      if (atBottom) window.scrollTo(0, document.documentElement.scrollHeight);
    }).observe(log, { childList: true, subtree: true });
  }

  document.addEventListener("DOMContentLoaded", function () { localTimes(document); tickElapsed(); followTail(); enableTasks(document); });
  document.addEventListener("htmx:load", function (e) { localTimes(e.target); enableTasks(e.target); });
})();

// == 17-board: shortcuts, command palette, card menu, instant filters ==
// - single-key shortcuts (`c`, `/`, `g b`, `g a`, …, `?`) unless typing in a field; Ctrl/Cmd-K anywhere;
// - the palette (`dialog#palette`, a combobox over a listbox) reads `GET /w/{slug}/palette?q=` and can
//   open an issue, assign it, change its status, or go to a page; focus returns where it was on close;
// - a card's menu link opens its menu (fetched on demand) in one shared popover instead of a page;
// - the filter form's empty fields are left out of the URL htmx pushes.
(function () {
  "use strict";

  // The first block's CSRF reader and toasts, shared rather than written again.
  var csrfToken = window.Muster.csrfToken;

  var toast = window.Muster.toast;

  // The error page's message, for a toast.
  function errorText(res) {
    return res.text().then(function (html) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var p = doc.querySelector("main p");
      var text = p ? p.textContent.trim() : "";
      return "(" + res.status + ")" + (text ? " " + text.slice(0, 200) : "");
    });
  }

  function post(url, fields) {
    var body = new URLSearchParams();
    Object.keys(fields).forEach(function (k) { body.set(k, fields[k]); });
    body.set("_csrf", csrfToken());
    return fetch(url, {
      method: "POST",
      headers: { "HX-Request": "true", "x-csrf-token": csrfToken() },
      body: body,
      credentials: "same-origin",
    }).then(function (res) {
      if (res.ok) return res;
      return errorText(res).then(function (t) { throw new Error(t); });
    });
  }

  function mount() { return document.getElementById("palette"); }
  function base() { var m = mount(); return m ? m.getAttribute("data-base") : null; }

  function typing(el) {
    if (!el || el === document.body) return false;
    if (el.isContentEditable) return true;
    var tag = el.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT") return true;
    if (tag !== "INPUT") return false;
    return ["button", "submit", "reset", "checkbox", "radio", "range", "color", "file", "image"].indexOf(el.type) < 0;
  }

  function openDialog() { return document.querySelector("dialog[open]"); }

  // ---- card menu: one popover per page, filled on demand ------------------------------------
  var menu = null; // { box, link, key }

  var refocusKey = null; // the card whose menu link gets focus back once the live board redraws it

  function menuLink(key) { return document.querySelector("#card-" + CSS.escape(key) + " .card-menu"); }

  function closeMenu(refocus, changed) {
    if (!menu) return;
    var m = menu;
    menu = null;
    m.box.hidden = true;
    m.box.innerHTML = "";
    if (refocus) {
      var link = document.contains(m.link) ? m.link : menuLink(m.key);
      if (link) link.focus();
    }
    if (changed) refocusKey = m.key;
  }

  document.addEventListener("htmx:wsAfterMessage", function () {
    var key = refocusKey;
    refocusKey = null;
    var focused = document.activeElement;
    if (key && (!focused || focused === document.body)) {
      var link = menuLink(key);
      if (link) link.focus();
    }
  });

  function openMenu(link) {
    var card = link.closest(".card");
    var key = card ? card.getAttribute("data-key") : "";
    closeMenu(false);
    var box = document.getElementById("card-menu");
    if (!box) {
      box = document.createElement("div");
      box.id = "card-menu";
      box.className = "card-menu-pop";
      box.setAttribute("role", "dialog");
      box.hidden = true;
      document.body.appendChild(box);
    }
    box.setAttribute("aria-label", "Status and assignee of " + key);
    menu = { box: box, link: link, key: key };
    var mine = menu;
    fetch(link.href, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (res) {
        if (!res.ok) return errorText(res).then(function (t) { throw new Error(t); });
        return res.text();
      })
      .then(function (html) {
        if (menu !== mine) return;
        box.innerHTML = html;
        if (window.htmx) htmx.process(box);
        box.hidden = false;
        var r = link.getBoundingClientRect();
        var width = box.offsetWidth;
        var left = Math.max(8, Math.min(r.right - width, document.documentElement.clientWidth - width - 8));
        box.style.left = left + window.scrollX + "px";
        box.style.top = r.bottom + window.scrollY + 4 + "px";
        var first = box.querySelector('button[aria-pressed="true"]') || box.querySelector("button");
        if (first) first.focus();
      })
      .catch(function (err) {
        if (menu === mine) closeMenu(true);
        toast("Could not open the menu of " + key + ": " + err.message);
      });
  }

  document.addEventListener("click", function (e) {
    var link = e.target.closest && e.target.closest("a.card-menu");
    if (link && !e.ctrlKey && !e.metaKey && !e.shiftKey && e.button === 0) {
      e.preventDefault();
      if (menu && menu.link === link) closeMenu(true);
      else openMenu(link);
      return;
    }
    if (menu && !menu.box.contains(e.target)) closeMenu(false);
  });

  document.addEventListener("htmx:afterRequest", function (e) {
    if (!menu || !menu.box.contains(e.target)) return;
    var xhr = e.detail.xhr;
    if (e.detail.successful) {
      closeMenu(true, true);
      return;
    }
    var doc = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
    var p = doc.querySelector("main p");
    toast("Could not change " + menu.key + " (" + xhr.status + ")" + (p ? ": " + p.textContent.trim() : ""));
  });

  window.addEventListener("resize", function () { closeMenu(false); });

  // ---- command palette ----------------------------------------------------------------------
  var pal = {
    opener: null, data: null, items: [], active: 0, mode: null, seq: 0, pending: null, context: null,
  };

  function score(text, q) {
    text = text.toLowerCase();
    if (!q) return 1;
    if (text === q) return 100;
    if (text.indexOf(q) === 0) return 60;
    var at = text.indexOf(q);
    if (at > 0) return 40 - Math.min(at, 30) / 10;
    // Fuzzy: every typed letter in order.
    var i = 0;
    for (var c = 0; c < text.length && i < q.length; c++) if (text[c] === q[i]) i++;
    return i === q.length ? 10 : 0;
  }

  // The issue the palette acts on: an exact key typed, else the focused card, else the issue page's.
  function contextKey(q) {
    var issues = (pal.data && pal.data.issues) || [];
    for (var i = 0; i < issues.length; i++) if (issues[i].key.toLowerCase() === q) return issues[i].key;
    return pal.context;
  }

  function build(keep) {
    var input = document.getElementById("palette-input");
    var q = input.value.trim().toLowerCase();
    var data = pal.data;
    var items = [];
    if (!data) {
      items.push({ label: "Loading…", disabled: true });
    } else if (pal.mode && pal.mode.type === "assign") {
      var key = pal.mode.key;
      var nobody = { label: "Nobody", hint: "unassign", run: function () { assign(key, "", "nobody"); } };
      if (score("nobody", q)) items.push(nobody);
      data.people.forEach(function (p) {
        var s = score(p.name, q);
        if (s) items.push({ label: p.name, hint: p.kind, avatar: p.avatar, score: s, run: function () { assign(key, p.value, p.name); } });
      });
    } else if (pal.mode && pal.mode.type === "status") {
      var k2 = pal.mode.key;
      data.statuses.forEach(function (st) {
        var s = Math.max(score(st.label, q), score(st.value, q));
        if (s) items.push({ label: st.label, score: s, run: function () { move(k2, st.value, st.label); } });
      });
    } else {
      var ctx = contextKey(q);
      if (ctx) {
        var exact = q === ctx.toLowerCase();
        var verbs = [
          { label: "Assign " + ctx + " to…", words: "assign " + ctx, run: function () { enter({ type: "assign", key: ctx }); } },
          { label: "Change status of " + ctx + "…", words: "status move " + ctx, run: function () { enter({ type: "status", key: ctx }); } },
        ];
        verbs.forEach(function (v) {
          var s = exact ? 50 : score(v.words, q);
          if (s) items.push({ label: v.label, hint: "action", score: s, run: v.run });
        });
      }
      data.issues.forEach(function (is) {
        var s = Math.max(score(is.key, q) * 1.5, score(is.title, q), score(is.key + " " + is.title, q));
        if (s || !q) items.push({ label: is.key + "  " + is.title, hint: is.status_label, score: s + 1, remote: true, run: function () { location.href = is.url; } });
      });
      data.pages.forEach(function (pg) {
        var s = score("go to " + pg.label, q) || score(pg.label, q);
        if (s) items.push({ label: "Go to " + pg.label, hint: "page", score: s, run: function () { location.href = pg.value; } });
      });
      var extra = [
        { label: "New issue", hint: "c", run: function () { close(false); newIssue(); } },
        { label: "Keyboard shortcuts", hint: "?", run: function () { close(false); showShortcuts(); } },
      ];
      extra.forEach(function (x) { var s = score(x.label, q); if (s) items.push({ label: x.label, hint: x.hint, score: s, run: x.run }); });
    }
    items.sort(function (a, b) { return (b.score || 0) - (a.score || 0); });
    if (data && !items.length) items.push({ label: "Nothing matches “" + input.value.trim() + "”", disabled: true });
    // Keep the highlighted choice when fresh results arrive and it is still offered.
    var was = pal.items[pal.active];
    pal.items = items.slice(0, 30);
    pal.active = 0;
    if (was && keep) {
      for (var i = 0; i < pal.items.length; i++) if (pal.items[i].label === was.label) pal.active = i;
    }
    render();
  }

  function render() {
    var list = document.getElementById("palette-list");
    var input = document.getElementById("palette-input");
    list.textContent = "";
    pal.items.forEach(function (it, i) {
      var li = document.createElement("li");
      li.id = "palette-opt-" + i;
      li.setAttribute("role", "option");
      li.className = "palette-item";
      li.setAttribute("aria-selected", i === pal.active ? "true" : "false");
      if (it.disabled) li.setAttribute("aria-disabled", "true");
      if (it.avatar) {
        var av = document.createElement("span");
        av.className = "palette-avatar";
        av.innerHTML = it.avatar; // our server's own rendering of the avatar widget, escaped by maud
        li.appendChild(av);
      }
      var label = document.createElement("span");
      label.className = "palette-label";
      label.textContent = it.label;
      li.appendChild(label);
      if (it.hint) {
        var hint = document.createElement("span");
        hint.className = "palette-hint";
        hint.textContent = it.hint;
        li.appendChild(hint);
      }
      li.addEventListener("mousedown", function (e) { e.preventDefault(); });
      li.addEventListener("click", function () { pal.active = i; runActive(); });
      list.appendChild(li);
    });
    var active = pal.items.length ? "palette-opt-" + pal.active : "";
    if (active) input.setAttribute("aria-activedescendant", active);
    else input.removeAttribute("aria-activedescendant");
    var el = document.getElementById(active);
    if (el) el.scrollIntoView({ block: "nearest" });
  }

  function load() {
    var m = mount();
    var input = document.getElementById("palette-input");
    var q = pal.mode ? "" : input.value.trim();
    var seq = ++pal.seq;
    pal.pending = fetch(m.getAttribute("data-url") + "?q=" + encodeURIComponent(q), { credentials: "same-origin" })
      .then(function (res) {
        if (!res.ok) throw new Error("(" + res.status + ")");
        return res.json();
      })
      .then(function (data) {
        if (seq !== pal.seq) return;
        pal.data = data;
        pal.pending = null;
        build(true);
      })
      .catch(function (err) {
        if (seq !== pal.seq) return;
        pal.pending = null;
        toast("The command palette could not load " + err.message);
      });
  }

  var typingTimer = null;
  function onInput() {
    build();
    if (pal.mode) return;
    clearTimeout(typingTimer);
    pal.pending = new Promise(function (resolve) {
      typingTimer = setTimeout(function () { load(); resolve(pal.pending); }, 120);
    });
  }

  function enter(mode) {
    pal.mode = mode;
    var input = document.getElementById("palette-input");
    input.value = "";
    input.setAttribute("placeholder", mode.type === "assign" ? "Assign " + mode.key + " to…" : "Move " + mode.key + " to…");
    build();
  }

  function runActive() {
    var go = function () {
      var it = pal.items[pal.active];
      if (it && !it.disabled && it.run) it.run();
    };
    // Enter right after typing a search: wait for the server's answer to what was typed, unless the
    // choice does not depend on it (an action, a person, a status, a page).
    var it = pal.items[pal.active];
    var waits = !pal.data || !it || it.disabled || it.remote;
    if (pal.pending && waits) Promise.resolve(pal.pending).then(function () { return pal.pending; }).then(go);
    else go();
  }

  function done(message) {
    close(true);
    toast(message, "ok");
    // The board follows over its live socket; other pages show the change after a reload.
    if (!document.getElementById("board-live")) location.reload();
  }

  function assign(key, value, name) {
    post(base() + "/issues/" + encodeURIComponent(key) + "/assign", { assignee: value })
      .then(function () { done(key + (value ? " assigned to " + name : " unassigned")); })
      .catch(function (err) { toast("Could not assign " + key + ": " + err.message); });
  }

  function move(key, status, label) {
    post(base() + "/issues/" + encodeURIComponent(key) + "/move", { status: status })
      .then(function () { done(key + " moved to " + label); })
      .catch(function (err) { toast("Could not move " + key + ": " + err.message); });
  }

  function openPalette() {
    var m = mount();
    if (!m || m.open) return;
    closeMenu(false);
    var other = openDialog();
    if (other) other.close();
    pal.opener = document.activeElement;
    var card = pal.opener && pal.opener.closest && pal.opener.closest(".card");
    var page = location.pathname.match(/\/issues\/([A-Za-z0-9]+-\d+)$/);
    pal.context = card ? card.getAttribute("data-key") : page ? page[1].toUpperCase() : null;
    pal.mode = null;
    pal.data = null;
    var input = document.getElementById("palette-input");
    input.value = "";
    input.setAttribute("placeholder", input.getAttribute("data-placeholder") || input.getAttribute("placeholder"));
    if (!input.getAttribute("data-placeholder")) input.setAttribute("data-placeholder", input.getAttribute("placeholder"));
    m.showModal();
    input.focus();
    build();
    load();
  }

  function close(refocus) {
    var m = mount();
    if (m && m.open) {
      pal.refocus = refocus;
      m.close();
    }
  }

  function showShortcuts() {
    var d = document.getElementById("shortcuts");
    if (!d || d.open) return;
    var other = openDialog();
    if (other) other.close();
    d.__opener = document.activeElement;
    d.showModal();
  }

  function newIssue() {
    var details = document.querySelector("details.new-issue");
    if (!details) {
      if (base()) location.href = base() + "#new-issue";
      return;
    }
    details.open = true;
    var title = document.getElementById("new-issue-title");
    if (title) title.focus();
  }

  function focusSearch() {
    var q = document.getElementById("filter-q");
    if (!q) {
      if (base()) location.href = base() + "#search";
      return;
    }
    q.focus();
    q.select();
  }

  document.addEventListener("DOMContentLoaded", function () {
    var m = mount();
    if (m) {
      var input = document.getElementById("palette-input");
      input.addEventListener("input", onInput);
      input.addEventListener("keydown", function (e) {
        if (e.key === "ArrowDown" || e.key === "ArrowUp") {
          e.preventDefault();
          if (!pal.items.length) return;
          pal.active = (pal.active + (e.key === "ArrowDown" ? 1 : pal.items.length - 1)) % pal.items.length;
          render();
        } else if (e.key === "Enter") {
          e.preventDefault();
          runActive();
        } else if (e.key === "Backspace" && !input.value && pal.mode) {
          e.preventDefault();
          pal.mode = null;
          input.setAttribute("placeholder", input.getAttribute("data-placeholder"));
          build();
        }
      });
      m.addEventListener("close", function () {
        var back = pal.opener;
        pal.opener = null;
        pal.seq++;
        pal.pending = null;
        if (back && document.contains(back) && back.focus) back.focus();
      });
      // A click on the backdrop (outside the box) closes it.
      m.addEventListener("click", function (e) { if (e.target === m) m.close(); });
    }
    var sc = document.getElementById("shortcuts");
    if (sc) {
      sc.addEventListener("close", function () {
        var back = sc.__opener;
        sc.__opener = null;
        if (back && document.contains(back) && back.focus) back.focus();
      });
      sc.addEventListener("click", function (e) { if (e.target === sc) sc.close(); });
    }
    document.querySelectorAll(".palette-open").forEach(function (b) {
      b.hidden = false;
      b.addEventListener("click", openPalette);
    });
    if (location.hash === "#new-issue") newIssue();
    if (location.hash === "#search") focusSearch();
  });

  // ---- shortcuts ----------------------------------------------------------------------------
  var GO = { b: "", a: "/agents", i: "/inbox", s: "/skills", m: "/members", r: "/runtimes" };
  var pendingG = 0;

  document.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && (e.key === "k" || e.key === "K")) {
      if (!mount()) return;
      e.preventDefault();
      if (mount().open) close(true);
      else openPalette();
      return;
    }
    if (e.key === "Escape" && menu) {
      e.preventDefault();
      closeMenu(true);
      return;
    }
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    if (openDialog() || typing(e.target) || !base()) return;
    var now = Date.now();
    if (pendingG && now - pendingG < 1500 && Object.prototype.hasOwnProperty.call(GO, e.key)) {
      pendingG = 0;
      e.preventDefault();
      location.href = base() + GO[e.key];
      return;
    }
    pendingG = 0;
    if (e.key === "g") { pendingG = now; return; }
    if (e.key === "?") { e.preventDefault(); showShortcuts(); return; }
    if (e.key === "/") { e.preventDefault(); focusSearch(); return; }
    if (e.key === "c") { e.preventDefault(); newIssue(); }
  });

  // ---- instant filters: leave empty fields out of the URL -----------------------------------
  document.addEventListener("htmx:configRequest", function (e) {
    if (!e.detail.elt || !e.detail.elt.matches || !e.detail.elt.matches("form.filters")) return;
    var params = e.detail.parameters;
    var keys = [];
    if (params instanceof FormData) params.forEach(function (_, k) { keys.push(k); });
    else keys = Object.keys(params);
    keys.forEach(function (k) {
      var v = params instanceof FormData ? params.get(k) : params[k];
      if (v === "" || v === null) {
        if (params instanceof FormData) params.delete(k);
        else delete params[k];
      }
    });
  });
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
