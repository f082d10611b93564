// ScienceMemory session explorer: one session's provenance graph, drawn with Cytoscape.js.
// Reads only (a read token is enough): subgraph, chainExists, getChain, traceProvenance over
// POST /graphql, graphEvents over graphql-ws for live growth.
//
// Layout (computed here, O(n), so 5,000 nodes stay responsive; "Layered" re-draws the visible
// part with dagre instead): the research goal top-left, the
// main task chain along `next` to the right, a subagent scope either folded (one node; its
// children's products hang below it) or unfolded (a box holding its child steps); below each
// step its Code, then its Artifacts and Papers; Evidence below its Paper; the claims in a band
// under everything, each below the report it is stated in; uploads under the goal.
"use strict";

(function () {
  const COLUMN = 190;
  const ROW = 64;
  const GRAPHQL = new URL("../graphql", window.location.href).href;
  const COLOURS = {
    ResearchGoal: "#b71c1c", Task: "#6a1b9a", ToolCall: "#1565c0", Code: "#00838f",
    Artifact: "#2e7d32", Paper: "#ef6c00", Evidence: "#8d6e63", Claim: "#ad1457",
    SourceFile: "#546e7a",
  };
  const STEP_CHAINS = ["VIEW_PREV_TASK", "VIEW_NEXT_TASK", "VIEW_GOAL"];
  const CHAINS = {
    Task: STEP_CHAINS,
    ToolCall: STEP_CHAINS,
    Code: ["VIEW_INPUT", "VIEW_OUTPUT", "VIEW_PRODUCING_TASK"],
    Paper: ["VIEW_EXTRACTED_EVIDENCE", "VIEW_CITING_CLAIM", "VIEW_CITING_ARTIFACT", "VIEW_SEARCHING_TASK"],
    Evidence: ["VIEW_SOURCE_PAPER", "VIEW_CITING_CLAIM_FOR_EVIDENCE", "VIEW_CITING_ARTIFACT_FOR_EVIDENCE"],
    Claim: ["VIEW_CITING_EVIDENCE_FOR_CLAIM", "VIEW_CITING_SOURCE_FILE_FOR_CLAIM", "VIEW_CONTAINING_ARTIFACT"],
    Artifact: [
      "VIEW_CONTAINED_CLAIMS", "VIEW_CITING_CLAIM_FOR_ARTIFACT", "VIEW_PRODUCING_CODE",
      "VIEW_CITING_EVIDENCE_FOR_ARTIFACT", "VIEW_CITED_PAPER", "VIEW_RELATED_TASK",
    ],
  };
  const NODE_FIELDS = "id key label sessionId createdAt excerpt properties";
  const $ = (id) => document.getElementById(id);

  const state = {
    session: null, nodes: new Map(), edges: new Map(), unfolded: new Set(), foldAll: true,
    owner: new Map(), selected: null, hasPath: null, live: null, renderTimer: null,
  };
  let signalReady;
  const explorer = { state, ready: new Promise((resolve) => (signalReady = resolve)), renders: 0 };
  window.explorer = explorer;

  // --- GraphQL ------------------------------------------------------------------------------

  function token() {
    return $("token").value.trim();
  }

  async function gql(query, variables) {
    const headers = { "Content-Type": "application/json", Accept: "application/json" };
    if (token()) headers.Authorization = `Bearer ${token()}`;
    const response = await fetch(GRAPHQL, {
      method: "POST", headers, body: JSON.stringify({ query, variables }),
    });
    if (response.status === 401) throw new Error("the token was refused (401)");
    const body = await response.json();
    if (body.errors) throw new Error(body.errors.map((e) => e.message).join("; "));
    return body.data;
  }

  function failed(result) {
    return result.code ? `${result.code}: ${result.message}` : null;
  }

  // --- the model ----------------------------------------------------------------------------

  const edgeId = (e) => `${e.type}|${e.source}|${e.target}`;

  // GraphQL spells labels and edge types as enum values (TOOL_CALL, STATED_IN); the drawing
  // uses the graph's own names (ToolCall, stated_in).
  const LABELS = Object.fromEntries(
    Object.keys(COLOURS).map((label) => [label.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase(), label]),
  );

  function addNode(node) {
    state.nodes.set(node.id, { ...node, label: LABELS[node.label] || node.label });
  }

  function plainEdge(edge) {
    return { type: edge.type.toLowerCase(), source: edge.source, target: edge.target };
  }

  function addEdge(edge) {
    const plain = plainEdge(edge);
    state.edges.set(edgeId(plain), plain);
  }

  async function openSession(session) {
    status(`loading ${session}…`);
    const started = performance.now();
    const data = await gql(
      `query Explore($s: String!) { subgraph(sessionId: $s, first: 5000, fold: false) {
        __typename ... on Subgraph { total truncated nodes { ${NODE_FIELDS} }
          edges { type source target } } ... on Error { code message } } }`,
      { s: session },
    );
    const graph = data.subgraph;
    if (failed(graph)) throw new Error(failed(graph));
    state.session = session;
    state.nodes.clear();
    state.edges.clear();
    state.unfolded.clear();
    graph.nodes.forEach(addNode);
    graph.edges.forEach(addEdge);
    if (graph.truncated) {
      // The newest 5,000 nodes came; the goal and the uploads are among the oldest: fetch them.
      const roots = await gql(
        `query Roots($s: String!) { nodesByType(labels: [RESEARCH_GOAL, SOURCE_FILE], sessionId: $s, first: 500) {
          ... on NodeList { nodes { ${NODE_FIELDS} } } } }`,
        { s: session },
      );
      (roots.nodesByType.nodes || []).forEach(addNode);
    }
    render(true);
    explorer.firstRenderMs = performance.now() - started;
    const cut = graph.truncated ? ` (first 5000 of ${graph.total})` : "";
    status(`${session}: ${graph.nodes.length} nodes, ${graph.edges.length} edges${cut}`);
    history.replaceState(null, "", `?session=${encodeURIComponent(session)}`);
    subscribe(session);
  }

  // --- layout -------------------------------------------------------------------------------

  function adjacency() {
    const out = new Map();
    for (const e of state.edges.values()) {
      const key = `${e.type}|${e.source}`;
      if (!out.has(key)) out.set(key, []);
      out.get(key).push(e.target);
    }
    return (type, id) => out.get(`${type}|${id}`) || [];
  }

  const byTime = (a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0);

  function chainFrom(first, members, outOf) {
    const order = [];
    const seen = new Set();
    let current = first;
    while (current && members.has(current) && !seen.has(current)) {
      seen.add(current);
      order.push(current);
      current = outOf("next", current).find((id) => members.has(id) && !seen.has(id));
    }
    const rest = [...members].filter((id) => !seen.has(id)).map((id) => state.nodes.get(id));
    return order.concat(rest.sort(byTime).map((n) => n.id));
  }

  function isFolded(scopeId) {
    return state.foldAll ? !state.unfolded.has(scopeId) : state.unfolded.has(scopeId);
  }

  function layout() {
    const outOf = adjacency();
    const nodes = [...state.nodes.values()];
    const goal = nodes.find((n) => n.label === "ResearchGoal");
    const scopes = new Map(nodes.filter((n) => n.label === "Task").map((n) => [n.key, n]));
    const children = new Map([...scopes.values()].map((s) => [s.id, new Set()]));
    const main = new Set();
    for (const n of nodes) {
      if (n.label !== "Task" && n.label !== "ToolCall") continue;
      const parent = scopes.get(n.properties.parent_subtask_id);
      if (n.label === "ToolCall" && parent) children.get(parent.id).add(n.id);
      else main.add(n.id);
    }
    // Grid first (column, row); the columns are wrapped into lines at the end.
    const cell = new Map();
    const parentOf = new Map(); // child step -> unfolded scope (compound box)
    const owner = new Map(); // hidden node -> the folded scope standing for it
    const height = new Map(); // column -> next free row
    const place = (id, column, row) => {
      cell.set(id, [column, row]);
      height.set(column, Math.max(height.get(column) || 0, row + 1));
    };
    const below = (id, column, gap = 0) => place(id, column, Math.max(height.get(column) || 0, 1) + gap);

    if (goal) place(goal.id, 0, 0);
    const head = goal ? outOf("next", goal.id).find((id) => main.has(id)) : null;
    const steps = [];
    const blocks = [[0, 1]]; // [first column, width]: a line never breaks inside a block
    let column = 1;
    for (const id of chainFrom(head, main, outOf)) {
      const kids = children.get(id);
      if (!kids || kids.size === 0) {
        place(id, column, 0);
        steps.push([id, column]);
        blocks.push([column++, 1]);
        continue;
      }
      const first = outOf("contains", id).find((c) => kids.has(c));
      const order = chainFrom(first, kids, outOf);
      if (isFolded(id)) {
        place(id, column, 0);
        order.forEach((c) => owner.set(c, id));
        steps.push([id, column]);
        order.forEach((c) => steps.push([c, column]));
        blocks.push([column++, 1]);
      } else {
        blocks.push([column, order.length]);
        order.forEach((c) => {
          place(c, column, 0);
          parentOf.set(c, id);
          steps.push([c, column++]);
        });
      }
    }
    // Products below their step (or below the folded scope standing for it).
    const columnOf = new Map();
    for (const [step, col] of steps) {
      const codes = outOf("produces", step).filter((id) => state.nodes.get(id)?.label === "Code");
      const made = codes.flatMap((c) => outOf("produces", c));
      const found = outOf("produces", step).filter((id) => state.nodes.get(id)?.label === "Paper");
      for (const id of [...codes, ...made, ...found]) {
        if (cell.has(id) || owner.has(id)) continue;
        below(id, col);
        columnOf.set(id, col);
      }
    }
    // Uploads under the goal; evidence under its source; claims under their report (else
    // under what they cite), after a gap: the citation chain reads upwards from there.
    nodes.filter((n) => n.label === "SourceFile").sort(byTime).forEach((n) => {
      below(n.id, 0);
      columnOf.set(n.id, 0);
    });
    for (const n of nodes.filter((m) => m.label === "Paper" || m.label === "SourceFile")) {
      for (const id of outOf("extracts", n.id)) {
        if (cell.has(id) || !columnOf.has(n.id)) continue;
        below(id, columnOf.get(n.id));
        columnOf.set(id, columnOf.get(n.id));
      }
    }
    const supporters = new Map();
    for (const e of state.edges.values()) {
      if (e.type !== "supports") continue;
      if (!supporters.has(e.target)) supporters.set(e.target, []);
      supporters.get(e.target).push(e.source);
    }
    const stacked = new Map(); // column -> [first claim row, claims so far]
    const shift = new Map(); // claim -> x offset: claims zig-zag two abreast at half a row
    for (const claim of nodes.filter((n) => n.label === "Claim").sort(byTime)) {
      const anchors = [...outOf("stated_in", claim.id), ...(supporters.get(claim.id) || [])];
      const anchor = anchors.find((id) => columnOf.has(id));
      const col = anchor !== undefined ? columnOf.get(anchor) : column;
      if (!stacked.has(col)) stacked.set(col, [Math.max(height.get(col) || 0, 1) + 1, 0]);
      const [top, count] = stacked.get(col);
      place(claim.id, col, top + Math.floor(count / 2) * 0.6);
      shift.set(claim.id, count % 2 === 0 ? -48 : 48);
      stacked.set(col, [top, count + 1]);
    }
    // Whatever is left (a product whose step is missing, evidence of a missing paper…).
    const leftovers = nodes.filter((n) => !cell.has(n.id) && !parentOf.has(n.id) && !main.has(n.id) && n.label !== "Task");
    leftovers.sort(byTime).forEach((n, i) => {
      below(n.id, column + (i % 6));
    });
    if (leftovers.length > 0) blocks.push([column, 6]);
    // Wrap the columns into lines about as wide as the page shows well.
    const total = blocks.reduce((sum, [, width]) => sum + width, 0);
    const width = Math.max(12, Math.ceil(Math.sqrt(total * 10)));
    const lineOf = new Map(); // column -> [line, x slot]
    let line = 0;
    let used = 0;
    for (const [firstColumn, span] of blocks) {
      if (used > 0 && used + span > width) {
        line += 1;
        used = 0;
      }
      for (let c = firstColumn; c < firstColumn + span; c++) lineOf.set(c, [line, used++]);
    }
    const lineRows = [];
    for (const [c, [l]] of lineOf) lineRows[l] = Math.max(lineRows[l] || 1, height.get(c) || 1);
    const lineTop = [0];
    for (let l = 1; l <= line; l++) lineTop[l] = lineTop[l - 1] + ((lineRows[l - 1] || 1) + 2) * ROW;
    const position = new Map();
    for (const [id, [c, row]] of cell) {
      const [l, slot] = lineOf.get(c) || [line, c];
      position.set(id, { x: slot * COLUMN + (shift.get(id) || 0), y: lineTop[l] + row * ROW });
    }
    state.owner = owner;
    return { position, parentOf, owner };
  }

  // --- drawing ------------------------------------------------------------------------------

  const cy = cytoscape({
    container: $("graph"),
    minZoom: 0.02,
    maxZoom: 3,
    wheelSensitivity: 0.3,
    textureOnViewport: true,
    hideEdgesOnViewport: true,
    pixelRatio: 1,
    style: [
      { selector: "node", style: {
        "background-color": "data(colour)", label: "data(caption)", "font-size": 10,
        color: "#222", "text-valign": "bottom", "text-margin-y": 3, width: 22, height: 22,
        "text-wrap": "ellipsis", "text-max-width": 170, "min-zoomed-font-size": 7,
      } },
      { selector: 'node[label = "ResearchGoal"]', style: { shape: "star", width: 48, height: 48, "font-size": 13 } },
      { selector: 'node[label = "Task"]', style: { shape: "round-rectangle", width: 34 } },
      { selector: 'node[label = "Claim"]', style: { shape: "diamond" } },
      { selector: 'node[label = "Paper"]', style: { shape: "round-tag" } },
      { selector: 'node[label = "Artifact"]', style: { shape: "round-rectangle" } },
      { selector: "node.folded", style: { "border-width": 3, "border-color": "#6a1b9a", "border-style": "double" } },
      { selector: ":parent", style: {
        "background-color": "#f3e5f5", "background-opacity": 0.6, "border-color": "#6a1b9a",
        "border-width": 1, shape: "round-rectangle", "text-valign": "top", padding: 14,
      } },
      { selector: "edge", style: {
        width: 1.2, "line-color": "#b0bec5", "target-arrow-color": "#b0bec5",
        "target-arrow-shape": "triangle", "curve-style": "bezier", "arrow-scale": 0.7,
      } },
      { selector: 'edge[type = "next"]', style: { width: 3, "line-color": "#1565c0", "target-arrow-color": "#1565c0" } },
      { selector: 'edge[type = "contains"]', style: { "line-color": "#6a1b9a", "line-style": "dashed" } },
      { selector: 'edge[type = "supersedes"]', style: { "line-style": "dashed" } },
      { selector: 'edge[type = "input"]', style: { "line-style": "dotted", "line-color": "#00838f" } },
      { selector: 'edge[type = "supports"], edge[type = "stated_in"], edge[type = "extracts"]', style: { "line-color": "#ce93d8", "target-arrow-color": "#ce93d8" } },
      { selector: ".dim", style: { opacity: 0.12 } },
      { selector: "node.hl", style: { "border-width": 6, "border-color": "#ffab00", width: 38, height: 38, opacity: 1, "z-index": 10, "font-size": 13, "font-weight": "bold" } },
      { selector: "edge.hl", style: { width: 5, "line-color": "#ffab00", "target-arrow-color": "#ffab00", opacity: 1, "z-index": 10 } },
      { selector: "edge.witness", style: { "line-style": "dashed", "curve-style": "unbundled-bezier" } },
      { selector: "node:selected", style: { "border-width": 4, "border-color": "#000" } },
    ],
  });
  explorer.cy = cy;

  function caption(node) {
    const text = node.excerpt.length > 34 ? `${node.excerpt.slice(0, 33)}…` : node.excerpt;
    return `${node.label}: ${text}`;
  }

  function render(fit) {
    const started = performance.now();
    const { position, parentOf, owner } = layout();
    const laidOut = performance.now();
    const boxes = new Set(parentOf.values());
    const elements = [];
    const seen = new Set();
    const hiddenSteps = new Map();
    for (const [id, scope] of owner) {
      if (state.nodes.get(id)?.label === "ToolCall") hiddenSteps.set(scope, (hiddenSteps.get(scope) || 0) + 1);
    }
    for (const node of state.nodes.values()) {
      const box = boxes.has(node.id);
      if (owner.has(node.id) || (!position.has(node.id) && !box)) continue;
      let label = caption(node);
      const folded = hiddenSteps.has(node.id);
      if (folded) label += ` [+${hiddenSteps.get(node.id)} steps]`;
      const data = { id: node.id, label: node.label, caption: label, colour: COLOURS[node.label] };
      if (parentOf.has(node.id)) data.parent = parentOf.get(node.id);
      elements.push({
        group: "nodes", data, classes: folded ? "folded" : "",
        position: box ? undefined : position.get(node.id),
      });
      seen.add(node.id);
    }
    for (const edge of state.edges.values()) {
      const source = owner.get(edge.source) || edge.source;
      const target = owner.get(edge.target) || edge.target;
      if (source === target || !seen.has(source) || !seen.has(target)) continue;
      if (edge.type === "contains" && parentOf.get(target) === source) continue;
      const id = `${edge.type}|${source}|${target}`;
      elements.push({ group: "edges", data: { id, type: edge.type, source, target } });
    }
    const wanted = new Map(elements.map((e) => [e.data.id, e]));
    // Only what changed is touched: a live event or a fold moves a few nodes, not all 5,000.
    cy.batch(() => {
      cy.elements().forEach((el) => {
        if (!wanted.has(el.id())) el.remove();
      });
      cy.add([...wanted.values()].filter((el) => cy.getElementById(el.data.id).empty()));
      for (const el of wanted.values()) {
        if (el.group !== "nodes") continue;
        const current = cy.getElementById(el.data.id);
        if (current.data("caption") !== el.data.caption) current.data("caption", el.data.caption);
        if ((current.data("parent") ?? null) !== (el.data.parent ?? null)) {
          current.move({ parent: el.data.parent ?? null });
        }
        if (current.hasClass("folded") !== (el.classes === "folded")) current.toggleClass("folded");
        const at = current.position();
        if (el.position && (at.x !== el.position.x || at.y !== el.position.y)) current.position(el.position);
      }
    });
    explorer.renders += 1;
    explorer.timings = { layoutMs: laidOut - started, drawMs: performance.now() - laidOut };
    if (fit) cy.fit(undefined, 30);
    legend();
    if (state.selected && cy.getElementById(state.selected).nonempty()) {
      cy.getElementById(state.selected).select();
    }
  }

  function scheduleRender() {
    clearTimeout(state.renderTimer);
    state.renderTimer = setTimeout(() => render(false), 300);
  }

  function legend() {
    const counts = {};
    for (const n of state.nodes.values()) counts[n.label] = (counts[n.label] || 0) + 1;
    $("legend").replaceChildren(
      ...Object.entries(COLOURS).map(([label, colour]) => {
        const item = document.createElement("span");
        item.innerHTML = `<i style="background:${colour}"></i>${label} ${counts[label] || 0}`;
        return item;
      }),
    );
  }

  // --- highlight ----------------------------------------------------------------------------

  function shown(id) {
    return state.owner.get(id) || id;
  }

  function clearHighlight() {
    cy.elements().removeClass("dim hl");
    cy.remove("edge.witness");
  }

  function highlight(nodeIds, edges) {
    clearHighlight();
    cy.batch(() => {
      cy.elements().addClass("dim");
      for (const id of nodeIds) cy.getElementById(shown(id)).removeClass("dim").addClass("hl");
      for (const e of edges) {
        const [source, target] = [shown(e.source), shown(e.target)];
        let edge = cy.getElementById(`${e.type}|${source}|${target}`);
        if (edge.empty()) edge = cy.getElementById(`${e.type}|${target}|${source}`);
        if (edge.empty() && source !== target && cy.getElementById(source).nonempty() && cy.getElementById(target).nonempty()) {
          edge = cy.add({ group: "edges", classes: "witness", data: { id: `witness|${source}|${target}`, type: e.type, source, target } });
        }
        edge.removeClass("dim").addClass("hl");
      }
    });
    const lit = cy.elements(".hl");
    if (lit.nonempty()) cy.animate({ fit: { eles: lit, padding: 60 }, duration: 250 });
  }

  // --- the side panel -----------------------------------------------------------------------

  function element(tag, text, attributes = {}) {
    const el = document.createElement(tag);
    if (text !== undefined) el.textContent = text;
    Object.entries(attributes).forEach(([k, v]) => el.setAttribute(k, v));
    return el;
  }

  function show(value) {
    const text = typeof value === "string" ? value : JSON.stringify(value);
    return text.length > 300 ? `${text.slice(0, 299)}…` : text;
  }

  async function select(id) {
    const node = state.nodes.get(id);
    if (!node) return;
    state.selected = id;
    const panel = $("panel");
    panel.replaceChildren();
    panel.append(element("h2", node.label), element("p", node.excerpt, { class: "excerpt" }));
    const table = element("table");
    const rows = { id: node.id, key: node.key, session: node.sessionId, createdAt: node.createdAt, ...node.properties };
    for (const [name, value] of Object.entries(rows)) {
      const tr = element("tr");
      tr.append(element("th", name), element("td", show(value)));
      table.append(tr);
    }
    panel.append(table);
    const actions = element("div", undefined, { class: "actions" });
    panel.append(element("h3", "Chains"), actions);
    const kinds = CHAINS[node.label] || [];
    const buttons = kinds.map((kind) => {
      const button = element("button", kind.replace(/^VIEW_/, "").toLowerCase().replaceAll("_", " "), { "data-kind": kind, disabled: "" });
      button.addEventListener("click", () => runChain(node, kind));
      actions.append(button);
      return button;
    });
    if (kinds.length === 0) actions.append(element("p", "No chain buttons for this label.", { class: "hint" }));
    if (node.label !== "ResearchGoal") {
      const trace = element("button", "trace to goal", { class: "trace", "data-kind": "TRACE" });
      trace.addEventListener("click", () => runTrace(node));
      panel.append(element("h3", "Provenance"), trace);
    }
    panel.append(element("div", undefined, { id: "result" }));
    panel.dataset.ready = id;
    if (kinds.length > 0) {
      const data = await gql(
        `query Exists($id: ID!, $kinds: [ChainKind!]!, $s: String) {
          chainExists(nodeId: $id, kinds: $kinds, sessionId: $s) { __typename
            ... on ChainAvailability { entries { kind exists } } ... on Error { code message } } }`,
        { id, kinds, s: state.session },
      );
      if (state.selected !== id) return;
      const exists = new Map((data.chainExists.entries || []).map((e) => [e.kind, e.exists]));
      buttons.forEach((b) => {
        if (exists.get(b.dataset.kind)) b.removeAttribute("disabled");
        else b.title = "this chain is empty for this node";
      });
    }
    panel.dataset.checked = id;
  }

  async function runChain(node, kind) {
    const data = await gql(
      `query Chain($id: ID!, $kind: ChainKind!, $s: String) {
        getChain(nodeId: $id, kind: $kind, sessionId: $s) { __typename
          ... on Chain { nodes { id } edges { type source target } } ... on Error { code message } } }`,
      { id: node.id, kind, s: state.session },
    );
    const chain = data.getChain;
    const result = $("result");
    if (failed(chain)) return void (result.textContent = failed(chain));
    highlight(chain.nodes.map((n) => n.id), chain.edges.map(plainEdge));
    result.replaceChildren(element("p", `${kind}: ${chain.nodes.length} nodes, ${chain.edges.length} edges`, { class: "verdict" }));
    explorer.lastChain = chain;
  }

  async function traceHasPath() {
    if (state.hasPath === null) {
      const data = await gql('{ __type(name: "ProvenanceTrace") { fields { name } } }');
      state.hasPath = (data.__type?.fields || []).some((f) => f.name === "path");
    }
    return state.hasPath;
  }

  async function runTrace(node) {
    const withPath = await traceHasPath();
    const steps = withPath
      ? "path { node { id label excerpt } viaEdge reachedFrom }"
      : "chain { hop node { id label excerpt } viaEdge isTerminal }";
    const data = await gql(
      `query Trace($id: ID!, $s: String) { traceProvenance(nodeId: $id, sessionId: $s) { __typename
        ... on ProvenanceTrace { broken truncated reason ${steps} } ... on Error { code message } } }`,
      { id: node.id, s: state.session },
    );
    const trace = data.traceProvenance;
    const result = $("result");
    if (failed(trace)) return void (result.textContent = failed(trace));
    const witness = withPath ? trace.path : trace.chain;
    const edges = withPath
      ? trace.path.filter((s) => s.reachedFrom).map((s) => ({ type: s.viaEdge.toLowerCase(), source: s.node.id, target: s.reachedFrom }))
      : [];
    highlight([node.id, ...witness.map((s) => s.node.id)], edges);
    const verdict = trace.broken ? "broken" : trace.truncated ? "truncated" : "reached the goal";
    const list = element("ol", undefined, { class: "path" });
    witness.forEach((s) => list.append(element("li", `${s.viaEdge.toLowerCase()} ← ${LABELS[s.node.label] || s.node.label}: ${s.node.excerpt}`)));
    result.replaceChildren(
      element("p", `trace: ${verdict} — ${trace.reason || ""}`, { class: `verdict ${trace.broken ? "bad" : trace.truncated ? "warn" : "good"}` }),
      element("p", withPath ? "witness path (start → goal):" : "explored (no witness path in this gateway's schema):", { class: "hint" }),
      list,
    );
    explorer.lastTrace = { ...trace, withPath };
  }

  // --- live growth --------------------------------------------------------------------------

  function subscribe(session) {
    if (state.live) state.live.dispose();
    const url = GRAPHQL.replace(/^http/, "ws");
    const client = graphqlWs.createClient({
      url,
      connectionParams: () => (token() ? { Authorization: `Bearer ${token()}` } : {}),
      retryAttempts: 5,
      on: {
        connected: () => setLive(true),
        closed: () => setLive(false),
      },
    });
    state.live = client;
    client.subscribe(
      {
        query: `subscription Grow($s: String!) { graphEvents(sessionId: $s) { kind removed
          node { ${NODE_FIELDS} } edge { type source target } } }`,
        variables: { s: session },
      },
      {
        next: ({ data }) => {
          const event = data && data.graphEvents;
          if (!event || state.session !== session) return;
          if (event.node) {
            if (event.removed) state.nodes.delete(event.node.id);
            else addNode(event.node);
          }
          if (event.edge) {
            if (event.removed) state.edges.delete(edgeId(plainEdge(event.edge)));
            else addEdge(event.edge);
          }
          explorer.liveEvents = (explorer.liveEvents || 0) + 1;
          scheduleRender();
        },
        error: (error) => status(`live updates stopped: ${error.message || error}`),
        complete: () => setLive(false),
      },
    );
  }

  function setLive(on) {
    $("live").textContent = on ? "live: on" : "live: off";
    $("live").className = on ? "live on" : "live off";
    explorer.live = on;
  }

  // --- wiring -------------------------------------------------------------------------------

  function status(text) {
    $("status").textContent = text;
  }

  async function loadSessions() {
    const data = await gql(
      `{ nodesByType(labels: [RESEARCH_GOAL], first: 200) { ... on NodeList { nodes { sessionId excerpt } } } }`,
    );
    const goals = (data.nodesByType && data.nodesByType.nodes) || [];
    $("sessions").replaceChildren(...goals.map((g) => element("option", g.excerpt, { value: g.sessionId })));
    return goals;
  }

  async function guarded(action) {
    try {
      await action();
    } catch (error) {
      status(String(error.message || error));
    }
  }

  cy.on("tap", "node", (event) => guarded(() => select(event.target.id())));
  cy.on("dbltap", 'node[label = "Task"]', (event) => {
    const id = event.target.id();
    if (state.unfolded.has(id)) state.unfolded.delete(id);
    else state.unfolded.add(id);
    render(false);
  });
  $("open").addEventListener("click", () => guarded(() => openSession($("session").value.trim())));
  $("session").addEventListener("keydown", (e) => e.key === "Enter" && $("open").click());
  $("fit").addEventListener("click", () => cy.fit(undefined, 30));
  // dagre's layered layout over what is drawn; opening the session again restores the chain view.
  $("layered").addEventListener("click", () =>
    cy.layout({ name: "dagre", rankDir: "LR", nodeSep: 12, rankSep: 70, animate: false }).run(),
  );
  $("clear").addEventListener("click", clearHighlight);
  $("fold").addEventListener("click", () => {
    state.foldAll = !state.foldAll;
    state.unfolded.clear();
    $("fold").textContent = state.foldAll ? "Unfold scopes" : "Fold scopes";
    render(false);
  });
  $("token").value = sessionStorage.getItem("science-memory-token") || "";
  $("token").addEventListener("change", () => {
    sessionStorage.setItem("science-memory-token", token());
    guarded(loadSessions);
  });

  explorer.open = (session) => openSession(session);
  explorer.select = (id) => select(id);
  explorer.chain = (id, kind) => runChain(state.nodes.get(id), kind);
  explorer.trace = (id) => runTrace(state.nodes.get(id));
  explorer.toggleFold = () => $("fold").click();

  guarded(async () => {
    const wanted = new URLSearchParams(window.location.search).get("session");
    // Without a stored token the session list waits for one (an open gateway answers anyway
    // once a session is opened, or when the token field changes).
    const goals = token() ? await loadSessions().catch(() => []) : [];
    if (wanted) {
      $("session").value = wanted;
      await openSession(wanted);
    } else if (goals.length > 0) {
      $("session").value = goals[0].sessionId;
    }
  }).finally(() => signalReady());
})();
