// Muster's light/dark switch (issue 17). Loaded synchronously in <head>, before the body is parsed, so
// the saved choice is on <html data-theme> before the first paint (no flash of the other theme); a file
// because the CSP forbids inline scripts. "system" (the default) removes the attribute and app.css
// follows prefers-color-scheme.
(function () {
  "use strict";
  var KEY = "muster-theme";
  var root = document.documentElement;

  function saved() {
    try {
      var v = window.localStorage.getItem(KEY);
      return v === "light" || v === "dark" ? v : "system";
    } catch (e) {
      return "system";
    }
  }

  function apply(choice) {
    if (choice === "light" || choice === "dark") {
      root.setAttribute("data-theme", choice);
    } else {
      root.removeAttribute("data-theme");
    }
    var buttons = document.querySelectorAll("[data-theme-choice]");
    for (var i = 0; i < buttons.length; i++) {
      var pressed = buttons[i].getAttribute("data-theme-choice") === choice;
      buttons[i].setAttribute("aria-pressed", pressed ? "true" : "false");
    }
  }

  apply(saved());

  document.addEventListener("DOMContentLoaded", function () {
    var groups = document.querySelectorAll(".theme-switch");
    for (var i = 0; i < groups.length; i++) groups[i].hidden = false;
    apply(saved());
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-theme-choice]") : null;
    if (!button) return;
    var choice = button.getAttribute("data-theme-choice");
    try {
      if (choice === "system") window.localStorage.removeItem(KEY);
      else window.localStorage.setItem(KEY, choice);
    } catch (e) {
      // Storage refused (private mode): the choice holds for this page only.
    }
    apply(choice);
  });

  // Another tab changed it.
  window.addEventListener("storage", function (event) {
    if (event.key === KEY) apply(saved());
  });
})();
