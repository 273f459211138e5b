// The board:
// - cards drag between and within columns, POSTing `status`, `index`, `_csrf` to the card's
//   `data-move-url`; the move shows at once and is undone, with a toast, if the server refuses it;
// - a card's menu link opens its menu (fetched on demand) in one shared popover instead of a page;
// - the filter form's empty fields are left out of the URL htmx pushes.
(function () {
  "use strict";

  // The core part's CSRF reader, toasts and error page reader, shared rather than written again.
  var csrfToken = window.Muster.csrfToken;
  var toast = window.Muster.toast;
  var errorText = window.Muster.errorText;

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

  // Escape closes the menu. This listener runs before the palette's shortcuts, which then see the key
  // handled; the palette closes the menu when it opens.
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && menu) {
      e.preventDefault();
      closeMenu(true);
    }
  });
  window.Muster.closeMenu = closeMenu;

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
