// The command palette and keyboard shortcuts (layout mounts both on every page):
// - single-key shortcuts (`c`, `/`, `g b`, `g a`, …, `?`) unless typing in a field; Ctrl/Cmd-K anywhere;
// - the palette (`dialog#palette`, a combobox over a listbox) reads `GET /w/{slug}/palette?q=` (full-text
//   search hits, with the snippet of a body or comment match) and can open an issue, assign it, change its status, or go to a page; focus returns where it was on close.
(function () {
  "use strict";

  // The core part's CSRF reader, toasts and error page reader.
  var csrfToken = window.Muster.csrfToken;
  var toast = window.Muster.toast;
  var errorText = window.Muster.errorText;

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
      data.issues.forEach(function (is, rank) {
        var s = Math.max(score(is.key, q) * 1.5, score(is.title, q), score(is.key + " " + is.title, q));
        // A full-text hit (a word in the body or a comment, say) stays, in the server's order.
        if (is.matched_in && q) s = Math.max(s, 30 - rank / 10);
        var detail = is.matched_in === "body" || is.matched_in === "comment" ? "in " + is.matched_in + ": " + is.snippet : "";
        if (s || !q) items.push({ label: is.key + "  " + is.title, hint: is.status_label, detail: detail, score: s + 1, remote: true, run: function () { location.href = is.url; } });
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
      if (it.detail) {
        var detail = document.createElement("span");
        detail.className = "palette-snippet";
        detail.textContent = it.detail;
        label.appendChild(detail);
      }
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
    window.Muster.closeMenu(false); // the board's card menu, if one is open
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
})();
