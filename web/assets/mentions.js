// @mention autocompletion for every `textarea[data-mentions]` (a JSON list of {name, label, kind},
// written by the server). Typing `@` (at the start, or after a character that cannot be part of an
// email address: the server's grammar) then letters opens a listbox of matching agents and people under
// the field; ArrowDown/ArrowUp move, Enter or Tab picks, Escape closes, a click picks. A pick replaces
// `@partial` with `@name `. The textarea gets aria-autocomplete, aria-expanded, aria-controls and
// aria-activedescendant; the list is role=listbox with role=option items. Without this file the
// textarea is a plain one and a typed `@name` still mentions. A box's `.comment-wakes` line says whom
// sending the text as typed wakes.
(function () {
  "use strict";

  var MAX = 8;
  var lists = 0;
  // The open list: {ta, list, matches, active, start}; null when closed.
  var open = null;

  function names(ta) {
    try {
      var v = JSON.parse(ta.getAttribute("data-mentions") || "[]");
      return Array.isArray(v) ? v : [];
    } catch (e) {
      return [];
    }
  }

  // The `@partial` just before the caret, as {start, text}, or null.
  function partial(ta) {
    if (ta.selectionStart !== ta.selectionEnd) return null;
    var before = ta.value.slice(0, ta.selectionStart);
    var m = /(^|[^\p{L}\p{N}._@-])@([\p{L}\p{N}_.-]*)$/u.exec(before);
    return m ? { start: before.length - m[2].length - 1, text: m[2] } : null;
  }

  // Names starting with the text first, then names or labels containing it.
  function matching(all, text) {
    var q = text.toLowerCase();
    var starts = [], contains = [];
    all.forEach(function (o) {
      var name = String(o.name).toLowerCase();
      if (name.indexOf(q) === 0) starts.push(o);
      else if (q && (name.indexOf(q) > 0 || String(o.label).toLowerCase().indexOf(q) >= 0)) contains.push(o);
    });
    return starts.concat(contains).slice(0, MAX);
  }

  function listFor(ta) {
    var id = ta.getAttribute("aria-controls");
    var list = id && document.getElementById(id);
    if (list) return list;
    list = document.createElement("ul");
    list.id = "mention-list-" + (++lists);
    list.className = "mention-list";
    list.setAttribute("role", "listbox");
    list.setAttribute("aria-label", "Mention");
    list.hidden = true;
    ta.insertAdjacentElement("afterend", list);
    ta.setAttribute("aria-controls", list.id);
    // Keep the focus in the textarea while clicking an option.
    list.addEventListener("mousedown", function (e) { e.preventDefault(); });
    list.addEventListener("click", function (e) {
      var li = e.target.closest("[role=option]");
      if (li && open && open.list === list) pick(Number(li.getAttribute("data-index")));
    });
    return list;
  }

  function close() {
    if (!open) return;
    open.list.hidden = true;
    open.list.textContent = "";
    open.ta.setAttribute("aria-expanded", "false");
    open.ta.removeAttribute("aria-activedescendant");
    open = null;
  }

  function highlight(i) {
    open.active = i;
    Array.prototype.forEach.call(open.list.children, function (li, j) {
      li.setAttribute("aria-selected", j === i ? "true" : "false");
    });
    var li = open.list.children[i];
    open.ta.setAttribute("aria-activedescendant", li.id);
    li.scrollIntoView({ block: "nearest" });
  }

  function show(ta, at, matches) {
    var list = listFor(ta);
    if (open && open.ta !== ta) close();
    list.textContent = "";
    matches.forEach(function (o, i) {
      var li = document.createElement("li");
      li.id = list.id + "-" + i;
      li.className = "mention-option mention-" + (o.kind === "agent" ? "agent" : "person");
      li.setAttribute("role", "option");
      li.setAttribute("data-index", String(i));
      li.setAttribute("data-name", o.name);
      var name = document.createElement("span");
      name.className = "mention-name";
      name.textContent = "@" + o.name;
      var label = document.createElement("span");
      label.className = "mention-label";
      label.textContent = (o.kind === "agent" ? "agent" : "person") + (o.label ? " \u00b7 " + o.label : "");
      li.append(name, label);
      list.appendChild(li);
    });
    list.style.top = ta.offsetTop + ta.offsetHeight + 2 + "px";
    list.style.left = ta.offsetLeft + "px";
    list.hidden = false;
    ta.setAttribute("aria-expanded", "true");
    open = { ta: ta, list: list, matches: matches, active: 0, start: at.start };
    highlight(0);
  }

  function update(ta) {
    var at = partial(ta);
    var matches = at ? matching(names(ta), at.text) : [];
    if (!matches.length) return close();
    show(ta, at, matches);
  }

  function pick(i) {
    var ta = open.ta, o = open.matches[i], start = open.start;
    var end = ta.selectionStart;
    var insert = "@" + o.name + " ";
    ta.value = ta.value.slice(0, start) + insert + ta.value.slice(end);
    var caret = start + insert.length;
    ta.setSelectionRange(caret, caret);
    close();
    ta.focus();
    sayWakes(ta);
  }

  function mentionBox(t) {
    return t instanceof HTMLTextAreaElement && t.hasAttribute("data-mentions") ? t : null;
  }

  document.addEventListener("focusin", function (e) {
    var ta = mentionBox(e.target);
    if (ta && !ta.hasAttribute("aria-autocomplete")) {
      ta.setAttribute("aria-autocomplete", "list");
      ta.setAttribute("aria-haspopup", "listbox");
      ta.setAttribute("aria-expanded", "false");
    }
  });
  document.addEventListener("focusout", function (e) {
    if (open && e.target === open.ta) close();
  });
  // Whom sending wakes, for the text as typed (the server's rule, `domain::woken_by_comment`): a
  // comment that mentions anybody wakes the agents it mentions; one that mentions nobody wakes the
  // assigned agent (`data-assignee` of the box's `.comment-wakes` line, empty when none).
  function mentioned(ta) {
    var known = names(ta), found = [], re = /(^|[^\p{L}\p{N}._@-])@([\p{L}\p{N}_.-]+)/gu, m;
    while ((m = re.exec(ta.value))) {
      var name = m[2].replace(/\.+$/, "").toLowerCase();
      var hit = known.filter(function (o) { return String(o.name).toLowerCase() === name; })
        .sort(function (a, b) { return (a.kind === "agent" ? 0 : 1) - (b.kind === "agent" ? 0 : 1); })[0];
      if (hit && found.indexOf(hit) < 0) found.push(hit);
    }
    return found;
  }

  function sayWakes(ta) {
    var line = ta.parentNode && ta.parentNode.querySelector(".comment-wakes");
    if (!line) return;
    var found = mentioned(ta), assignee = line.getAttribute("data-assignee") || "";
    var agents = found.length
      ? found.filter(function (o) { return o.kind === "agent"; }).map(function (o) { return o.name; })
      : (assignee ? [assignee] : []);
    line.textContent = agents.length
      ? "Sending this wakes " + agents.join(", ") + "."
      : "Sending this wakes no agent" + (found.length ? ": it mentions only people." : ".");
  }

  document.addEventListener("input", function (e) {
    var ta = mentionBox(e.target);
    if (ta) {
      update(ta);
      sayWakes(ta);
    }
  });
  function sayAll(root) {
    (root || document).querySelectorAll("textarea[data-mentions]").forEach(sayWakes);
  }
  document.addEventListener("DOMContentLoaded", function () { sayAll(document); });
  document.addEventListener("htmx:load", function (e) { sayAll(e.target); });
  document.addEventListener("click", function (e) {
    var ta = mentionBox(e.target);
    if (ta) update(ta);
  });
  document.addEventListener("keydown", function (e) {
    if (!open || e.target !== open.ta) return;
    var n = open.matches.length;
    if (e.key === "ArrowDown") highlight((open.active + 1) % n);
    else if (e.key === "ArrowUp") highlight((open.active + n - 1) % n);
    else if (e.key === "Enter" || e.key === "Tab") pick(open.active);
    else if (e.key === "Escape") close();
    else {
      // The caret leaves the `@partial`: the list no longer applies.
      if (/^(ArrowLeft|ArrowRight|Home|End|PageUp|PageDown)$/.test(e.key)) close();
      return;
    }
    e.preventDefault();
    e.stopPropagation();
  }, true);
})();
