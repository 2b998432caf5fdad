// node tests/integration/wave-events.js SOCK N FIRST COUNT: N wave.set
// events over waves FIRST..FIRST+COUNT-1, over four keep-alive connections
// to the admin socket (56-status-page: 10,000 events over 100 waves).
const http = require("http");
const [sock, n, first, waves] = process.argv.slice(2).map((v, i) => i ? Number(v) : v);
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
let bad = 0;
function one(i) {
  return new Promise((res) => {
    const body = JSON.stringify({ gate_min_clean: (i % 7) + 1 });
    const r = http.request({ socketPath: sock, path: `/waves/${(i % waves) + first}/set`,
      method: "POST", agent, headers: { "Content-Type": "application/json",
      "Content-Length": Buffer.byteLength(body) } }, (a) => {
        a.resume(); a.on("end", () => { if (a.statusCode !== 200) bad++; res(); });
      });
    r.on("error", () => { bad++; res(); });
    r.end(body);
  });
}
(async () => {
  const t0 = Date.now();
  let i = 0;
  async function worker() { while (i < n) { await one(i++); } }
  await Promise.all([worker(), worker(), worker(), worker()]);
  console.log(`sent ${n} in ${Date.now() - t0} ms, ${bad} bad`);
  process.exit(bad ? 1 : 0);
})();
