// The memory browser's small enhancements; every page works without them.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // A forget job still queued or running: look again until it is done.
  const job = document.querySelector("[data-refresh]");
  if (job) {
    const seconds = Number(job.getAttribute("data-refresh")) || 2;
    setTimeout(() => window.location.reload(), seconds * 1000);
  }
  // The health report, live: reload its frame now, or every 30 s while "live" is on.
  const frame = document.getElementById("health-report");
  if (frame) {
    const reload = () => { frame.src = frame.src.replace(/([?&])t=\d+/, "") + "&t=" + Date.now(); };
    const button = document.getElementById("refresh-report");
    if (button) button.addEventListener("click", reload);
    const live = document.getElementById("live-report");
    setInterval(() => { if (!live || live.checked) reload(); }, 30000);
  }
});
