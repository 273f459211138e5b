// The Settings page's Forge section: the API URL's placeholder follows the chosen kind
// (`#forge-kind` options carry `data-api-url`, the public service's API root, or an example).
(function () {
  "use strict";

  document.addEventListener("change", function (e) {
    var kind = e.target;
    if (!kind || kind.id !== "forge-kind") return;
    var url = document.getElementById("forge-api_url");
    var chosen = kind.options[kind.selectedIndex];
    if (url && chosen) url.placeholder = chosen.getAttribute("data-api-url") || "";
  });
})();
