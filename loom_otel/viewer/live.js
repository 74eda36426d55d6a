// Parts of calls in flight (the live view's SSE, mounted at /live): untrusted model output, shown with
// textContent only, never as markup.
(function () {
  "use strict";
  var section = document.getElementById("live");
  if (!section || !window.fetch || !window.TextDecoder) { return; }
  var target = document.getElementById("live-parts");
  var steps = {};
  var url = "/live/executions/" + encodeURIComponent(section.dataset.execution) + "/reasoning";
  if (section.dataset.tenant) { url += "?tenant=" + encodeURIComponent(section.dataset.tenant); }
  function pre(step, block) {
    var key = step + "/" + block;
    if (!steps[key]) {
      var label = document.createElement("div");
      label.className = "label";
      label.textContent = "step " + step + " · block " + block + " (streaming)";
      var text = document.createElement("pre");
      text.className = "untrusted";
      target.appendChild(label);
      target.appendChild(text);
      steps[key] = text;
    }
    return steps[key];
  }
  function handle(event, data) {
    if (event === "reasoning") { pre(data.step, data.block).textContent += data.text; }
    else if (event === "reasoning-partial" && data.source === "live") {
      data.blocks.forEach(function (b) { pre(data.step, b.block).textContent = b.text; });
    } else if (event === "done") {
      Object.keys(steps).forEach(function (key) {
        if (key.indexOf(data.step + "/") === 0) { steps[key].previousSibling.textContent += " · ended: reload for the record"; }
      });
    }
  }
  fetch(url, { credentials: "same-origin", headers: { Accept: "text/event-stream" } }).then(function (response) {
    if (!response.ok || !response.body) { return; }
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    function pump() {
      return reader.read().then(function (chunk) {
        if (chunk.done) { return; }
        buffer += decoder.decode(chunk.value, { stream: true });
        var frames = buffer.split("\n\n");
        buffer = frames.pop();
        frames.forEach(function (frame) {
          var event = "message", data = "";
          frame.split("\n").forEach(function (line) {
            if (line.indexOf("event: ") === 0) { event = line.slice(7); }
            else if (line.indexOf("data: ") === 0) { data += line.slice(6); }
          });
          if (data) { try { handle(event, JSON.parse(data)); } catch (e) { /* a malformed frame is skipped */ } }
        });
        return pump();
      });
    }
    return pump();
  }).catch(function () { /* the record is on the page; live is best effort */ });
})();
