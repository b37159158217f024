// The demo page: reads the product's commands over /rpc and refreshes on /events `change`.
// No inline script and no innerHTML with data: every value goes through textContent.
const CLIENT = { "content-type": "application/json", "x-local-client": "demo-page" };

async function rpc(name, args = {}) {
  const res = await fetch(`/rpc/${name}`, { method: "POST", headers: CLIENT, body: JSON.stringify(args) });
  const body = await res.json();
  if (!body.ok) throw new Error(`${name}: ${body.error.message}`);
  return body.data;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child);
  return node;
}

function bar(name, window) {
  const pct = Math.max(0, Math.min(100, window.used_percentage));
  const fill = el("span", { class: pct >= 100 ? "full" : pct >= 80 ? "high" : "", style: `width: ${pct}%` });
  const reset = window.resets_at ? ` · resets ${new Date(window.resets_at * 1000).toLocaleTimeString()}` : "";
  return el("div", { class: "window", "data-window": name, "data-used": String(pct) },
    el("div", { class: "label" }, el("span", { text: name }), el("span", { text: `${pct}%${reset}` })),
    el("div", { class: "bar" }, fill));
}

// A window's last day as a small line chart (SVG built node by node, never from markup).
const SVG = "http://www.w3.org/2000/svg";
function chart(name, points) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "history");
  svg.setAttribute("data-window", name);
  svg.setAttribute("data-points", String(points.length));
  svg.setAttribute("viewBox", "0 0 100 24");
  svg.setAttribute("preserveAspectRatio", "none");
  if (points.length > 1) {
    const t0 = points[0][0];
    const span = Math.max(1, points[points.length - 1][0] - t0);
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("points", points.map(([t, used]) =>
      `${(((t - t0) / span) * 100).toFixed(2)},${(24 - (Math.max(0, Math.min(100, used)) / 100) * 24).toFixed(2)}`).join(" "));
    svg.append(line);
  }
  return svg;
}

function forecastText(forecast) {
  if (!forecast) return "no forecast yet";
  if (forecast.full_at === null) return "not full before it resets";
  return `full ~${new Date(forecast.full_at * 1000).toLocaleTimeString()}`;
}

// An empty section always says why: the command's own `problem`, a failed request, or no rows.
function note(id, text) {
  const node = document.getElementById(id);
  node.textContent = text || "";
  node.hidden = !text;
}

function renderAccounts(data) {
  const profiles = data.profiles;
  note("accounts-note", data.problem || (profiles.length ? "" : "no profiles"));
  const root = document.getElementById("accounts");
  root.replaceChildren(...profiles.map((p) => {
    const card = el("article", { class: "card", "data-label": p.label },
      el("h3", {}, el("span", { text: p.label }), el("span", { class: "login", text: p.login.status })));
    if (p.usage) {
      for (const [name, w] of Object.entries(p.usage.rate_limits)) {
        card.append(bar(name, w));
        const history = (p.history || {})[name] || [];
        const forecast = (p.forecast || {})[name] || null;
        card.append(el("div", { class: "trend", "data-window": name },
          chart(name, history), el("span", { class: "forecast", text: forecastText(forecast) })));
      }
      card.append(el("div", { class: "age", text: `reading ${p.usage.age_seconds}s old` }));
    } else {
      card.append(el("div", { class: "age", text: "no reading yet" }));
    }
    return card;
  }));
}

function renderPrs(data) {
  document.getElementById("repo").textContent = `· ${data.repo}`;
  note("prs-note", data.problem ? `No pull requests shown: ${data.problem}`
    : (data.prs.length ? "" : `no open pull requests in ${data.repo}`));
  const body = document.querySelector("#prs tbody");
  body.replaceChildren(...data.prs.map((pr) => el("tr", { "data-number": String(pr.number) },
    el("td", { text: `#${pr.number}` }),
    el("td", { text: pr.title }),
    el("td", {}, el("code", { text: pr.headSha.slice(0, 7) })),
    el("td", { text: `${pr.checks.passed}/${pr.checks.total}` }),
    el("td", { class: pr.ready ? "ready-yes" : "ready-no", text: pr.ready ? "ready" : "blocked" }),
    el("td", { text: pr.blockers.map((b) => `${b.reason}: ${b.detail}`).join("; ") }))));
}

let pending = null;
async function refresh() {
  if (pending) return pending;
  pending = (async () => {
    try {
      // Each section on its own: one failing command never blanks the other.
      const [accounts, prs] = await Promise.allSettled([rpc("accounts"), rpc("open_prs")]);
      if (accounts.status === "fulfilled") renderAccounts(accounts.value);
      else note("accounts-note", `could not read the accounts: ${accounts.reason.message}`);
      if (prs.status === "fulfilled") renderPrs(prs.value);
      else note("prs-note", `could not read the pull requests: ${prs.reason.message}`);
      const stamp = new Date().toLocaleTimeString();
      document.getElementById("updated").textContent = `updated ${stamp}`;
      document.body.dataset.renders = String(Number(document.body.dataset.renders || 0) + 1);
    } finally {
      pending = null;
    }
  })();
  return pending;
}

function connect() {
  const status = document.getElementById("status");
  const events = new EventSource("/events");
  events.addEventListener("ready", () => { status.dataset.state = "live"; status.textContent = "live"; refresh(); });
  events.addEventListener("change", () => refresh());
  events.onerror = () => { status.dataset.state = "offline"; status.textContent = "reconnecting…"; };
}

connect();
refresh();
