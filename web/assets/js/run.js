// Runs: a run's elapsed clock ticks (on the run page and in the thread), the run page's live
// socket resumes from the page's last seq, and its log follows the tail while the reader is at the bottom.
(function () {
  "use strict";

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

  document.addEventListener("DOMContentLoaded", function () { tickElapsed(); followTail(); });
})();
