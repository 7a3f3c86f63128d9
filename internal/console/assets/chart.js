// The throughput chart: polls /api/throughput every second and draws the
// message rates in and out of the last two minutes.
(function () {
  var canvas = document.getElementById("chart");
  if (!canvas) return;
  var ctx = canvas.getContext("2d"), points = [], last = null, keep = 120;
  function draw() {
    var w = canvas.width, h = canvas.height, top = 1;
    points.forEach(function (p) { top = Math.max(top, p.in, p.out); });
    ctx.clearRect(0, 0, w, h);
    ctx.fillStyle = "#666";
    ctx.fillText(top.toFixed(1) + "/s", 4, 12);
    [["in", "#2a7"], ["out", "#27c"]].forEach(function (s) {
      ctx.strokeStyle = s[1];
      ctx.beginPath();
      points.forEach(function (p, i) {
        var x = w - (points.length - 1 - i) * (w / keep), y = h - (p[s[0]] / top) * (h - 16);
        if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
      });
      ctx.stroke();
    });
  }
  function poll() {
    fetch("/api/throughput", { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (t) {
      if (last && t.at > last.at) {
        var s = (t.at - last.at) / 1000;
        points.push({ in: (t.messagesIn - last.messagesIn) / s, out: (t.messagesOut - last.messagesOut) / s });
        if (points.length > keep) points.shift();
        var p = points[points.length - 1];
        document.getElementById("now").textContent = "now: " + p.in.toFixed(1) + " in/s, " + p.out.toFixed(1) + " out/s";
        draw();
      }
      last = t;
    }).catch(function () {});
  }
  poll();
  setInterval(poll, 1000);
})();
