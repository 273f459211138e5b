// The issue page:
// - task-list boxes of an issue's description (`[data-tasks-url] input[data-task]`) can be ticked: each
//   change POSTs `task`, `done`, the description's `digest` and `_csrf`; a refusal undoes it, with a toast;
// - an in-place form ([data-swap-invalid]) answered 422 gets the page again with its messages: swap it in
//   like a success, so the form shows what to fix with the input kept.
(function () {
  "use strict";

  // The core part's CSRF reader and toasts.
  var csrfToken = window.Muster.csrfToken;
  var toast = window.Muster.toast;

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

  document.addEventListener("DOMContentLoaded", function () { enableTasks(document); });
  document.addEventListener("htmx:load", function (e) { enableTasks(e.target); });

  // ---- in-place editing ------------------------------------------------------------------------
  document.addEventListener("htmx:beforeSwap", function (e) {
    var elt = e.detail.elt;
    if (e.detail.xhr.status === 422 && elt && elt.closest && elt.closest("[data-swap-invalid]")) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
})();
