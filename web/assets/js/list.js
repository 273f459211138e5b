// The issue list: "select all on this page" ticks every row's box, and the batch bar counts the ticked.
(function () {
  "use strict";

  function boxes() {
    return document.querySelectorAll("#list-batch input[name=key]");
  }

  function count() {
    var out = document.getElementById("batch-count");
    if (!out) return;
    var n = 0;
    boxes().forEach(function (b) { if (b.checked) n += 1; });
    out.textContent = n === 1 ? "1 selected" : n + " selected";
    var all = document.getElementById("list-select-all");
    if (all) all.checked = n > 0 && n === boxes().length;
  }

  document.addEventListener("change", function (e) {
    var t = e.target;
    if (!t) return;
    if (t.id === "list-select-all") {
      boxes().forEach(function (b) { b.checked = t.checked; });
      count();
    } else if (t.name === "key" && t.closest && t.closest("#list-batch")) {
      count();
    }
  });
  document.addEventListener("DOMContentLoaded", count);
})();
